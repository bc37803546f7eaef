import CCompression

/// CRC-32 (a pack index's per-object check) and Adler-32 (the trailer of every zlib stream), from
/// libdeflate: it uses the CPU's carry-less multiply and vector units, 3.5x (CRC-32) and 6.6x
/// (Adler-32) zlib's speed here. For a folder of photos these two sums were a fifth of packing's
/// time with zlib's. Same values as zlib's `crc32` and `adler32` with the same seeds.
package enum Checksum {
    /// `seed`: the CRC-32 of the bytes before (0 to start).
    package static func crc32(_ seed: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return seed }
        return libdeflate_crc32(seed, base, bytes.count)
    }

    /// `seed`: the Adler-32 of the bytes before (1 to start).
    package static func adler32(_ seed: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return seed }
        return libdeflate_adler32(seed, base, bytes.count)
    }
}

/// A zlib stream (RFC 1950) of deflate's stored blocks (RFC 1951 3.2.4): bytes kept as they are,
/// framed. What zlib writes at level 0, written here instead: zlib copies every byte through its
/// window and sums it with its own, slower Adler-32. git and libgit2 read it as any zlib stream.
package enum StoredZlib {
    /// CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (no dictionary, fastest; a multiple of 31).
    package static let header: [UInt8] = [0x78, 0x01]
    /// A stored block holds at most this many bytes.
    package static let blockLimit = 65_535

    /// Appends blocks holding `bytes`, none of them final (`appendEnd` ends the stream).
    package static func appendBlocks(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var at = 0
        while at < bytes.count {
            let n = min(blockLimit, bytes.count - at)
            appendBlockHeader(length: n, final: false, to: &out)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[at..<(at + n)]))
            at += n
        }
    }

    /// Ends the stream: an empty final block, then the Adler-32 of every byte (big-endian).
    package static func appendEnd(adler: UInt32, to out: inout [UInt8]) {
        appendBlockHeader(length: 0, final: true, to: &out)
        withUnsafeBytes(of: adler.bigEndian) { out.append(contentsOf: $0) }
    }

    private static func appendBlockHeader(length: Int, final: Bool, to out: inout [UInt8]) {
        let n = UInt16(length)
        out.append(final ? 1 : 0)  // BFINAL, BTYPE 00 (stored), then padding to the byte
        out.append(contentsOf: [UInt8(n & 0xff), UInt8(n >> 8), UInt8(~n & 0xff), UInt8(~n >> 8)])
    }
}
