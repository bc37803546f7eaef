import CLibgit2
import ObjectStorage
import Glibc
import SystemPackage
import FileSystem

/// The staging index of a `Repository`: path -> blob, mode and the stat data of the file it was
/// read from, in git's index file (`IndexFile`, version 2 written) and in memory in `IndexEntries`
/// (about 85 bytes an entry; libgit2's index held 140, 14 MB at 100k files). Stage 0 only: this
/// store never stages a conflict. The commit path updates only the entries of changed paths and
/// builds its tree along them (`Repository.updateTree`); `writeTree` is the whole tree, for checks
/// and a store's first commit.
public final class Index {
    private unowned let repository: Repository
    private let file: FilePath
    private var staged = IndexEntries()
    /// The file's stat data when it was last read or written: `read()` reads it again only when
    /// they changed (another process wrote it).
    private var stamp: FileStat.Identity?
    /// Marks an entry that holds the stat data of a file this process wrote with a `WriteStamp` as
    /// its mtime (`add(_:blob:mode:stat:stamped:)`): while `lstat` still gives exactly those stat
    /// data, the file holds the entry's blob, however close a write came after it. Kept in the
    /// record in memory only: replaced, removed or read again from disk, the entry has none.
    static let stampedMark = UInt16(1)
    /// Whether any entry may carry `stampedMark` (`isStamped` looks only then).
    private var mayHoldStamps = false

    init(repository: Repository) throws(GitError) {
        self.repository = repository
        self.file = repository.gitDir.appending("index")
        try read(force: true)
    }

    public enum AddOutcome: Sendable, Equatable {
        /// The path's current content and stat data are in the index.
        case added
        /// Nothing is at the path (it was deleted meanwhile).
        case missing
        /// The path is a directory.
        case directory
    }

    /// Re-reads the index file if another process changed it (or always, with `force`; a missing
    /// file then empties the index), and drops every stamped mark, also when the entries are kept:
    /// O(entries), a fraction of a millisecond at 100k; a running agent reads its index once
    /// (`Store.deferIndexWrites`).
    public func read(force: Bool = false) throws(GitError) {
        defer { clearStamps() }
        let now: FileStat?
        do { now = try FileStat.of(file) } catch { throw Self.failure("cannot look at \(file): \(error)", call: "index read", errno: error.rawValue) }
        guard let now else {
            if force { staged.removeAll() }
            stamp = nil
            return
        }
        guard force || now.identity != stamp else { return }
        // Read whole, not mapped: a file cut short under a mapping would kill the process.
        let bytes: [UInt8]
        do { bytes = try Files.read(file) } catch {
            throw Self.failure("cannot read \(file): \(error); check that the store's directory is readable", call: "index read", errno: error.rawValue)
        }
        var fresh = IndexEntries()
        var damage: IndexFile.Damage?
        bytes.withUnsafeBytes { buffer in
            do throws(IndexFile.Damage) { try IndexFile.read(buffer, into: &fresh) } catch { damage = error }
        }
        if let damage {
            throw GitError(code: GitError.Code.generic, errorClass: Self.indexClass,
                           message: "the index \(file) cannot be read: \(damage.reason); remove it and the agent rebuilds it from the last commit (every file is read again)",
                           call: "index read")
        }
        staged = fresh
        stamp = now.identity
    }

    private func clearStamps() {
        if mayHoldStamps { staged.maskMarks(keeping: ~Self.stampedMark) }
        mayHoldStamps = false
    }

    /// Whether `path`'s entry is marked as written by this process with a stamped mtime (see
    /// `stampedMark`): its stat data, when a file still has them, stand for its bytes.
    public func isStamped(_ path: FilePath) -> Bool {
        guard mayHoldStamps else { return false }
        let (at, found) = path.withBytes { staged.locate($0) }
        return found && staged.record(at: at).marks & Self.stampedMark != 0
    }

    /// Hashes the work-tree file at `path` (relative to the work tree) into the object database,
    /// byte for byte, and stages it with its stat data. Links are stored as links, never followed.
    public func add(_ path: FilePath) throws(GitError) -> AddOutcome {
        let absolute = repository.workdir.pushing(path)
        let st: FileStat?
        do { st = try FileStat.of(absolute) } catch { throw Self.failure("cannot look at \(absolute): \(error)", call: "index add", errno: error.rawValue) }
        guard let st else { return .missing }
        if st.kind == .directory { return .directory }
        let blob: Oid
        let mode: UInt32
        switch st.kind {
        case .symlink:
            let target: [UInt8]
            do { target = try Files.readLink(absolute) } catch { return .missing }
            blob = try repository.createBlob(target)
            mode = 0o120000
        case .regular:
            guard case .written(let id) = try repository.writeBlob(fromFile: absolute) else { return .missing }
            blob = id
            mode = st.isExecutable ? 0o100755 : 0o100644
        default:
            throw GitError(code: GitError.Code.invalid, errorClass: Self.indexClass,
                           message: "\(absolute) is a \(st.kind), which git cannot store", call: "index add")
        }
        try add(path, blob: blob, mode: mode, stat: IndexStat(st))
        return .added
    }

    /// Stages a blob already in the object database at `path`, with no stat data (so any later scan
    /// re-reads the file).
    public func add(_ path: FilePath, blob: Oid, mode: UInt32) throws(GitError) {
        try stage(path, IndexRecord(oid: blob, mode: mode))
    }

    /// Stages a blob already in the object database at `path` with the stat data of the file the
    /// caller has just written there, so later scans trust it without re-reading the file.
    /// - Parameter stamped: the file is one this process wrote with a `WriteStamp` mtime that
    ///   `stat` shows (see `isStamped`).
    public func add(_ path: FilePath, blob: Oid, mode: UInt32, stat: IndexStat, stamped: Bool = false) throws(GitError) {
        if stamped { mayHoldStamps = true }
        try stage(path, IndexRecord(
            oid: blob, mode: mode, size: UInt32(truncatingIfNeeded: stat.size),
            mtimeSeconds: Int32(truncatingIfNeeded: stat.mtimeSeconds), mtimeNanoseconds: UInt32(truncatingIfNeeded: stat.mtimeNanoseconds),
            ctimeSeconds: Int32(truncatingIfNeeded: stat.ctimeSeconds), ctimeNanoseconds: UInt32(truncatingIfNeeded: stat.ctimeNanoseconds),
            inode: UInt32(truncatingIfNeeded: stat.inode),
            marks: stamped ? Self.stampedMark : 0))
    }

    /// Sets `path`'s entry as git's index does: a file entry where a directory of it would be
    /// (`a` for `a/b`) goes, and so does every entry under `path/` (a directory the file replaces).
    private func stage(_ path: FilePath, _ record: IndexRecord) throws(GitError) {
        let bytes = path.bytes
        guard IndexFile.isValidPath(bytes) else {
            throw GitError(code: GitError.Code.invalid, errorClass: Self.indexClass,
                           message: "invalid path '\(path.display)': a store path has no empty, '.', '..' or '.git' part", call: "index add")
        }
        // The mode as git's index keeps it (as `git_index_add` made it): a link, a submodule, or a
        // file that is executable or not; no other permission bits.
        var record = record
        switch record.mode & 0o170000 {
        case 0o120000: record.mode = 0o120000
        case 0o160000: record.mode = 0o160000
        case 0o100000: record.mode = record.mode & 0o100 != 0 ? 0o100755 : 0o100644
        default:
            throw GitError(code: GitError.Code.invalid, errorClass: Self.indexClass,
                           message: "invalid mode \(String(record.mode, radix: 8)) for '\(path.display)': an index holds files, links and submodules", call: "index add")
        }
        // A path after every one held (a first commit stages its files in order): nothing lies
        // under it, and a directory of it is no file entry when the last entry lies under that
        // directory too (an index never holds `a` beside `a/b`); only the others are looked up.
        // Three or four lookups a file were a tenth of a 100k-file first commit (issue 45).
        let last = staged.last.map { staged.path(at: $0) }
        if last.map({ IndexEntries.compare($0, bytes) < 0 }) ?? true {
            for (i, byte) in bytes.enumerated() where byte == UInt8(ascii: "/") {
                if let last, last.count > i, last[..<(i + 1)].elementsEqual(bytes[..<(i + 1)]) { continue }
                let (at, found) = staged.locate(Array(bytes[..<i]))
                if found { staged.remove(at: at) }
            }
            bytes.withUnsafeBytes { staged.appendInOrder(record, path: $0) }
            return
        }
        for (i, byte) in bytes.enumerated() where byte == UInt8(ascii: "/") {
            let (at, found) = staged.locate(Array(bytes[..<i]))
            if found { staged.remove(at: at) }
        }
        staged.removeAll(withPrefix: bytes + [UInt8(ascii: "/")])
        staged.set(record, path: bytes)
    }

    /// Unstages one path (no error if it was not staged).
    public func remove(_ path: FilePath) throws(GitError) {
        let (at, found) = path.withBytes { staged.locate($0) }
        if found { staged.remove(at: at) }
    }

    /// Unstages every path under `path/`.
    public func removeDirectory(_ path: FilePath) throws(GitError) {
        staged.removeAll(withPrefix: path.bytes + [UInt8(ascii: "/")])
    }

    /// The entry for a path, if any.
    public func entry(_ path: FilePath) -> IndexEntry? {
        let (at, found) = path.withBytes { staged.locate($0) }
        return found ? IndexEntry(staged.record(at: at), path: path) : nil
    }

    public var count: Int { staged.count }

    /// The entry for a path and its position in the index (positions hold while the index is not
    /// changed).
    public func find(_ path: FilePath) -> (position: Int, entry: IndexEntry)? {
        let (at, found) = path.withBytes { staged.locate($0) }
        guard found else { return nil }
        return (staged.position(of: at), IndexEntry(staged.record(at: at), path: path))
    }

    /// The path of the entry at `position` (0 ..< count).
    public func path(at position: Int) -> FilePath? {
        staged.location(ofPosition: position).map { FilePath(bytes: staged.path(at: $0)) }
    }

    /// The entries strictly under directory `path` (`path/...`), found by binary search: costs the
    /// number of entries returned, not the size of the index.
    public func entries(under path: FilePath) -> [IndexEntry] {
        var result: [IndexEntry] = []
        forEach(under: path) { record, bytes in
            result.append(IndexEntry(record, path: FilePath(bytes: Array(bytes))))
            return true
        }
        return result
    }

    /// Whether any entry lies under directory `path/` other than `except`: O(log entries).
    public func hasEntries(under path: FilePath, except: FilePath) -> Bool {
        var any = false
        let skip = except.bytes
        forEach(under: path) { _, bytes in
            if bytes.elementsEqual(skip) { return true }
            any = true
            return false
        }
        return any
    }

    /// Calls `body` with each entry under `path/` in order, while it returns true.
    private func forEach(under path: FilePath, _ body: (IndexRecord, UnsafeRawBufferPointer) -> Bool) {
        let prefix = path.bytes + [UInt8(ascii: "/")]
        var at = staged.normalized(staged.locate(prefix).location)
        while let l = at {
            let goOn = staged.withPath(at: l) { bytes -> Bool in
                guard bytes.count >= prefix.count, memcmp(bytes.baseAddress!, prefix, prefix.count) == 0 else { return false }
                return body(staged.record(at: l), bytes)
            }
            guard goOn else { return }
            at = staged.next(l)
        }
    }

    /// Every entry, in index order.
    public func entries() -> [IndexEntry] {
        var result: [IndexEntry] = []
        result.reserveCapacity(count)
        staged.forEach { record, bytes in result.append(IndexEntry(record, path: FilePath(bytes: Array(bytes)))) }
        return result
    }

    /// The entries as they are now (shared until either side changes).
    var storage: IndexEntries { staged }

    /// Writes the staged tree (and its subtrees) into the object database: O(entries), for checks
    /// (`SYNCAGENT_VERIFY_TREES`), a fast-forward that keeps local changes and a store's first
    /// commit (where it is checked against nothing else: the e2e suite's later commits, built
    /// along their paths, are checked against it). Built here from the
    /// sorted entries, one tree builder per open directory, not through `updateTree`: the check it
    /// makes of the commit path's trees is only worth something if it is another way to the tree.
    public func writeTree() throws(GitError) -> Oid {
        try repository.writeTree(sortedEntries: staged)
    }

    /// This process's user and group, written as every entry's owner.
    static let owner = (uid: getuid(), gid: getgid())

    /// Saves the index file atomically: written to `index.lock` (which must not exist: another
    /// writer holds it), then renamed over `index`. The caller flushes it (`Durability`).
    public func write() throws(GitError) {
        let lock = repository.gitDir.appending("index.lock")
        let fd = lock.withPlatformString { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
        guard fd >= 0 else {
            let err = errno
            if err == EEXIST {
                throw GitError(code: GitError.Code.locked, errorClass: Self.indexClass,
                               message: "\(lock) exists: another process is writing the index, or one died doing it (remove the file if no syncagent or git runs on this store)",
                               call: "index write", osError: err)
            }
            throw Self.failure("cannot create \(lock): \(Errno(rawValue: err)); check that the store's directory is writable and the disk is not full", call: "index write", errno: err)
        }
        var failed: GitError?
        do {
            try IndexFile.write(staged, owner: Self.owner) { piece in
                var at = 0
                while at < piece.count {
                    let n = Glibc.write(fd, piece.baseAddress! + at, piece.count - at)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw Self.failure("cannot write \(lock): \(Errno(rawValue: errno)); check that the disk is not full", call: "index write", errno: errno)
                    }
                    at += n
                }
            }
        } catch let error as GitError {
            failed = error
        } catch {
            failed = Self.failure("cannot write \(lock): \(error)", call: "index write", errno: EIO)
        }
        if close(fd) != 0, failed == nil { failed = Self.failure("cannot write \(lock): \(Errno(rawValue: errno)); check that the disk is not full", call: "index write", errno: errno) }
        if failed == nil, lock.withPlatformString({ from in file.withPlatformString { rename(from, $0) } }) != 0 {
            failed = Self.failure("cannot rename \(lock) to \(file): \(Errno(rawValue: errno))", call: "index write", errno: errno)
        }
        if let failed {
            _ = lock.withPlatformString { unlink($0) }
            throw failed
        }
        stamp = (try? FileStat.of(file))??.identity
    }

    /// libgit2's error class for the index (`GIT_ERROR_INDEX`), kept for callers that tell errors by it.
    static let indexClass: Int32 = 10

    private static func failure(_ message: String, call: String, errno: Int32) -> GitError {
        GitError(code: GitError.Code.generic, errorClass: GitError.Class.os, message: message, call: call, osError: errno)
    }
}

@available(*, unavailable)
extension Index: Sendable {}

/// The stat data of a file as the index keeps it.
public struct IndexStat: Sendable, Equatable {
    public var size: Int64
    public var mtimeSeconds: Int64
    public var mtimeNanoseconds: Int64
    public var ctimeSeconds: Int64
    public var ctimeNanoseconds: Int64
    public var inode: UInt64
    public var device: UInt64
    public init(size: Int64, mtimeSeconds: Int64, mtimeNanoseconds: Int64, ctimeSeconds: Int64,
                ctimeNanoseconds: Int64, inode: UInt64, device: UInt64) {
        self.size = size
        self.mtimeSeconds = mtimeSeconds
        self.mtimeNanoseconds = mtimeNanoseconds
        self.ctimeSeconds = ctimeSeconds
        self.ctimeNanoseconds = ctimeNanoseconds
        self.inode = inode
        self.device = device
    }
}

extension IndexStat {
    /// The stat data of a file as `lstat` gave it.
    public init(_ st: FileStat) {
        self.init(size: st.size, mtimeSeconds: st.mtimeSeconds, mtimeNanoseconds: st.mtimeNanoseconds,
                  ctimeSeconds: st.ctimeSeconds, ctimeNanoseconds: st.ctimeNanoseconds, inode: st.inode, device: st.device)
    }
}

/// One staged path with the stat data git keeps to tell whether the file changed.
public struct IndexEntry: Sendable, Equatable {
    public let path: FilePath
    public let oid: Oid
    public let mode: UInt32
    public let size: UInt32
    public let mtimeSeconds: Int32
    public let mtimeNanoseconds: UInt32
    public let ctimeSeconds: Int32
    public let ctimeNanoseconds: UInt32
    public let inode: UInt32
    public var isLink: Bool { mode == 0o120000 }

    init(_ r: IndexRecord, path: FilePath) {
        self.path = path
        oid = r.oid
        mode = r.mode
        size = r.size
        mtimeSeconds = r.mtimeSeconds
        mtimeNanoseconds = r.mtimeNanoseconds
        ctimeSeconds = r.ctimeSeconds
        ctimeNanoseconds = r.ctimeNanoseconds
        inode = r.inode
    }

    init(_ e: git_index_entry) {
        path = FilePath(platformString: e.path)
        oid = Oid(e.id)
        mode = e.mode
        size = e.file_size
        mtimeSeconds = e.mtime.seconds
        mtimeNanoseconds = e.mtime.nanoseconds
        ctimeSeconds = e.ctime.seconds
        ctimeNanoseconds = e.ctime.nanoseconds
        inode = e.ino
    }
}

/// Stage-0 entries under `path/` of any libgit2 index, found by binary search.
func indexHasEntries(_ handle: OpaquePointer, under path: FilePath, except: FilePath) -> Bool {
    let prefix = path.bytes + [UInt8(ascii: "/")]
    var position = 0
    let found = (prefix + [0]).withUnsafeBufferPointer { buf in
        buf.withMemoryRebound(to: CChar.self) { git_index_find_prefix(&position, handle, $0.baseAddress) }
    }
    guard found == 0 else { return false }
    let count = git_index_entrycount(handle)
    // The first two entries under the prefix tell: at most one of them is `except`.
    for i in position..<min(position + 2, count) {
        guard let ptr = git_index_get_byindex(handle, i) else { break }
        let entry = IndexEntry(ptr.pointee)
        guard entry.path.bytes.starts(with: prefix) else { return false }
        if entry.path != except { return true }
    }
    return false
}

func indexEntries(_ handle: OpaquePointer, under path: FilePath) -> [IndexEntry] {
    let prefix = path.bytes + [UInt8(ascii: "/")]
    var position = 0
    let found = (prefix + [0]).withUnsafeBufferPointer { buf in
        buf.withMemoryRebound(to: CChar.self) { git_index_find_prefix(&position, handle, $0.baseAddress) }
    }
    guard found == 0 else { return [] }
    var result: [IndexEntry] = []
    let count = git_index_entrycount(handle)
    while position < count, let ptr = git_index_get_byindex(handle, position) {
        let entry = IndexEntry(ptr.pointee)
        guard entry.path.bytes.starts(with: prefix) else { break }
        result.append(entry)
        position += 1
    }
    return result
}
