import CCompression
@testable import ObjectStorage
import Testing

/// The zlib streams of stored blocks a pack batch writes for bytes that do not compress, and the
/// checksums it takes from libdeflate: zlib itself must read the one and agree on the others.
@Suite struct StoredZlibTests {
    static let sizes = [0, 1, 65_534, 65_535, 65_536, 131_070, 131_071, 200_000]

    func random(_ count: Int) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// zlib's `uncompress` of `stream`, which must hold exactly `count` bytes.
    func inflated(_ stream: [UInt8], count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count + 1)
        var length = uLongf(out.count)
        let rc = out.withUnsafeMutableBufferPointer { o in
            stream.withUnsafeBufferPointer { uncompress(o.baseAddress, &length, $0.baseAddress, uLong($0.count)) }
        }
        return rc == Z_OK ? Array(out[..<Int(length)]) : nil
    }

    @Test(arguments: sizes) func aWholeStreamInflatesToItsBytes(count: Int) {
        let bytes = random(count)
        var stream = StoredZlib.header
        bytes.withUnsafeBytes { StoredZlib.appendBlocks($0, to: &stream) }
        StoredZlib.appendEnd(adler: bytes.withUnsafeBytes { Checksum.adler32(1, $0) }, to: &stream)
        let blocks = max(1, (count + StoredZlib.blockLimit - 1) / StoredZlib.blockLimit)
        #expect(stream.count == 2 + count + 5 * (count == 0 ? 1 : blocks + 1) + 4, "one 5-byte header per block, an empty final one")
        #expect(inflated(stream, count: count) == bytes)
    }

    /// Streamed in pieces of every size around a block's limit, ended by an empty final block.
    @Test(arguments: [1, 1000, 65_535, 65_536, 70_000]) func aStreamInPiecesInflatesToItsBytes(piece: Int) {
        let bytes = random(200_000)
        var stream = StoredZlib.header
        var adler: UInt32 = 1
        var at = 0
        while at < bytes.count {
            let n = min(piece, bytes.count - at)
            bytes.withUnsafeBytes { all in
                let part = UnsafeRawBufferPointer(rebasing: all[at..<(at + n)])
                adler = Checksum.adler32(adler, part)
                StoredZlib.appendBlocks(part, to: &stream)
            }
            at += n
        }
        StoredZlib.appendEnd(adler: adler, to: &stream)
        #expect(inflated(stream, count: bytes.count) == bytes)
        // one damaged byte of the content (the first block's first, after the zlib header and the
        // block's own): zlib's own check of the Adler-32 refuses it
        stream[StoredZlib.header.count + 5] ^= 1
        #expect(inflated(stream, count: bytes.count) == nil)
    }

    @Test func checksumsAreZlibs() {
        for count in Self.sizes {
            let bytes = random(count)
            bytes.withUnsafeBytes { raw in
                let p = raw.baseAddress?.assumingMemoryBound(to: Bytef.self)
                for seed: UInt32 in [0, 1, 0xdead_beef] {
                    #expect(Checksum.crc32(seed, raw) == UInt32(crc32(uLong(seed), p, uInt(count))), "crc32 of \(count) bytes")
                }
                #expect(Checksum.adler32(1, raw) == UInt32(adler32(1, p, uInt(count))), "adler32 of \(count) bytes")
                let half = count / 2
                let first = Checksum.adler32(1, UnsafeRawBufferPointer(rebasing: raw[..<half]))
                #expect(Checksum.adler32(first, UnsafeRawBufferPointer(rebasing: raw[half...])) == Checksum.adler32(1, raw))
            }
        }
    }

    /// `StoredZlib.blocks` finds the bytes of every stream `appendBlocks` writes (empty included),
    /// and says nil, never other ranges, for what zlib itself refuses or for a stream that is not
    /// all stored blocks: a window over 32 KiB, a preset dictionary, a wrong Adler-32, another
    /// size, a compressed block.
    @Test(arguments: sizes) func storedBlocksAreFoundOnlyWhereZlibReadsThem(count: Int) {
        let bytes = random(count)
        var stream = StoredZlib.header
        bytes.withUnsafeBytes { StoredZlib.appendBlocks($0, to: &stream) }
        StoredZlib.appendEnd(adler: bytes.withUnsafeBytes { Checksum.adler32(1, $0) }, to: &stream)
        stream += [0xde, 0xad]  // what follows in a pack: not part of the stream
        func found(_ s: [UInt8], size: Int) -> [UInt8]? {
            s.withUnsafeBytes { raw in StoredZlib.blocks(in: raw, size: size).map { $0.flatMap { Array(raw[$0]) } } }
        }
        #expect(found(stream, size: count) == bytes)
        #expect(found(stream, size: count + 1) == nil)
        var window = stream
        window[0] = 0x88; window[1] = 0x1c  // CINFO 8: zlib refuses it (0x881c is a multiple of 31)
        #expect(found(window, size: count) == nil && inflated(Array(window.dropLast(2)), count: count) == nil)
        var dictionary = stream
        dictionary[1] = 0x20  // FDICT, and 0x7820 is a multiple of 31
        #expect(found(dictionary, size: count) == nil)
        var adler = stream
        adler[adler.count - 3] ^= 1
        #expect(found(adler, size: count) == nil)
        if count > 0 {
            var data = stream
            data[2 + 5] ^= 1  // the first byte of the first block
            #expect(found(data, size: count) == nil)
        }
        let compressed = bytes.withUnsafeBytes { raw -> [UInt8] in
            var out = [UInt8](repeating: 0, count: count + 1024)
            var length = uLongf(out.count)
            _ = out.withUnsafeMutableBufferPointer { compress2($0.baseAddress, &length, raw.baseAddress, uLong(count), 6) }
            return Array(out[..<Int(length)])
        }
        if compressed[2] & 0b110 != 0 { #expect(found(compressed, size: count) == nil) }
    }
}
