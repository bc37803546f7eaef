import CCompression
import Glibc
import SystemPackage

/// Whole objects read straight out of the packs in one directory (`objects/pack`), for the blobs
/// an apply writes and the objects a pack adoption hashes. libgit2 1.5 inflates a packed object
/// through zlib, whose inflate and Adler-32 were more than half of a receiving agent's CPU on 10k
/// documents; libdeflate decompresses the same stream 2-3x faster and checks the same Adler-32.
/// An object held in zlib's stored blocks (a photo, `StoredZlib`) is handed out as it lies in
/// the pack: a small one whole, its Adler-32 checked before any byte goes out; a big one (over
/// `keptScratch`) block by block, its Adler-32 checked as it goes, so damage found there throws
/// after some bytes went out (as for a loose object).
///
/// Only what can be read here is read here: a delta, an object in none of these packs, one
/// bigger than the caller allows, or an entry that does not decode is left to libgit2 (nil, and
/// nothing was handed out), so its reading and its errors stay the ones a user sees; a big
/// stored object found damaged part way is the exception above.
/// One thread at a time (one libdeflate decompressor, one set of open packs).
package final class PackedObjects {
    package let packDir: FilePath
    private var packs: [Pack] = []
    /// The directory's modification time when it was last listed: a miss lists it again only
    /// when a pack came or went since.
    private var listed: (Int, Int)?
    private let decompressor: OpaquePointer
    private var compressed: [UInt8] = []
    private var content: [UInt8] = []

    package init?(packDir: FilePath) {
        guard let decompressor = libdeflate_alloc_decompressor() else { return nil }
        self.decompressor = decompressor
        self.packDir = packDir
    }

    deinit { libdeflate_free_decompressor(decompressor) }

    /// Hands the content of object `id` to `body` (in one or more pieces, in order) when one of
    /// the packs holds it whole (not as a delta), of type `expecting` if given and of at most
    /// `maxSize` bytes; returns its type and size. Nil, with nothing handed out, otherwise;
    /// a big stored object whose bytes turn out damaged part way throws (see the type).
    /// What `body` throws is thrown.
    /// `start` is told the type and size first, once the object is known to be readable here.
    package func stream(_ id: Oid, expecting: ObjectType? = nil, maxSize: Int,
                        start: (ObjectType, Int) -> Void = { _, _ in },
                        into body: (UnsafeRawBufferPointer) throws -> Void) throws -> (type: ObjectType, size: Int)? {
        guard let (pack, offset) = locate(id) else { return nil }
        return try read(pack, at: offset, expecting: expecting, maxSize: maxSize, start: start, into: body)
    }

    /// One entry read through `pack`; a big object's buffers go back after it (a photo's 5 MB
    /// would otherwise stay for the agent's life).
    private func read(_ pack: Pack, at offset: UInt64, expecting: ObjectType?, maxSize: Int, start: (ObjectType, Int) -> Void,
                      into body: (UnsafeRawBufferPointer) throws -> Void) throws -> (type: ObjectType, size: Int)? {
        defer {
            if compressed.count > Self.keptScratch { compressed = [] }
            if content.count > Self.keptScratch { content = [] }
        }
        return try pack.read(at: offset, expecting: expecting, maxSize: maxSize, scratch: self, start: start, into: body)
    }

    /// The type and size a whole object's entry header gives (`bytes` begin with the entry); nil
    /// for a delta or what is not a header.
    package static func wholeObjectHeader(_ bytes: ArraySlice<UInt8>) -> (type: ObjectType, size: Int)? {
        Pack.entryHeader(bytes).map { ($0.0, $0.1) }
    }

    /// Scratch buffers up to this size are kept from one object to the next.
    static let keptScratch = 1 << 20

    /// The same for the object at `offset` of the one pack in this directory (a pack being adopted,
    /// read entry by entry as its index lists them: never another entry of the same id). Nil when
    /// the directory does not hold exactly one pack.
    package func stream(atOffset offset: UInt64, maxSize: Int, start: (ObjectType, Int) -> Void = { _, _ in },
                        into body: (UnsafeRawBufferPointer) throws -> Void) throws -> (type: ObjectType, size: Int)? {
        if packs.isEmpty { relist() }  // (a folder of its own: nothing comes or goes there)
        guard packs.count == 1, let pack = packs.first else { return nil }
        return try read(pack, at: offset, expecting: nil, maxSize: maxSize, start: start, into: body)
    }

    /// The pack holding `id`, and where. The directory is looked at again (a `stat`, and a listing
    /// when it changed) on a miss, and at most every 100 ms otherwise: a pack a roll-up removed is
    /// closed soon, not held open with its disk space (an object read from it meanwhile is the same
    /// object), without a `stat` per blob of a 100k-file apply.
    private func locate(_ id: Oid) -> (Pack, UInt64)? {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        let ms = Int(now.tv_sec) * 1000 + now.tv_nsec / 1_000_000
        if listed == nil || ms - lookedAt >= 100 {
            lookedAt = ms
            relist()
        }
        for pack in packs { if let offset = pack.index.offset(of: id) { return (pack, offset) } }
        lookedAt = ms
        relist()
        for pack in packs { if let offset = pack.index.offset(of: id) { return (pack, offset) } }
        return nil
    }

    /// Whether an unchanged modification time means an unchanged listing (`relist`).
    private var trusted = false
    /// When the directory was last looked at (monotonic milliseconds).
    private var lookedAt = 0

    /// Lists the directory's packs again when its modification time moved.
    private func relist() {
        var st = stat()
        guard packDir.withPlatformString({ stat($0, &st) }) == 0 else { packs = []; listed = nil; return }
        let stamp = (st.st_mtim.tv_sec, st.st_mtim.tv_nsec)
        if trusted, let listed, listed == stamp { return }
        listed = stamp
        var names: [String] = []
        if let dir = packDir.withPlatformString({ opendir($0) }) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
                if name.hasPrefix("pack-"), name.hasSuffix(".idx") { names.append(String(name.dropLast(4))) }
            }
            closedir(dir)
        }
        let kept = packs.filter { names.contains($0.name) }
        var fresh = kept
        for name in names where !kept.contains(where: { $0.name == name }) {
            if let pack = Pack(directory: packDir, name: name) { fresh.append(pack) }
        }
        packs = fresh
        // Not trusted when a pack could not be opened (an index in place before its pack, as
        // libgit2's indexer leaves them for a moment) or when the directory changed within the
        // last two seconds (a pack added in the same clock tick would leave its time unchanged):
        // listed again at the next look.
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        trusted = fresh.count == names.count && clock.tv_sec - stamp.0 >= 2
    }

    /// One pack: its index mapped, its file open.
    final class Pack {
        let name: String
        /// The pack file (for messages).
        let file: FilePath
        let index: MappedPackIndex
        let fd: Int32
        /// Where the objects end (the pack's checksum follows).
        let end: UInt64

        init?(directory: FilePath, name: String) {
            guard let index = MappedPackIndex(directory.appending(name + ".idx")) else { return nil }
            let fd = directory.appending(name + ".pack").withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
            guard fd >= 0 else { return nil }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_size >= 32 else { close(fd); return nil }
            self.name = name
            self.file = directory.appending(name + ".pack")
            self.index = index
            self.fd = fd
            self.end = UInt64(st.st_size) - 20
        }

        deinit { close(fd) }

        func read(at offset: UInt64, expecting: ObjectType?, maxSize: Int, scratch: PackedObjects,
                  start: (ObjectType, Int) -> Void, into body: (UnsafeRawBufferPointer) throws -> Void) throws -> (type: ObjectType, size: Int)? {
            guard offset >= 12, offset < end else { return nil }
            // One read for a small object: its entry header and its bytes together (two reads
            // each were 20,000 system calls for 10k new files, on each side).
            let first = Int(min(end - offset, UInt64(Self.firstRead)))
            if scratch.compressed.count < first { scratch.compressed = [UInt8](repeating: 0, count: first) }
            guard let got = Self.readFully(fd, into: &scratch.compressed, at: 0, count: first, from: offset), got > 0,
                  let (type, size, headerLength) = Self.entryHeader(scratch.compressed[..<min(16, got)]),
                  expecting == nil || type == expecting, size <= maxSize else { return nil }
            let dataStart = offset + UInt64(headerLength)
            // The compressed bytes end where the next object starts, which the index does not say
            // without sorting it: read what zlib's and libdeflate's encoders and stored blocks take
            // at most (5 bytes per 64 KiB, the zlib header and trailer), never past the pack's
            // objects. A longer stream from another encoder then fails to decode and is left to
            // libgit2.
            let room = Int(min(end - dataStart, UInt64(size + size / 1024 + 64)))
            let needed = headerLength + room
            // A big object in stored blocks (a photo) is read block by block through the kept
            // scratch: read whole, each one took a buffer of its size, zeroed and faulted in and
            // given back after it (an eighth of a receiving agent's CPU on 300 photos).
            if needed > PackedObjects.keptScratch, got >= headerLength + 2,
               let layout = storedLayout(from: dataStart, size: size, headerBytes: scratch.compressed[headerLength ..< got]) {
                start(type, size)
                try streamStored(layout, scratch: scratch, into: body)
                return (type, size)
            }
            if needed > got {
                if scratch.compressed.count < needed { scratch.compressed += [UInt8](repeating: 0, count: needed - scratch.compressed.count) }
                guard Self.readFully(fd, into: &scratch.compressed, at: got, count: needed - got, from: offset + UInt64(got)) == needed - got else {
                    return nil
                }
            }
            let decoded: Bool = try scratch.compressed.withUnsafeBytes { raw in
                let input = UnsafeRawBufferPointer(rebasing: raw[headerLength ..< needed])
                if let blocks = StoredZlib.blocks(in: input, size: size) {
                    start(type, size)
                    for block in blocks where !block.isEmpty { try body(UnsafeRawBufferPointer(rebasing: input[block])) }
                    return true
                }
                if scratch.content.count < max(size, 1) { scratch.content = [UInt8](repeating: 0, count: max(size, 1)) }
                let rc = scratch.content.withUnsafeMutableBytes { out in
                    libdeflate_zlib_decompress_ex(scratch.decompressor, input.baseAddress, input.count, out.baseAddress, size, nil, nil)
                }
                guard rc == LIBDEFLATE_SUCCESS else { return false }
                start(type, size)
                if size > 0 { try scratch.content.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<size])) } }
                return true
            }
            return decoded ? (type, size) : nil
        }

        /// The first read of an entry: a small object's header and bytes at once.
        static let firstRead = 16 << 10

        /// Where the stored blocks of a zlib stream starting at `from` lie in the pack (each
        /// block's bytes), and its Adler-32 trailer: when the stream is only stored blocks holding
        /// exactly `size` bytes, within the pack's objects. Nil otherwise (compressed blocks, a
        /// dictionary, damage: nothing was handed out, and the caller reads it as any stream).
        /// Looks only at the zlib header and each block's 5-byte header (a read of 5 bytes per
        /// 64 KiB), never at the bytes.
        func storedLayout(from: UInt64, size: Int, headerBytes: ArraySlice<UInt8>) -> (blocks: [(UInt64, Int)], adler: UInt32)? {
            guard headerBytes.count >= 2, StoredZlib.isHeader(headerBytes[headerBytes.startIndex], headerBytes[headerBytes.startIndex + 1]) else {
                return nil
            }
            var at = from + 2
            var blocks: [(UInt64, Int)] = []
            blocks.reserveCapacity(size / 65_535 + 1)
            var total = 0
            var head = [UInt8](repeating: 0, count: 5)
            while true {
                guard at + 5 <= end, Self.readFully(fd, into: &head, at: 0, count: 5, from: at) == 5,
                      let (length, final) = head.withUnsafeBytes(StoredZlib.blockHeader),
                      at + 5 + UInt64(length) <= end else { return nil }
                if length > 0 { blocks.append((at + 5, length)) }
                total += length
                at += 5 + UInt64(length)
                guard total <= size else { return nil }
                if final { break }
            }
            guard total == size, at + 4 <= end, Self.readFully(fd, into: &head, at: 0, count: 4, from: at) == 4 else { return nil }
            return (blocks, head.withUnsafeBytes(StoredZlib.trailer))
        }

        /// Hands out the bytes of the blocks `storedLayout` found, one block at a time through
        /// `scratch.compressed`, checking the Adler-32 as they go: bytes that do not match it, or
        /// a read that fails now, throw (what went out before is the caller's to drop, as for a
        /// loose object: `LooseObject.stream`).
        func streamStored(_ layout: (blocks: [(UInt64, Int)], adler: UInt32), scratch: PackedObjects,
                          into body: (UnsafeRawBufferPointer) throws -> Void) throws {
            if scratch.compressed.count < 65_535 { scratch.compressed = [UInt8](repeating: 0, count: 65_535) }
            var adler: UInt32 = 1
            for (offset, length) in layout.blocks {
                let got = Self.readFully(fd, into: &scratch.compressed, at: 0, count: length, from: offset)
                guard got == length else {
                    // A read that fails is the disk's (its errno kept); one that ends early, the
                    // pack's damage.
                    guard got != nil else {
                        let error = errno
                        throw GitError(code: GitError.Code.generic, errorClass: GitError.Class.os,
                                       message: "pack \(file) cannot be read at offset \(offset): \(String(cString: strerror(error)))",
                                       call: "pread", osError: error)
                    }
                    throw GitError.damagedObject("pack \(file) ends early, at offset \(offset) (`git fsck` in its store lists what else is damaged)", call: "pread")
                }
                try scratch.compressed.withUnsafeBytes { raw in
                    let piece = UnsafeRawBufferPointer(rebasing: raw[..<length])
                    adler = Checksum.adler32(adler, piece)
                    try body(piece)
                }
            }
            guard adler == layout.adler else {
                throw GitError.damagedObject("an object in pack \(file) is damaged: its bytes do not match their Adler-32 "
                                             + "(`git fsck` in its store lists what else is)", call: "inflate")
            }
        }

        /// Reads `count` bytes of the pack at `from` into `buffer` at `at`; how many came (fewer
        /// only at the end of the file), nil on an error.
        static func readFully(_ fd: Int32, into buffer: inout [UInt8], at: Int, count: Int, from: UInt64) -> Int? {
            var read = 0
            while read < count {
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + at + read, count - read, off_t(from) + off_t(read)) }
                if n < 0, errno == EINTR { continue }
                guard n >= 0 else { return nil }
                if n == 0 { break }
                read += n
            }
            return read
        }

        /// A whole object's entry header (type 1-4, size, the header's length); nil for a delta
        /// or what is not a header.
        static func entryHeader(_ bytes: ArraySlice<UInt8>) -> (ObjectType, Int, Int)? {
            guard let (raw, size, length) = anyEntryHeader(bytes), let type = ObjectType(rawValue: Int32(raw)) else { return nil }
            return (type, size, length)
        }

        /// Any entry's header, a delta's too: its type number (bits 4-6), size and length.
        static func anyEntryHeader(_ bytes: ArraySlice<UInt8>) -> (UInt8, Int, Int)? {
            var at = bytes.startIndex
            guard at < bytes.endIndex else { return nil }
            var byte = bytes[at]
            var size = Int(byte & 0x0f)
            var shift = 4
            while byte & 0x80 != 0 {
                at += 1
                guard at < bytes.endIndex, shift < 56 else { return nil }
                byte = bytes[at]
                size |= Int(byte & 0x7f) << shift
                shift += 7
            }
            return ((bytes[bytes.startIndex] >> 4) & 7, size, at - bytes.startIndex + 1)
        }
    }
}

/// A pack's index (version 2) mapped into memory and searched where it lies: the fan-out table,
/// then the sorted ids, then the offsets (31 bits, or an entry of the 64-bit table).
package final class MappedPackIndex {
    private let base: UnsafeRawPointer
    private let length: Int
    package let count: Int

    package init?(_ path: FilePath) {
        let fd = path.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size >= 8 + 1024 + 40 else { return nil }
        let length = Int(st.st_size)
        guard let map = mmap(nil, length, PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else { return nil }
        let base = UnsafeRawPointer(map)
        func be32(_ at: Int) -> UInt32 { UInt32(bigEndian: base.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
        let count = Int(be32(8 + 255 * 4))
        guard be32(0) == 0xff74_4f63, be32(4) == 2, 8 + 1024 + count * 28 + 40 <= length else {
            munmap(map, length)
            return nil
        }
        self.base = base
        self.length = length
        self.count = count
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: base), length) }

    private func be32(_ at: Int) -> UInt32 { UInt32(bigEndian: base.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }

    /// Where the `position`-th object of the index (in the order of ids) starts in the pack.
    package func offset(atPosition position: Int) -> UInt64? {
        guard position >= 0, position < count else { return nil }
        let small = be32(8 + 1024 + count * 24 + position * 4)
        guard small & 0x8000_0000 != 0 else { return UInt64(small) }
        let at = 8 + 1024 + count * 28 + Int(small & 0x7fff_ffff) * 8
        guard at + 8 <= length - 40 else { return nil }
        return UInt64(bigEndian: base.loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }

    /// Where object `id` starts in the pack, if this index lists it.
    package func offset(of id: Oid) -> UInt64? {
        id.withBytes { want -> UInt64? in
            let first = Int(want[0])
            var low = first == 0 ? 0 : Int(be32(8 + (first - 1) * 4))
            var high = Int(be32(8 + first * 4))
            guard high <= count, low <= high else { return nil }
            let ids = 8 + 1024
            while low < high {
                let middle = (low + high) / 2
                let order = memcmp(base + ids + middle * 20, want.baseAddress!, 20)
                if order == 0 { return offset(atPosition: middle) }
                if order < 0 { low = middle + 1 } else { high = middle }
            }
            return nil
        }
    }
}

extension StoredZlib {
    /// A zlib header we read: deflate, a window of at most 32 KiB, no preset dictionary, its check.
    package static func isHeader(_ cmf: UInt8, _ flg: UInt8) -> Bool {
        cmf & 0x0f == 8 && cmf >> 4 <= 7 && flg & 0x20 == 0 && (Int(cmf) << 8 | Int(flg)) % 31 == 0
    }

    /// A stored block's 5-byte header (`bytes` start with it): how many bytes follow and whether
    /// it is the last block; nil for any other block. Only a stored block starts on a byte with
    /// nothing after its three bits (what `appendBlocks`, zlib at level 0 and git write).
    static func blockHeader(_ bytes: UnsafeRawBufferPointer) -> (length: Int, final: Bool)? {
        guard bytes.count >= 5, bytes[0] & 0b110 == 0, bytes[0] >> 3 == 0 else { return nil }
        let length = Int(bytes[1]) | Int(bytes[2]) << 8
        let check = Int(bytes[3]) | Int(bytes[4]) << 8
        return length ^ check == 0xffff ? (length, bytes[0] & 1 == 1) : nil
    }

    /// The Adler-32 a zlib stream ends with (`bytes` start with it: big-endian).
    static func trailer(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
    }

    /// Where the bytes of a zlib stream made only of stored blocks lie in `stream` (which may go on
    /// past its end), when they are exactly `size` bytes and their Adler-32 matches the stream's
    /// trailer; nil otherwise (compressed blocks, a dictionary, damage: decode it as any stream).
    package static func blocks(in stream: UnsafeRawBufferPointer, size: Int) -> [Range<Int>]? {
        guard stream.count >= 2 + 5 + 4, isHeader(stream[0], stream[1]) else { return nil }
        var at = 2
        var ranges: [Range<Int>] = []
        var total = 0
        while true {
            // Any other block than a stored one: not ours to read.
            guard let (length, final) = blockHeader(UnsafeRawBufferPointer(rebasing: stream[at...])),
                  at + 5 + length <= stream.count else { return nil }
            ranges.append((at + 5)..<(at + 5 + length))
            total += length
            at += 5 + length
            guard total <= size else { return nil }
            if final { break }
        }
        guard total == size, at + 4 <= stream.count else { return nil }
        var adler: UInt32 = 1
        for range in ranges { adler = Checksum.adler32(adler, UnsafeRawBufferPointer(rebasing: stream[range])) }
        return adler == trailer(UnsafeRawBufferPointer(rebasing: stream[at...])) ? ranges : nil
    }
}
