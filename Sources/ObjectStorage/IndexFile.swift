import Glibc

/// git's index file (`Documentation/gitformat-index.txt`): versions 2, 3 and 4 read, version 2
/// written, its trailing SHA-1 checked and written. What the store keeps of an entry is
/// `IndexRecord`: stage-0 entries only, a path of at most 65,535 bytes (a conflict's stages 1-3 are read past: this store never
/// stages conflicts), no owner, no flags. Extensions are read past when optional (an upper-case
/// first letter: the tree cache, resolve-undo, ...); a required one is an error, as it is to git.
package enum IndexFile {
    /// Why bytes are not an index this code can read.
    package struct Damage: Error, Equatable, CustomStringConvertible {
        package let reason: String
        package var description: String { reason }
    }

    /// Reads every stage-0 entry of `bytes` (a whole index file), in the file's order, which must
    /// be git's: a file whose paths are out of order is damaged.
    /// `keep`: false only checks (nothing is added; the order is checked against the last path).
    package static func read(_ bytes: UnsafeRawBufferPointer, into entries: inout IndexEntries, keep: Bool = true) throws(Damage) {
        func damage(_ why: String) -> Damage { Damage(reason: why) }
        guard bytes.count >= 12 + 20 else { throw damage(bytes.isEmpty ? "it is empty" : "it is cut short (\(bytes.count) bytes)") }
        guard bytes.starts(with: Array("DIRC".utf8)) else { throw damage("it does not begin with DIRC") }
        let version = be32(bytes, 4)
        guard (2...4).contains(version) else { throw damage("its version is \(version); versions 2 to 4 are read") }
        let count = Int(be32(bytes, 8))
        let end = bytes.count - 20
        // The trailer: SHA-1 of everything before it. (git's `index.skipHash` writes zeros there;
        // here zeros are what a power cut leaves, and the index is rebuilt from the last commit.)
        let trailer = UnsafeRawBufferPointer(rebasing: bytes[end...])
        let sha: StreamSHA1
        do { sha = try StreamSHA1() } catch { throw damage("its checksum cannot be computed: \(error)") }
        sha.update(UnsafeRawBufferPointer(rebasing: bytes[..<end]))
        guard let sum = try? sha.finish(), sum.elementsEqual(trailer) else { throw damage("its checksum does not match its content") }
        var at = 12
        var previous: [UInt8] = []  // version 4 strips from the previous path
        var path: [UInt8] = []
        var lastKept: [UInt8]?
        for n in 0..<count {
            guard at + 62 <= end else { throw damage("entry \(n) of \(count) is cut short") }
            let flags = be16(bytes, at + 60)
            let extended = flags & 0x4000 != 0
            guard !extended || version >= 3 else { throw damage("entry \(n) has extended flags in a version \(version) file") }
            let fixed = 62 + (extended ? 2 : 0)
            guard at + fixed <= end else { throw damage("entry \(n) of \(count) is cut short") }
            let nameStart = at + fixed
            var next: Int
            path.removeAll(keepingCapacity: true)
            if version == 4 {
                // A number of bytes to strip from the previous path's end, then the rest of it.
                var i = nameStart
                guard i < end else { throw damage("entry \(n)'s path is cut short") }
                var c = bytes[i]; i += 1
                var strip = Int(c & 127)
                while c & 128 != 0 {
                    guard i < end, strip < 1 << 20 else { throw damage("entry \(n)'s path prefix is not a number") }
                    c = bytes[i]; i += 1
                    strip = ((strip + 1) << 7) | Int(c & 127)
                }
                guard strip <= previous.count else { throw damage("entry \(n) strips more than the previous path has") }
                guard let nul = nul(in: bytes, from: i, before: end) else { throw damage("entry \(n)'s path has no end") }
                path.append(contentsOf: previous[..<(previous.count - strip)])
                path.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<nul]))
                next = nul + 1
            } else {
                guard let nul = nul(in: bytes, from: nameStart, before: end) else { throw damage("entry \(n)'s path has no end") }
                path.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nul]))
                // Padded with 1-8 NULs to a multiple of 8 bytes.
                next = at + ((fixed + path.count + 8) & ~7)
                guard next <= end else { throw damage("entry \(n) of \(count) is cut short") }
            }
            guard !path.isEmpty, path.count <= Int(UInt16.max) else { throw damage("entry \(n) has an empty path or one of over 65,535 bytes") }
            if version == 4 { previous = path }
            guard IndexFile.isValidPath(path) else {
                throw damage("entry \(n)'s path is not one a store holds (an empty, '.', '..' or '.git' part)")
            }
            let stage = (flags >> 12) & 3
            // git's intent-to-add (`git add -N`): staged as nothing yet.
            let intentToAdd = extended && be16(bytes, at + 62) & 0x2000 != 0
            defer { at = next }
            guard stage == 0, !intentToAdd else { continue }
            let record = IndexRecord(
                oid: Oid(raw: bytes.baseAddress! + at + 40),
                mode: be32(bytes, at + 24), size: be32(bytes, at + 36),
                mtimeSeconds: Int32(bitPattern: be32(bytes, at + 8)), mtimeNanoseconds: be32(bytes, at + 12),
                ctimeSeconds: Int32(bitPattern: be32(bytes, at)), ctimeNanoseconds: be32(bytes, at + 4),
                inode: be32(bytes, at + 20))
            var inOrder = true
            path.withUnsafeBytes { key in
                if keep, let last = entries.last {
                    inOrder = entries.withPath(at: last) { IndexEntries.compare($0, key) < 0 }
                } else if !keep, let last = lastKept {
                    inOrder = last.withUnsafeBytes { IndexEntries.compare($0, key) < 0 }
                }
            }
            guard inOrder else { throw damage("entry \(n) is out of order") }
            if keep { path.withUnsafeBytes { entries.appendInOrder(record, path: $0) } } else { lastKept = path }
        }
        // Extensions, up to the trailer.
        while at < end {
            guard at + 8 <= end else { throw damage("an extension is cut short") }
            let signature = bytes[at]
            let size = Int(be32(bytes, at + 4))
            guard size <= end - at - 8 else { throw damage("an extension is cut short") }
            guard signature >= UInt8(ascii: "A") && signature <= UInt8(ascii: "Z") else {
                let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[at..<(at + 4)]), as: UTF8.self)
                throw damage("it has the extension \(name), which must be understood to read it")
            }
            at += 8 + size
        }
    }

    /// The bytes of a version 2 file holding `entries`, trailer included, handed to `write` a
    /// piece at a time (at most `bufferSize` bytes each).
    package static func write(_ entries: IndexEntries, owner: (uid: UInt32, gid: UInt32),
                              bufferSize: Int = 64 << 10,
                              to write: (UnsafeRawBufferPointer) throws -> Void) throws {
        let sha = try StreamSHA1()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(bufferSize + 4096)
        func flush() throws {
            try buffer.withUnsafeBytes { piece in
                sha.update(piece)
                try write(piece)
            }
            buffer.removeAll(keepingCapacity: true)
        }
        buffer.append(contentsOf: Array("DIRC".utf8))
        put32(&buffer, 2)
        put32(&buffer, UInt32(entries.count))
        try entries.forEach { r, path in
            put32(&buffer, UInt32(bitPattern: r.ctimeSeconds)); put32(&buffer, r.ctimeNanoseconds)
            put32(&buffer, UInt32(bitPattern: r.mtimeSeconds)); put32(&buffer, r.mtimeNanoseconds)
            put32(&buffer, 0); put32(&buffer, r.inode); put32(&buffer, r.mode)  // no device: see `IndexRecord`
            put32(&buffer, owner.uid); put32(&buffer, owner.gid); put32(&buffer, r.size)
            r.oid.withBytes { buffer.append(contentsOf: $0) }
            let length = UInt16(min(path.count, 0xfff))
            buffer.append(UInt8(length >> 8)); buffer.append(UInt8(length & 0xff))
            buffer.append(contentsOf: path)
            let padding = 8 - (62 + path.count) % 8
            buffer.append(contentsOf: repeatElement(0, count: padding))
            if buffer.count >= bufferSize { try flush() }
        }
        try flush()
        let sum = try sha.finish()
        try sum.withUnsafeBytes { try write($0) }
    }

    /// Whether an index may hold this path: relative, no empty, `.` or `..` part, no `.git` part
    /// in any case (nor its NTFS short name `git~1`), at most 65,535 bytes: what git's own checks
    /// (`verify_path`) refuse, a store never stages.
    package static func isValidPath(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.count <= Int(UInt16.max) else { return false }
        for part in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if part.isEmpty || part.elementsEqual([0x2e]) || part.elementsEqual([0x2e, 0x2e]) { return false }
            if part.count == 4 || part.count == 5 {
                let lower = part.map { $0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0 }
                if lower.elementsEqual(Array(".git".utf8)) || lower.elementsEqual(Array("git~1".utf8)) { return false }
            }
        }
        return true
    }

    /// Why `bytes` are not an index this code reads (nil: they are), without keeping its entries.
    package static func damage(_ bytes: UnsafeRawBufferPointer) -> String? {
        var entries = IndexEntries()
        do { try read(bytes, into: &entries, keep: false) } catch { return error.reason }
        return nil
    }

    @inline(__always)
    static func be32(_ b: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(bigEndian: b.loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }

    @inline(__always)
    static func be16(_ b: UnsafeRawBufferPointer, _ at: Int) -> UInt16 {
        UInt16(bigEndian: b.loadUnaligned(fromByteOffset: at, as: UInt16.self))
    }

    @inline(__always)
    static func put32(_ out: inout [UInt8], _ v: UInt32) {
        out.append(UInt8(v >> 24)); out.append(UInt8((v >> 16) & 0xff)); out.append(UInt8((v >> 8) & 0xff)); out.append(UInt8(v & 0xff))
    }

    static func nul(in b: UnsafeRawBufferPointer, from: Int, before end: Int) -> Int? {
        guard from < end, let base = b.baseAddress else { return nil }
        guard let p = memchr(base + from, 0, end - from) else { return nil }
        return base.distance(to: UnsafeRawPointer(p))
    }
}
