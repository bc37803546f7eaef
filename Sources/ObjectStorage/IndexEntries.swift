import Glibc

/// One staged path's fixed part: what git's index keeps of it, less the owner and the device
/// (every entry this store writes is its user's; neither git nor this store compares st_dev). 56
/// bytes with its path's place; libgit2 spent about 140 an entry (an allocation each, a hash map
/// and a vector of pointers): 14 MB at 100k files, about 8 here.
package struct IndexRecord: Equatable, Sendable {
    package var oid: Oid
    package var mode: UInt32
    package var size: UInt32
    package var mtimeSeconds: Int32
    package var mtimeNanoseconds: UInt32
    package var ctimeSeconds: Int32
    package var ctimeNanoseconds: UInt32
    package var inode: UInt32
    /// Where the path lies in its chunk's bytes.
    var pathStart: UInt32 = 0
    var pathLength: UInt16 = 0
    /// Marks kept in memory only (`Index.stampedMark`); never written.
    package var marks: UInt16 = 0

    package init(oid: Oid, mode: UInt32, size: UInt32 = 0, mtimeSeconds: Int32 = 0, mtimeNanoseconds: UInt32 = 0,
                 ctimeSeconds: Int32 = 0, ctimeNanoseconds: UInt32 = 0, inode: UInt32 = 0, marks: UInt16 = 0) {
        self.oid = oid
        self.mode = mode
        self.size = size
        self.mtimeSeconds = mtimeSeconds
        self.mtimeNanoseconds = mtimeNanoseconds
        self.ctimeSeconds = ctimeSeconds
        self.ctimeNanoseconds = ctimeNanoseconds
        self.inode = inode
        self.marks = marks
    }

    /// The same data with another place (equality of records ignores where their paths lie).
    package static func == (l: IndexRecord, r: IndexRecord) -> Bool {
        l.oid == r.oid && l.mode == r.mode && l.size == r.size && l.mtimeSeconds == r.mtimeSeconds
            && l.mtimeNanoseconds == r.mtimeNanoseconds && l.ctimeSeconds == r.ctimeSeconds
            && l.ctimeNanoseconds == r.ctimeNanoseconds && l.inode == r.inode && l.marks == r.marks
    }
}

/// The stage-0 entries of an index, sorted by path bytes (git's order, which is also a tree walk's),
/// in chunks of at most `chunkLimit` records, each chunk with its paths' bytes in one array. A
/// lookup is two binary searches; an insertion moves at most one chunk's records; appends in order
/// (a first sync, a file read back) fill chunks whole. No hash map, no allocation per entry.
package struct IndexEntries {
    /// Records a chunk holds at most (7 KB of them: a chunk of 512 spanned five of the bench's
    /// directories, and its paths shared 4 bytes instead of 11).
    package let chunkLimit: Int

    /// Records in path order and their paths: the part every path of the chunk begins with
    /// (`prefix`, set when the chunk is full or split: a directory's name, mostly) once, the rest
    /// of each in `bytes`. The bench's 100k paths of 17 bytes kept 7 each.
    struct Chunk {
        var records: [IndexRecord] = []
        var bytes: [UInt8] = []
        var prefix: [UInt8] = []
        /// Bytes of `bytes` no record names any more (removed or replaced paths).
        var dead = 0

        init(capacity: Int) { records.reserveCapacity(capacity) }

        /// The part of path `i` after `prefix`.
        func suffix(_ i: Int) -> ArraySlice<UInt8> {
            let r = records[i]
            return bytes[Int(r.pathStart)..<(Int(r.pathStart) + Int(r.pathLength))]
        }

        /// Path `i` whole, handed to `body` (put together on the stack when it has a prefix).
        func withPath<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            let tail = suffix(i)
            guard !prefix.isEmpty else { return try tail.withUnsafeBytes(body) }
            return try withUnsafeTemporaryAllocation(byteCount: prefix.count + tail.count, alignment: 1) { out in
                prefix.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                tail.withUnsafeBytes { if let from = $0.baseAddress { (out.baseAddress! + prefix.count).copyMemory(from: from, byteCount: $0.count) } }
                return try body(UnsafeRawBufferPointer(out))
            }
        }

        func path(_ i: Int) -> [UInt8] { prefix + suffix(i) }

        /// memcmp order of path `i` against `key` (negative: the path comes first). Through the
        /// arrays' storage in place: a slice of `bytes` per comparison cost a retain and a release,
        /// and lookups were a fifth of a 100k-file start-up commit's engine time.
        @inline(__always)
        func compare(_ i: Int, _ key: UnsafeRawBufferPointer) -> Int32 {
            let p = prefix.count
            if p > 0 {
                let n = min(p, key.count)
                let c = prefix.withUnsafeBytes { n == 0 ? 0 : IndexEntries.order($0.baseAddress!, key.baseAddress!, n) }
                if c != 0 { return c }
                if key.count < p { return 1 }  // the key ends inside the prefix: the path is longer
            }
            let (start, length) = records.withUnsafeBufferPointer { (Int($0[i].pathStart), Int($0[i].pathLength)) }
            return bytes.withUnsafeBytes { all in
                IndexEntries.compare(UnsafeRawBufferPointer(rebasing: all[start..<(start + length)]),
                                     UnsafeRawBufferPointer(rebasing: key[p...]))
            }
        }

        /// Appends `record` with `path` at the end of this chunk's records.
        mutating func append(_ record: IndexRecord, path: some Collection<UInt8>) {
            insert(record, path: path, at: records.count)
        }

        mutating func insert(_ record: IndexRecord, path: some Collection<UInt8>, at slot: Int) {
            if !prefix.isEmpty, !path.starts(with: prefix) { expand() }
            var r = record
            r.pathStart = UInt32(bytes.count)
            r.pathLength = UInt16(path.count - prefix.count)  // (a path is at most PATH_MAX, 4096 bytes)
            bytes.append(contentsOf: path.dropFirst(prefix.count))
            records.insert(r, at: slot)
        }

        /// Its bytes in an array of their size (growth by doubling left up to half of it unused),
        /// with the part all its paths share taken out once.
        mutating func seal() {
            guard let first = records.indices.first, let last = records.indices.last else { return }
            let a = path(first), b = path(last)  // (sorted: what these two share, all share)
            var shared = 0
            while shared < min(a.count, b.count), a[shared] == b[shared] { shared += 1 }
            if shared > prefix.count {
                rebuild(prefix: Array(a[..<shared]))
            } else if bytes.capacity > bytes.count + bytes.count / 16 {
                bytes = bytes.withUnsafeBufferPointer { Array($0) }
            }
        }

        /// The same records with whole paths (a path that does not begin with the prefix came).
        mutating func expand() { rebuild(prefix: []) }

        /// The same records with only the bytes they name, after `prefix` (which every path has).
        mutating func rebuild(prefix newPrefix: [UInt8]) {
            var fresh = Chunk(capacity: records.capacity)
            fresh.prefix = newPrefix
            var size = 0
            for r in records { size += Int(r.pathLength) }
            fresh.bytes.reserveCapacity(size + records.count * (prefix.count - newPrefix.count))
            for i in records.indices { fresh.append(records[i], path: path(i)) }
            self = fresh
        }

        mutating func remove(at slot: Int) {
            dead += Int(records[slot].pathLength)
            records.remove(at: slot)
            if dead > 256 && dead * 2 > bytes.count { rebuild(prefix: prefix) }
        }

        /// Splits off the upper half of the records into a chunk of its own.
        mutating func split() -> Chunk {
            let half = records.count / 2
            var upper = Chunk(capacity: records.capacity), lower = Chunk(capacity: records.capacity)
            for i in records.indices {
                if i < half { lower.append(records[i], path: path(i)) } else { upper.append(records[i], path: path(i)) }
            }
            lower.seal()
            upper.seal()
            self = lower
            return upper
        }
    }

    var chunks: [Chunk] = []
    package private(set) var count = 0
    /// Each chunk's first position, rebuilt when needed after an insertion or removal.
    private var starts: [Int] = []
    private var startsValid = true

    package init(chunkLimit: Int = 128) { self.chunkLimit = chunkLimit }

    /// A location: the chunk and the slot in it.
    package struct Location: Equatable {
        var chunk: Int
        var slot: Int
    }

    // MARK: Order

    /// memcmp order of two paths, the shorter first when one begins the other.
    @inline(__always)
    package static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int32 {
        a.withUnsafeBytes { a in b.withUnsafeBytes { compare(a, $0) } }
    }

    /// memcmp order of two paths, the shorter first when one begins the other.
    @inline(__always)
    package static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int32 {
        let n = min(a.count, b.count)
        if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            let c = order(pa, pb, n)
            if c != 0 { return c }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    /// memcmp's order of `n` bytes (-1, 0 or 1), in Swift: a call to C's memcmp made the compiler
    /// keep the chunk's arrays alive around it, a retain and a release of each at every step of
    /// a lookup (half of its time). Paths are short; eight bytes at a time.
    @inline(__always)
    static func order(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ n: Int) -> Int32 {
        var i = 0
        while i + 8 <= n {
            let x = a.loadUnaligned(fromByteOffset: i, as: UInt64.self).bigEndian
            let y = b.loadUnaligned(fromByteOffset: i, as: UInt64.self).bigEndian
            if x != y { return x < y ? -1 : 1 }
            i += 8
        }
        while i < n {
            let x = a.load(fromByteOffset: i, as: UInt8.self), y = b.load(fromByteOffset: i, as: UInt8.self)
            if x != y { return x < y ? -1 : 1 }
            i += 1
        }
        return 0
    }

    /// Where `key` is or would go: `found` when a record has exactly this path.
    package func locate(_ key: UnsafeRawBufferPointer) -> (location: Location, found: Bool) {
        // The chunks are borrowed in place through a span, not copied out: a copy is three arrays
        // retained and released at every step of the search (half of a lookup's time).
        let chunks = self.chunks.span
        guard !chunks.isEmpty else { return (Location(chunk: 0, slot: 0), false) }
        // The last chunk whose first path is <= key (the first when key precedes all).
        var low = 0, high = chunks.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if chunks[mid].compare(0, key) <= 0 { low = mid } else { high = mid - 1 }
        }
        var lo = 0, hi = chunks[low].records.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let c = chunks[low].compare(mid, key)
            if c == 0 { return (Location(chunk: low, slot: mid), true) }
            if c < 0 { lo = mid + 1 } else { hi = mid }
        }
        return (Location(chunk: low, slot: lo), false)
    }

    package func locate(_ key: [UInt8]) -> (location: Location, found: Bool) {
        key.withUnsafeBytes { locate($0) }
    }

    // MARK: Reading

    package func record(at l: Location) -> IndexRecord { chunks[l.chunk].records[l.slot] }

    package func path(at l: Location) -> [UInt8] { chunks[l.chunk].path(l.slot) }

    package func withPath<R>(at l: Location, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try chunks[l.chunk].withPath(l.slot, body)
    }

    /// The location after `l` (nil past the last record).
    package func next(_ l: Location) -> Location? {
        if l.slot + 1 < chunks[l.chunk].records.count { return Location(chunk: l.chunk, slot: l.slot + 1) }
        return l.chunk + 1 < chunks.count ? Location(chunk: l.chunk + 1, slot: 0) : nil
    }

    /// A location as it may come from `locate` (a slot one past its chunk's end) moved to the
    /// record it stands before, nil at the very end.
    package func normalized(_ l: Location) -> Location? {
        guard l.chunk < chunks.count else { return nil }
        if l.slot < chunks[l.chunk].records.count { return l }
        return l.chunk + 1 < chunks.count ? Location(chunk: l.chunk + 1, slot: 0) : nil
    }

    package var first: Location? { chunks.isEmpty ? nil : Location(chunk: 0, slot: 0) }

    package var last: Location? { chunks.isEmpty ? nil : Location(chunk: chunks.count - 1, slot: chunks[chunks.count - 1].records.count - 1) }

    /// The position (0 ..< count) of a location.
    package mutating func position(of l: Location) -> Int {
        rebuildStarts()
        return starts[l.chunk] + l.slot
    }

    /// The location of a position (0 ..< count).
    package mutating func location(ofPosition p: Int) -> Location? {
        guard p >= 0, p < count else { return nil }
        rebuildStarts()
        var low = 0, high = starts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if starts[mid] <= p { low = mid } else { high = mid - 1 }
        }
        return Location(chunk: low, slot: p - starts[low])
    }

    private mutating func rebuildStarts() {
        guard !startsValid else { return }
        starts.removeAll(keepingCapacity: true)
        var at = 0
        for c in chunks {
            starts.append(at)
            at += c.records.count
        }
        startsValid = true
    }

    /// Calls `body` with each record and its path, in order.
    package func forEach(_ body: (IndexRecord, UnsafeRawBufferPointer) throws -> Void) rethrows {
        for chunk in chunks {
            for i in chunk.records.indices {
                try chunk.withPath(i) { try body(chunk.records[i], $0) }
            }
        }
    }

    // MARK: Changing

    /// Sets the record at `path`: replaced in place when the path is there, inserted otherwise.
    /// Nothing else is touched (the caller clears files and directories in the way).
    package mutating func set(_ record: IndexRecord, path: [UInt8]) {
        let (l, found) = locate(path)
        if found {
            var r = record
            r.pathStart = chunks[l.chunk].records[l.slot].pathStart
            r.pathLength = chunks[l.chunk].records[l.slot].pathLength
            chunks[l.chunk].records[l.slot] = r
            return
        }
        insert(record, path: path, at: l)
    }

    /// Appends a record whose path follows every path held (reading a file in order).
    package mutating func appendInOrder(_ record: IndexRecord, path: UnsafeRawBufferPointer) {
        if chunks.isEmpty || chunks[chunks.count - 1].records.count >= chunkLimit {
            if !chunks.isEmpty { chunks[chunks.count - 1].seal() }
            chunks.append(Chunk(capacity: chunkLimit))
        }
        chunks[chunks.count - 1].append(record, path: path)
        count += 1
        startsValid = false
    }

    private mutating func insert(_ record: IndexRecord, path: [UInt8], at l: Location) {
        count += 1
        startsValid = false
        guard !chunks.isEmpty else {
            var c = Chunk(capacity: chunkLimit)
            c.append(record, path: path)
            chunks.append(c)
            return
        }
        if chunks[l.chunk].records.count < chunkLimit {
            chunks[l.chunk].insert(record, path: path, at: l.slot)
            return
        }
        // A full chunk: past its end, the front of the next chunk when it has room (paths added
        // in descending order, as directory markers are, would otherwise make a chunk each), else
        // a new chunk (appends in order fill chunks whole); within it, it splits in two.
        if l.slot == chunks[l.chunk].records.count {
            if l.chunk + 1 < chunks.count, chunks[l.chunk + 1].records.count < chunkLimit {
                chunks[l.chunk + 1].insert(record, path: path, at: 0)
                return
            }
            chunks[l.chunk].seal()
            var c = Chunk(capacity: chunkLimit)
            c.append(record, path: path)
            chunks.insert(c, at: l.chunk + 1)
            return
        }
        let upper = chunks[l.chunk].split()
        chunks.insert(upper, at: l.chunk + 1)
        let lowerCount = chunks[l.chunk].records.count
        if l.slot <= lowerCount {
            chunks[l.chunk].insert(record, path: path, at: l.slot)
        } else {
            chunks[l.chunk + 1].insert(record, path: path, at: l.slot - lowerCount)
        }
    }

    /// Removes the record at `l`.
    package mutating func remove(at l: Location) {
        chunks[l.chunk].remove(at: l.slot)
        if chunks[l.chunk].records.isEmpty { chunks.remove(at: l.chunk) }
        count -= 1
        startsValid = false
    }

    /// Removes every record whose path begins with `prefix` (a directory's `dir/`): O(log n + removed).
    @discardableResult
    package mutating func removeAll(withPrefix prefix: [UInt8]) -> Int {
        var removed = 0
        while true {
            let (l, _) = locate(prefix)
            guard let at = normalized(l),
                  withPath(at: at, { $0.count >= prefix.count && memcmp($0.baseAddress!, prefix, prefix.count) == 0 }) else { break }
            // Every record of this chunk from `at` on that has the prefix, at once.
            var end = at.slot
            let chunk = chunks[at.chunk]
            while end < chunk.records.count,
                  chunk.withPath(end, { $0.count >= prefix.count && memcmp($0.baseAddress!, prefix, prefix.count) == 0 }) {
                end += 1
            }
            for _ in at.slot..<end { chunks[at.chunk].remove(at: at.slot) }
            if chunks[at.chunk].records.isEmpty { chunks.remove(at: at.chunk) }
            removed += end - at.slot
            count -= end - at.slot
            startsValid = false
        }
        return removed
    }

    /// Sets `marks` to `marks & keep` on every record.
    package mutating func maskMarks(keeping keep: UInt16) {
        for c in chunks.indices {
            for i in chunks[c].records.indices { chunks[c].records[i].marks &= keep }
        }
    }

    /// Drops every record.
    package mutating func removeAll() {
        chunks = []
        count = 0
        startsValid = false
    }
}
