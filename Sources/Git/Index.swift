import CLibgit2
import ObjectStorage
import Glibc
import SystemPackage
import FileSystem

/// The staging index of a `Repository`: the commit path updates only the entries of changed paths
/// and writes the tree from it, reusing libgit2's tree cache for everything untouched.
public final class Index {
    let handle: OpaquePointer
    private unowned let repository: Repository
    /// Marks an entry that holds the stat data of a file this process wrote with a `WriteStamp` as
    /// its mtime (`add(_:blob:mode:stat:stamped:)`): while `lstat` still gives exactly those stat
    /// data, the file holds the entry's blob, however close a write came after it. The mark is a
    /// bit of the entry's `flags_extended` that libgit2 keeps in memory only: 1.5 uses 1 << 2
    /// (up to date) there and 1 << 13, 1 << 14 on disk, writes only the on-disk bits
    /// (`GIT_INDEX_ENTRY_EXTENDED_FLAGS`), and `git_index_add` copies the whole entry. So the mark
    /// goes with its entry: replaced, removed or read again from disk, the entry has none. A set of
    /// the paths beside the index held 2 MB for a first sync of 100k files, 3 MB while it grew.
    static let stampedBit = UInt16(1 << 3)
    /// Whether any entry may carry `stampedBit` (`isStamped` looks only then).
    private var mayHoldStamps = false

    init(handle: OpaquePointer, repository: Repository) {
        self.handle = handle
        self.repository = repository
        clearStamps()  // libgit2 reads `flags_extended` from the file unmasked: a damaged one marks nothing
    }

    deinit { git_index_free(handle) }

    public enum AddOutcome: Sendable, Equatable {
        /// The path's current content and stat data are in the index.
        case added
        /// Nothing is at the path (it was deleted meanwhile).
        case missing
        /// The path is a directory.
        case directory
    }

    /// Re-reads the index file if another process changed it (or always, with `force`), and drops
    /// every stamped mark, also when libgit2 kept the entries (the file had not changed): O(entries),
    /// a fraction of a millisecond at 100k; a running agent reads its index once
    /// (`Store.deferIndexWrites`).
    public func read(force: Bool = false) throws(GitError) {
        try check(git_index_read(handle, force ? 1 : 0), "git_index_read")
        clearStamps()
    }

    private func clearStamps() {
        for i in 0..<git_index_entrycount(handle) {
            guard let entry = git_index_get_byindex(handle, i) else { continue }
            UnsafeMutablePointer(mutating: entry).pointee.flags_extended &= ~Self.stampedBit
        }
        mayHoldStamps = false
    }

    /// Whether `path`'s entry is marked as written by this process with a stamped mtime (see
    /// `stampedBit`): its stat data, when a file still has them, stand for its bytes.
    public func isStamped(_ path: FilePath) -> Bool {
        guard mayHoldStamps, let entry = path.withPlatformString({ git_index_get_bypath(handle, $0, 0) }) else { return false }
        return entry.pointee.flags_extended & Self.stampedBit != 0
    }

    /// Hashes the work-tree file at `path` (relative to the work tree) into the object database and
    /// stages it. Links are stored as links, never followed.
    public func add(_ path: FilePath) throws(GitError) -> AddOutcome {
        let rc = path.withPlatformString { git_index_add_bypath(handle, $0) }
        if rc == GitError.Code.notFound { return .missing }
        if rc == GitError.Code.directory { return .directory }
        try check(rc, "git_index_add_bypath(\(path))")
        return .added
    }

    /// Stages a blob already in the object database at `path`, with no stat data (so any later scan
    /// re-reads the file).
    public func add(_ path: FilePath, blob: Oid, mode: UInt32) throws(GitError) {
        let rc = path.withPlatformString { cPath -> Int32 in
            var entry = git_index_entry()
            entry.mode = mode
            entry.id = blob.raw
            entry.path = cPath
            return git_index_add(handle, &entry)
        }
        try check(rc, "git_index_add(\(path))")
    }

    /// This process's user and group (two system calls per staged path before: 20,000 for a
    /// merge of 10k files).
    static let owner = (uid: getuid(), gid: getgid())

    /// Stages a blob already in the object database at `path` with the stat data of the file the
    /// caller has just written there, so later scans trust it without re-reading the file.
    /// - Parameter stamped: the file is one this process wrote with a `WriteStamp` mtime that
    ///   `stat` shows (see `isStamped`).
    public func add(_ path: FilePath, blob: Oid, mode: UInt32, stat: IndexStat, stamped: Bool = false) throws(GitError) {
        if stamped { mayHoldStamps = true }
        let rc = path.withPlatformString { cPath -> Int32 in
            var entry = git_index_entry()
            entry.mode = mode
            entry.id = blob.raw
            entry.path = cPath
            entry.file_size = UInt32(truncatingIfNeeded: stat.size)
            entry.mtime.seconds = Int32(truncatingIfNeeded: stat.mtimeSeconds)
            entry.mtime.nanoseconds = UInt32(truncatingIfNeeded: stat.mtimeNanoseconds)
            entry.ctime.seconds = Int32(truncatingIfNeeded: stat.ctimeSeconds)
            entry.ctime.nanoseconds = UInt32(truncatingIfNeeded: stat.ctimeNanoseconds)
            entry.ino = UInt32(truncatingIfNeeded: stat.inode)
            entry.dev = UInt32(truncatingIfNeeded: stat.device)
            entry.uid = Self.owner.uid
            entry.gid = Self.owner.gid
            entry.flags_extended = stamped ? Self.stampedBit : 0
            return git_index_add(handle, &entry)
        }
        try check(rc, "git_index_add(\(path))")
    }

    /// Unstages one path (no error if it was not staged).
    public func remove(_ path: FilePath) throws(GitError) {
        guard entry(path) != nil else { return }
        let rc = path.withPlatformString { git_index_remove_bypath(handle, $0) }
        try check(rc, "git_index_remove_bypath(\(path))")
    }

    /// Unstages every path under `path/`.
    public func removeDirectory(_ path: FilePath) throws(GitError) {
        let rc = path.withPlatformString { git_index_remove_directory(handle, $0, 0) }
        try check(rc, "git_index_remove_directory(\(path))")
    }

    /// The stage-0 entry for a path, if any.
    public func entry(_ path: FilePath) -> IndexEntry? {
        let ptr = path.withPlatformString { git_index_get_bypath(handle, $0, 0) }
        return ptr.map { IndexEntry($0.pointee) }
    }

    public var count: Int { git_index_entrycount(handle) }

    /// The first entry for a path (the agent's index holds stage 0 only) and its position in the
    /// index (positions hold while the index is not changed).
    public func find(_ path: FilePath) -> (position: Int, entry: IndexEntry)? {
        var position = 0
        guard path.withPlatformString({ git_index_find(&position, handle, $0) }) == 0,
              let ptr = git_index_get_byindex(handle, position) else { return nil }
        return (position, IndexEntry(ptr.pointee))
    }

    /// The path of the entry at `position` (0 ..< count).
    public func path(at position: Int) -> FilePath? {
        git_index_get_byindex(handle, position).map { FilePath(platformString: $0.pointee.path) }
    }

    /// The entries strictly under directory `path` (`path/...`), found by binary search: costs the
    /// number of entries returned, not the size of the index.
    public func entries(under path: FilePath) -> [IndexEntry] { indexEntries(handle, under: path) }

    /// Whether any entry lies under directory `path/` other than `except`: O(log entries).
    public func hasEntries(under path: FilePath, except: FilePath) -> Bool { indexHasEntries(handle, under: path, except: except) }

    /// Every entry, in index order.
    public func entries() -> [IndexEntry] {
        (0..<count).compactMap { git_index_get_byindex(handle, $0).map { IndexEntry($0.pointee) } }
    }

    /// Writes the staged tree (and its subtrees) into the object database.
    public func writeTree() throws(GitError) -> Oid {
        var out = git_oid()
        try check(git_index_write_tree(&out, handle), "git_index_write_tree")
        return Oid(out)
    }

    /// Saves the index file atomically (through `index.lock`).
    public func write() throws(GitError) {
        try check(git_index_write(handle), "git_index_write")
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
