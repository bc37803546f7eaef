import CLibgit2
import ObjectStorage
import Platform
import Glibc
import SystemPackage

/// One side of a conflicted path: the blob and its git file mode.
public struct ConflictSide: Sendable, Equatable {
    public let oid: Oid
    public let mode: UInt32
    public init(oid: Oid, mode: UInt32) {
        self.oid = oid
        self.mode = mode
    }
}

/// A path libgit2 could not merge by itself; nil sides are absent (deleted or never there).
public struct MergeConflict: Sendable, Equatable {
    public let path: FilePath
    public let ancestor: ConflictSide?
    public let ours: ConflictSide?
    public let theirs: ConflictSide?
}

/// The in-memory result of a three-way merge. Conflicts are settled one by one with `settle`, then
/// `writeTree` stores the merged tree.
public final class MergeResult {
    let handle: OpaquePointer
    private unowned let repository: Repository

    init(handle: OpaquePointer, repository: Repository) {
        self.handle = handle
        self.repository = repository
    }

    deinit { git_index_free(handle) }

    public var conflicts: [MergeConflict] {
        var iterator: OpaquePointer?
        guard git_index_conflict_iterator_new(&iterator, handle) == 0 else { return [] }
        defer { git_index_conflict_iterator_free(iterator) }
        var result: [MergeConflict] = []
        var a: UnsafePointer<git_index_entry>?, o: UnsafePointer<git_index_entry>?, t: UnsafePointer<git_index_entry>?
        while git_index_conflict_next(&a, &o, &t, iterator) == 0 {
            guard let any = a ?? o ?? t else { continue }
            func side(_ e: UnsafePointer<git_index_entry>?) -> ConflictSide? {
                e.map { ConflictSide(oid: Oid($0.pointee.id), mode: $0.pointee.mode) }
            }
            result.append(MergeConflict(path: FilePath(platformString: any.pointee.path),
                                        ancestor: side(a), ours: side(o), theirs: side(t)))
        }
        return result
    }

    /// Entries under directory `path/` in the merged result.
    public func entries(under path: FilePath) -> [IndexEntry] { indexEntries(handle, under: path) }

    /// Replaces a conflicted path with one version (or removes it when `side` is nil).
    public func settle(_ path: FilePath, with side: ConflictSide?) throws(GitError) {
        var rc = path.withPlatformString { git_index_conflict_remove(handle, $0) }
        if rc != GitError.Code.notFound { try check(rc, "git_index_conflict_remove(\(path))") }
        guard let side else { return }
        rc = path.withPlatformString { cPath -> Int32 in
            var entry = git_index_entry()
            entry.mode = side.mode
            entry.id = side.oid.raw
            entry.path = cPath
            return git_index_add(handle, &entry)
        }
        try check(rc, "git_index_add(\(path))")
    }

    /// Whether the merged result holds an entry (not conflicted) at `path`.
    public func hasEntry(_ path: FilePath) -> Bool {
        path.withPlatformString { git_index_get_bypath(handle, $0, 0) } != nil
    }

    /// Removes a (not conflicted) entry from the merged result.
    public func remove(_ path: FilePath) throws(GitError) {
        let rc = path.withPlatformString { git_index_remove_bypath(handle, $0) }
        try check(rc, "git_index_remove_bypath(\(path))")
    }

    /// Whether the merged result has an entry under directory `path/` other than `except`.
    public func hasEntries(under path: FilePath, except: FilePath) -> Bool { indexHasEntries(handle, under: path, except: except) }

    /// Adds a file that neither side had (e.g. a conflict copy written beside the path).
    public func add(_ path: FilePath, blob: Oid, mode: UInt32 = 0o100644) throws(GitError) {
        try settle(path, with: ConflictSide(oid: blob, mode: mode))
    }

    /// Stores the merged tree; fails while conflicts remain.
    public func writeTree() throws(GitError) -> Oid {
        var out = git_oid()
        try check(git_index_write_tree_to(&out, handle, repository.handle), "git_index_write_tree_to")
        return Oid(out)
    }
}

@available(*, unavailable)
extension MergeResult: Sendable {}

extension Repository {
    /// Three-way merges two commits in memory (no rename detection). With no common ancestor the
    /// base is empty, so independent histories merge too.
    public func mergeCommits(ours: Oid, theirs: Oid) throws(GitError) -> MergeResult {
        var ourCommit: OpaquePointer?, theirCommit: OpaquePointer?
        var o = ours.raw, t = theirs.raw
        try check(git_commit_lookup(&ourCommit, handle, &o), "git_commit_lookup(\(ours))")
        defer { git_commit_free(ourCommit) }
        try check(git_commit_lookup(&theirCommit, handle, &t), "git_commit_lookup(\(theirs))")
        defer { git_commit_free(theirCommit) }
        var opts = git_merge_options()
        try check(git_merge_options_init(&opts, UInt32(GIT_MERGE_OPTIONS_VERSION)), "git_merge_options_init")
        // No rename detection: a move is a deletion and an addition, so every conflict names one
        // path on every side (libgit2 1.5 can give rename conflicts with ancestor-only entries).
        opts.flags = 0
        var out: OpaquePointer?
        try check(git_merge_commits(&out, handle, ourCommit, theirCommit, &opts), "git_merge_commits(\(ours), \(theirs))")
        return MergeResult(handle: out!, repository: self)
    }

    /// Three-way merges two trees in memory over `ancestor` (nil: the empty tree), no rename
    /// detection: for merges whose common version is known (a fold of many devices' tips).
    public func mergeTrees(ancestor: Oid?, ours: Oid, theirs: Oid) throws(GitError) -> MergeResult {
        func lookup(_ id: Oid) throws(GitError) -> OpaquePointer? {
            var tree: OpaquePointer?
            var raw = id.raw
            try check(git_tree_lookup(&tree, handle, &raw), "git_tree_lookup(\(id))")
            return tree
        }
        let base = try ancestor.map { id throws(GitError) in try lookup(id) } ?? nil
        defer { git_tree_free(base) }
        let ourTree = try lookup(ours)
        defer { git_tree_free(ourTree) }
        let theirTree = try lookup(theirs)
        defer { git_tree_free(theirTree) }
        var opts = git_merge_options()
        try check(git_merge_options_init(&opts, UInt32(GIT_MERGE_OPTIONS_VERSION)), "git_merge_options_init")
        opts.flags = 0
        var out: OpaquePointer?
        try check(git_merge_trees(&out, handle, base, ourTree, theirTree, &opts), "git_merge_trees(\(ours), \(theirs))")
        return MergeResult(handle: out!, repository: self)
    }

    /// The best common ancestor of all these commits, or nil when there is none.
    public func mergeBase(of commits: [Oid]) throws(GitError) -> Oid? {
        guard commits.count > 1 else { return commits.first }
        var out = git_oid()
        let raws = commits.map(\.raw)
        let rc = raws.withUnsafeBufferPointer { git_merge_base_octopus(&out, handle, $0.count, $0.baseAddress) }
        if rc == GitError.Code.notFound { return nil }
        try check(rc, "git_merge_base_octopus")
        return Oid(out)
    }

    /// Writes a blob from bytes.
    public func createBlob(_ bytes: [UInt8]) throws(GitError) -> Oid {
        var out = git_oid()
        // Bytes that look random (an encrypted hub's sealed objects) are stored as they are: zlib
        // would spend 50-80 MB/s on them for nothing (`withLooseOdb`).
        let storing = bytes.withUnsafeBytes { Incompressible.looks($0) }
        let rc = try withLooseOdb(storing: storing) { odb in
            bytes.withUnsafeBytes { git_odb_write(&out, odb, $0.baseAddress, $0.count, GIT_OBJECT_BLOB) }
        }
        try check(rc, "git_odb_write(blob)")
        return noteWritten(Oid(out))
    }
}

extension Repository {
    /// What `writeBlob(fromFile:)` found.
    public enum FileBlob: Sendable, Equatable {
        /// The file's bytes are in the object database as this blob.
        case written(Oid)
        /// Nothing (or no regular file) is at the path.
        case missing
        /// The file's size changed while it was read: read it again later.
        case changedWhileRead
        /// A regular file is there, but this user may not read it (`EACCES`, `EPERM`).
        case unreadable
    }

    /// Room for `writeBlob(fromFile:stats:)`'s two `fstat`s (made here: a caller that does not
    /// import the C modules cannot always name `stat`'s initializer).
    public static var blankStats: (before: stat, after: stat) { (stat(), stat()) }

    /// Writes the regular file at `absolutePath` into the object database as a blob, byte for byte:
    /// a file up to 1 MiB in one read (and only when the store lacks it), a larger one streamed in
    /// 1 MiB pieces (memory does not grow with the file); never through a filter
    /// (libgit2's own add-from-disk applies the data directory's .gitattributes: `text`, `eol`,
    /// `ident`... would change what is stored).
    /// With `batch`, a small file goes into that pack batch instead of a loose object.
    /// With `stats`, the file's `fstat` before and after the read is put there: the same values
    /// mean nobody wrote it meanwhile.
    public func writeBlob(fromFile absolutePath: FilePath, batch: PackBatch? = nil,
                          stats: UnsafeMutablePointer<(before: stat, after: stat)>? = nil) throws(GitError) -> FileBlob {
        let fd = absolutePath.withPlatformString { openToRead($0, flags: O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
        guard fd >= 0 else { return errno == EACCES || errno == EPERM ? .unreadable : .missing }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return .missing }
        stats?.pointee.before = st
        let size = Int(st.st_size)
        var odb: OpaquePointer?
        try check(git_repository_odb(&odb, handle), "git_repository_odb")
        defer { git_odb_free(odb) }
        if size <= 1 << 20 {
            // Small: one read, then write only if the store lacks it (a file the agent itself wrote
            // after a sync, or one touched without a change, costs a hash, not a new object file).
            var bytes = [UInt8](repeating: 0, count: size + 1)
            var got = 0
            while got < bytes.count {
                let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, $0.count - got) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                got += n
            }
            guard got == size else { return .changedWhileRead }
            if let stats, fstat(fd, &stats.pointee.after) != 0 { return .changedWhileRead }
            if let batch {
                let written: Result<Oid, GitError> = bytes.withUnsafeBytes { raw in
                    Result { () throws(GitError) in try batch.write(UnsafeRawBufferPointer(rebasing: raw[..<size])) }
                }
                return .written(try written.get())
            }
            var out = git_oid()
            let rc = bytes.withUnsafeBytes { git_odb_hash(&out, $0.baseAddress, size, GIT_OBJECT_BLOB) }
            try check(rc, "git_odb_hash(\(absolutePath))")
            // No re-reading of the pack directory on a miss (a new file's blob is always missing):
            // the caller refreshes once per batch (`refreshObjects`).
            if git_odb_exists_ext(odb, &out, UInt32(GIT_ODB_LOOKUP_NO_REFRESH.rawValue)) == 0 {
                let storing = bytes.withUnsafeBytes { Incompressible.looks(UnsafeRawBufferPointer(rebasing: $0[..<size])) }
                let wrc = try withLooseOdb(storing: storing) { target in
                    bytes.withUnsafeBytes { git_odb_write(&out, target, $0.baseAddress, size, GIT_OBJECT_BLOB) }
                }
                try check(wrc, "git_odb_write(\(absolutePath))")
            }
            return .written(noteWritten(Oid(out)))
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        /// Reads the next piece into `buffer`: its length, 0 at the end of the file, nil on an error.
        func next(_ want: Int) -> Int? {
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, want) }
                if n < 0 && errno == EINTR { continue }
                return n < 0 ? nil : n
            }
        }
        // The first piece says whether the blob is worth compressing (`withLooseOdb`).
        guard let first = next(min(buffer.count, size)), first > 0 else { return .changedWhileRead }  // shorter than its size said
        let incompressible = buffer.withUnsafeBytes { Incompressible.looks(UnsafeRawBufferPointer(rebasing: $0[..<first])) }
        // With a batch, the file streams into its pack (one pass, never whole in memory): a folder
        // of photos costs no loose object per file, and nothing to pack again later.
        func target<T>(_ body: (OpaquePointer) throws(GitError) -> T) throws(GitError) -> T {
            if let batch { return try batch.withStreamDatabase(stored: incompressible, body) }
            return try withLooseOdb(storing: incompressible, body)
        }
        return try target { target throws(GitError) -> FileBlob in
            var stream: UnsafeMutablePointer<git_odb_stream>?
            try check(git_odb_open_wstream(&stream, target, git_object_size_t(size), GIT_OBJECT_BLOB), "git_odb_open_wstream(\(absolutePath))")
            defer { git_odb_stream_free(stream) }
            var done = 0, piece = first
            while true {
                let rc = buffer.withUnsafeBytes { raw in
                    raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: piece) { git_odb_stream_write(stream, $0, piece) }
                }
                try check(rc, "git_odb_stream_write(\(absolutePath))")
                done += piece
                if done >= size { break }
                guard let n = next(min(buffer.count, size - done)), n > 0 else { return .changedWhileRead }  // shorter than its size said
                piece = n
            }
            var extra: UInt8 = 0
            if read(fd, &extra, 1) > 0 { return .changedWhileRead }  // longer than its size said
            if let stats, fstat(fd, &stats.pointee.after) != 0 { return .changedWhileRead }
            var out = git_oid()
            try check(git_odb_stream_finalize_write(&out, stream), "git_odb_stream_finalize_write(\(absolutePath))")
            return .written(batch == nil ? noteWritten(Oid(out)) : Oid(out))
        }
    }
}
