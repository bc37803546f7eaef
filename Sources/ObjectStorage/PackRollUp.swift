import Glibc
import SystemPackage

/// One pack made of several of the store's packs, their objects copied as they are stored: no
/// object is inflated, re-compressed or searched for deltas again, and only one object is in
/// memory at a time (libgit2's pack builder held every object of the packs and searched deltas
/// afresh: a roll-up of a 100k-file start-up's packs took the agent from 69 to 96 MB). Deltas
/// stay deltas; an offset delta's base offset is rewritten for the new pack. Each object's
/// compressed bytes are checked against the CRC-32 its old index gives, so a damaged pack is
/// refused instead of copied. An object held by two of the packs is kept once.
public struct PackRollUp {
    /// A pack's index (version 2): each object's id, offset and CRC-32, in offset order.
    public struct Index {
        public var entries: [(id: Oid, offset: UInt64, crc: UInt32)]

        /// How many objects the index lists (its fan-out table's last entry).
        public static func count(_ path: FilePath) throws(GitError) -> Int {
            let fd = path.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
            guard fd >= 0 else { throw PackRollUp.ioFailed("cannot open", path, errno) }
            defer { close(fd) }
            var head = [UInt8](repeating: 0, count: 8 + 1024)
            try PackRollUp.readExactly(fd, into: &head, count: head.count, at: 0, path: path)
            return Int(head[(8 + 1020)...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }

        public init(_ path: FilePath) throws(GitError) {
            let bytes = try PackRollUp.readWhole(path)
            func be32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
            guard bytes.count >= 8 + 1024 + 40, bytes[0..<4].elementsEqual([0xff, 0x74, 0x4f, 0x63]), be32(4) == 2 else {
                throw PackRollUp.damaged("\(path) is not a version 2 pack index")
            }
            let n = Int(be32(8 + 255 * 4))
            let ids = 8 + 1024, crcs = ids + 20 * n, offsets = crcs + 4 * n, large = offsets + 4 * n
            guard bytes.count >= large + 40 else { throw PackRollUp.damaged("\(path) is shorter than its \(n) objects need") }
            entries = []
            entries.reserveCapacity(n)
            for i in 0..<n {
                var offset = UInt64(be32(offsets + 4 * i))
                if offset & 0x8000_0000 != 0 {
                    let at = large + 8 * Int(offset & 0x7fff_ffff)
                    guard at + 8 <= bytes.count - 40 else { throw PackRollUp.damaged("\(path): a large offset is out of range") }
                    offset = bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) }
                }
                entries.append((Oid(bytes: bytes[(ids + 20 * i)..<(ids + 20 * i + 20)]), offset, be32(crcs + 4 * i)))
            }
            entries.sort { $0.offset < $1.offset }
        }

        /// Reads each object of the pack at `packPath` this index lists, in offset order: its
        /// bytes (header and compressed data) from its offset to the next one's, checked against
        /// its CRC-32, handed to `body` with their length (`buffer` may be longer). Objects `skip`
        /// names are not read. Throws when the pack cannot be what the index says.
        /// `big`: a whole object (not a delta) whose entry is longer than `bigFrom` is handed to it
        /// instead, unread (position, id, the open pack, offset, length, the CRC-32 it must have),
        /// so that it is copied in pieces, never held whole.
        public func forEachObject(in packPath: FilePath, skip: (Int, Oid) -> Bool = { _, _ in false }, bigFrom: Int = Int.max,
                           big: ((Int, Oid, Int32, UInt64, Int, UInt32) throws(GitError) -> Void)? = nil,
                           _ body: (Int, Oid, [UInt8], Int) throws(GitError) -> Void) throws(GitError) {
            let fd = packPath.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
            guard fd >= 0 else { throw PackRollUp.ioFailed("cannot open", packPath, errno) }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_size >= 32 else { throw PackRollUp.damaged("\(packPath) is too short to be a pack") }
            let end = UInt64(st.st_size) - 20  // the trailer: the pack's checksum
            var buffer: [UInt8] = []
            for (i, entry) in entries.enumerated() {
                let next = i + 1 < entries.count ? entries[i + 1].offset : end
                guard entry.offset >= 12, next > entry.offset, next <= end else {
                    throw PackRollUp.damaged("\(packPath): object \(entry.id) has no room at offset \(entry.offset)")
                }
                if skip(i, entry.id) { continue }
                let length = Int(next - entry.offset)
                if length > bigFrom, let big {
                    var first = [UInt8](repeating: 0, count: 1)
                    try PackRollUp.readExactly(fd, into: &first, count: 1, at: entry.offset, path: packPath)
                    if (1...4).contains((first[0] >> 4) & 7) {
                        try big(i, entry.id, fd, entry.offset, length, entry.crc)
                        continue
                    }
                }
                if buffer.count < length { buffer = [UInt8](repeating: 0, count: length) }
                try PackRollUp.readExactly(fd, into: &buffer, count: length, at: entry.offset, path: packPath)
                let crc = buffer.withUnsafeBytes { Checksum.crc32(0, UnsafeRawBufferPointer(rebasing: $0[..<length])) }
                guard crc == entry.crc else {
                    throw PackRollUp.damaged("\(packPath): object \(entry.id) does not match its CRC-32 (the pack is damaged on disk)")
                }
                try body(i, entry.id, buffer, length)
            }
        }
    }

    /// Writes every object of the packs whose indexes are `indexFiles` into one new pack in
    /// `packDir`; returns its name's checksum part (`pack-<it>.pack`). `deflating`: a whole object
    /// of at most `deflateLimit` bytes held in stored blocks whose bytes look compressible (one a
    /// commit framed for later, `PackFileWriter.deflateAtRest`) is deflated into the new pack, its
    /// Adler-32 checked first; anything else is copied as it is.
    public static func combine(_ indexFiles: [FilePath], into packDir: FilePath, deflating: Bool) throws(GitError) -> String {
        let writer = try PackFileWriter(packDir: packDir)
        var payload: [UInt8] = []
        // Objects already written, found by the first 8 bytes of their id (a position in the
        // writer's list, which has the whole id and its offset), and only for ids that more than
        // one of the packs holds: a table of every object was 3 MB of a 100k-object roll-up.
        var total = 0
        var prefixes: [UInt64] = []
        for indexFile in indexFiles {
            let ids = try Index(indexFile).entries
            total += ids.count
            prefixes.append(contentsOf: ids.lazy.map { $0.id.prefix64 })
        }
        prefixes.sort()
        var shared = Set<UInt64>()
        for k in prefixes.indices.dropFirst() where prefixes[k] == prefixes[k - 1] { shared.insert(prefixes[k]) }
        prefixes = []
        writer.reserve(total)
        var written: [UInt64: Int32] = [:]
        func offsetWritten(_ id: Oid) -> UInt64? {
            let key = id.prefix64
            guard shared.contains(key), let at = written[key] else { return nil }
            let entry = writer.entry(at: Int(at))
            if entry.id == id { return entry.offset }
            return writer.offset(of: id)  // two ids share 8 bytes: look through the list (never seen)
        }
        for indexFile in indexFiles {
            let index = try Index(indexFile)
            var packPath = indexFile
            packPath.extension = "pack"  // (the bytes of the directory's names kept as they are)
            // Where each object of this pack went in the new one (by position, in offset order).
            var moved = [UInt64](repeating: 0, count: index.entries.count)
            func movedOffset(ofBaseAt offset: UInt64, before i: Int) -> UInt64? {
                var low = 0, high = i
                while low < high {
                    let mid = (low + high) / 2
                    if index.entries[mid].offset < offset { low = mid + 1 } else { high = mid }
                }
                return low < i && index.entries[low].offset == offset ? moved[low] : nil
            }
            func alreadyWritten(_ i: Int, _ id: Oid) -> Bool {
                guard let there = offsetWritten(id) else { return false }
                moved[i] = there  // a copy from an earlier pack: deltas here use that one
                return true
            }
            // Object i of this pack is now the writer's last, at `offset`.
            func note(_ i: Int, _ id: Oid, at offset: UInt64) {
                moved[i] = offset
                let key = id.prefix64
                if shared.contains(key), written[key] == nil { written[key] = Int32(writer.count - 1) }
            }
            // An object too big to deflate is copied in pieces (a video a batch streamed in).
            func copyBig(_ i: Int, _ id: Oid, _ fd: Int32, _ offset: UInt64, _ length: Int, _ crc: UInt32) throws(GitError) {
                note(i, id, at: try writer.appendRaw(from: fd, offset: offset, length: length, id: id, crc: crc, source: packPath))
            }
            try index.forEachObject(in: packPath, skip: alreadyWritten, bigFrom: deflateLimit + (deflateLimit >> 8) + 64,
                                    big: copyBig) { (i, id, buffer, length) throws(GitError) in
                let entry = (id: id, offset: index.entries[i].offset)
                // The header: type in bits 4-6 of the first byte, then the size, 7 bits a byte.
                var at = 0
                let type = (buffer[0] >> 4) & 7
                while buffer[at] & 0x80 != 0 {
                    at += 1
                    guard at < length else { throw damaged("\(packPath): object \(entry.id) has a broken header") }
                }
                at += 1
                let newOffset: UInt64
                if type == 6 {  // OFS_DELTA: the base is `distance` bytes before this object
                    let headerEnd = at
                    guard at < length else { throw damaged("\(packPath): object \(entry.id) has a broken delta header") }
                    var byte = buffer[at]
                    var distance = UInt64(byte & 0x7f)
                    while byte & 0x80 != 0 {
                        at += 1
                        // A distance takes at most 9 bytes (63 bits): more is damage, not a pack.
                        guard at < length, at - headerEnd < 9 else { throw damaged("\(packPath): object \(entry.id) has a broken delta header") }
                        byte = buffer[at]
                        distance = ((distance &+ 1) << 7) | UInt64(byte & 0x7f)
                    }
                    at += 1
                    guard distance > 0, distance <= entry.offset, let base = movedOffset(ofBaseAt: entry.offset - distance, before: i) else {
                        throw damaged("\(packPath): the delta \(entry.id) names a base that is not in the pack")
                    }
                    var rewritten = Array(buffer[0..<headerEnd])
                    rewritten.append(contentsOf: encodeDistance(writer.size - base))
                    rewritten.append(contentsOf: buffer[at..<length])
                    let result: Result<UInt64, GitError> = rewritten.withUnsafeBytes { raw in
                        Result { () throws(GitError) in try writer.appendRaw(raw, id: entry.id) }
                    }
                    newOffset = try result.get()
                } else {
                    guard (1...4).contains(type) || type == 7 else {
                        throw damaged("\(packPath): object \(entry.id) has an unknown type \(type)")
                    }
                    if deflating, type != 7,
                       let deflated = try deflate(buffer, length: length, dataAt: at, type: ObjectType(rawValue: Int32(type))!,
                                                  id: entry.id, into: writer, scratch: &payload) {
                        return note(i, entry.id, at: deflated)
                    }
                    let result: Result<UInt64, GitError> = buffer.withUnsafeBytes { raw in
                        Result { () throws(GitError) in try writer.appendRaw(UnsafeRawBufferPointer(rebasing: raw[0..<length]), id: entry.id) }
                    }
                    newOffset = try result.get()
                }
                note(i, entry.id, at: newOffset)
            }
        }
        written = [:]  // not needed for the index: its memory goes before the index is written
        return String(try writer.finish().dropFirst(5))  // "pack-"
    }

    /// The share (0 to 1) of the bytes of the pack whose index is `indexFile` that a roll-up with
    /// `deflating` would deflate, estimated from at most `samples` of its objects spread over the
    /// index, each weighing its size. Of each, only its header and the bytes `Incompressible`
    /// samples are read (found through its stored blocks' headers), so the judgement is the one
    /// `deflate` makes of that object; the index is mapped, not read whole. Nil when the pack
    /// cannot be read. A pack a commit framed for later (`PackFileWriter.deflateAtRest`) comes out
    /// near 1 for documents and near 0 for photos; a deflated pack, 0.
    public static func deflatableShare(_ indexFile: FilePath, samples: Int = 32) -> Double? {
        guard let index = MappedPackIndex(indexFile), index.count > 0 else { return nil }
        var packPath = indexFile
        packPath.extension = "pack"
        let fd = packPath.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size >= 32 else { return nil }
        let end = UInt64(st.st_size) - 20
        var deflatable = 0.0, seen = 0.0
        let n = min(samples, index.count)
        for k in 0..<n {
            guard let offset = index.offset(atPosition: k * index.count / n), offset >= 12, offset < end else { return nil }
            guard let (size, worth) = judge(fd, at: offset, end: end) else { return nil }
            let weight = Double(max(size, 1))
            seen += weight
            if worth { deflatable += weight }
        }
        return seen > 0 ? deflatable / seen : 0
    }

    /// The size of the object whose entry starts at `offset` (a delta's too), and whether
    /// `deflate` would deflate it; nil when the entry cannot be read.
    static func judge(_ fd: Int32, at offset: UInt64, end: UInt64) -> (Int, Bool)? {
        func read(_ count: Int, at: UInt64) -> [UInt8]? {
            guard at < end else { return nil }
            var bytes = [UInt8](repeating: 0, count: Int(min(UInt64(count), end - at)))
            let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(at)) }
            return got == bytes.count ? bytes : nil
        }
        guard let head = read(16 + 2, at: offset), let (type, size, h) = PackedObjects.Pack.anyEntryHeader(head.prefix(16)) else { return nil }
        guard (1...4).contains(type), size >= Incompressible.minimumSize, size <= deflateLimit, h + 2 <= head.count,
              StoredZlib.isHeader(head[h], head[h + 1]) else {
            return (size, false)
        }
        // Walk the stored blocks (their lengths follow the pieces the object was written in),
        // gathering the ranges `Incompressible` samples.
        let wanted = Incompressible.samples(count: size)
        var gathered: [UInt8] = []
        gathered.reserveCapacity(4096)
        var at = offset + UInt64(h + 2), payload = 0, next = 0
        while next < wanted.count {
            guard let block = read(5, at: at), block.count == 5 else { return nil }
            guard block[0] & 0b110 == 0, block[0] >> 3 == 0 else { return (size, false) }  // a compressed block: not ours
            let length = Int(block[1]) | Int(block[2]) << 8
            guard length ^ (Int(block[3]) | Int(block[4]) << 8) == 0xffff else { return nil }
            let covers = payload..<(payload + length)
            while next < wanted.count, wanted[next].lowerBound < covers.upperBound {
                let part = wanted[next].clamped(to: covers)
                if !part.isEmpty {
                    guard let bytes = read(part.count, at: at + 5 + UInt64(part.lowerBound - payload)), bytes.count == part.count else { return nil }
                    gathered += bytes
                }
                if wanted[next].upperBound <= covers.upperBound { next += 1 } else { break }
            }
            payload += length
            at += 5 + UInt64(length)
            if block[0] & 1 == 1 { break }
        }
        guard payload >= (wanted.last?.upperBound ?? 0) else { return nil }
        return (size, !gathered.withUnsafeBytes { Incompressible.looks($0) })
    }

    /// Whole objects bigger than this stay as they are in a roll-up that deflates: `PackFileWriter`
    /// deflates an object whole, so it costs about twice its size in memory for a moment.
    public static let deflateLimit = 16 << 20

    /// The whole object whose entry is `buffer[..<length]` (its data from `dataAt`), deflated into
    /// `writer` when it lies in stored blocks, is at most `deflateLimit` bytes and looks
    /// compressible; returns its offset in the new pack, nil when it is to be copied as it is.
    /// Stored blocks whose Adler-32 or length is not what the entry says are copied as they are
    /// too: a reader then meets the damage as it would have, nothing is made to look whole.
    static func deflate(_ buffer: [UInt8], length: Int, dataAt: Int, type: ObjectType, id: Oid, into writer: PackFileWriter,
                        scratch: inout [UInt8]) throws(GitError) -> UInt64? {
        guard let (_, size, headerLength) = PackedObjects.Pack.entryHeader(buffer[..<min(length, 16)]), headerLength == dataAt,
              size <= deflateLimit, size >= Incompressible.minimumSize else { return nil }
        let ranges: [Range<Int>]? = buffer.withUnsafeBytes { raw in
            StoredZlib.blocks(in: UnsafeRawBufferPointer(rebasing: raw[dataAt..<length]), size: size)
        }
        guard let ranges else { return nil }
        scratch.removeAll(keepingCapacity: true)
        for range in ranges { scratch.append(contentsOf: buffer[(dataAt + range.lowerBound)..<(dataAt + range.upperBound)]) }
        let compressible = scratch.withUnsafeBytes { !Incompressible.looks($0) }
        guard compressible else { return nil }
        let start = writer.size
        let result: Result<Void, GitError> = scratch.withUnsafeBytes { raw in
            Result { () throws(GitError) in try writer.append(raw, type: type, id: id) }
        }
        try result.get()
        if scratch.count > 1 << 20 { scratch = [] }
        return start
    }

    /// An offset delta's distance to its base, as a pack writes it.
    static func encodeDistance(_ value: UInt64) -> [UInt8] {
        var value = value
        var out = [UInt8(value & 0x7f)]
        value >>= 7
        while value != 0 {
            value -= 1
            out.insert(0x80 | UInt8(value & 0x7f), at: 0)
            value >>= 7
        }
        return out
    }

    static func readWhole(_ path: FilePath) throws(GitError) -> [UInt8] {
        let fd = path.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw ioFailed("cannot open", path, errno) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ioFailed("cannot stat", path, errno) }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        try readExactly(fd, into: &bytes, count: bytes.count, at: 0, path: path)
        return bytes
    }

    static func readExactly(_ fd: Int32, into buffer: inout [UInt8], count: Int, at offset: UInt64, path: FilePath) throws(GitError) {
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw n < 0 ? ioFailed("cannot read", path, errno) : damaged("\(path) ends early") }
            done += n
        }
    }

    /// A pack that cannot be what its index says. Nothing is changed: the packs stay as they are
    /// and only the roll-up is refused.
    static func damaged(_ message: String) -> GitError {
        GitError(code: GitError.Code.generic, errorClass: 0,
                 message: message + "; the packs were left as they are. Check the store with `git --git-dir=<store> fsck --full` and restore a damaged pack from a peer or a backup",
                 call: "PackRollUp")
    }

    static func ioFailed(_ what: String, _ path: FilePath, _ code: Int32) -> GitError {
        GitError(code: GitError.Code.generic, errorClass: 0, message: "\(what) \(path): \(String(cString: strerror(code)))", call: "PackRollUp",
                 osError: code)
    }
}

