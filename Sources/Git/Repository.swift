import CLibgit2
import ObjectStorage
import SystemPackage
import Glibc
import FileSystem

/// A git directory kept apart from its work tree. It owns the libgit2 handle; like every object of
/// this module it must stay on one thread or actor at a time.
public final class Repository {
    let handle: OpaquePointer
    public let gitDir: FilePath
    public let workdir: FilePath
    private var cachedIndex: Index?
    /// Ids of the objects written since `recordWrites()`, while recording (`WrittenObjects.swift`).
    var writeLog: [Oid]?
    /// Parents and generations of the commits read through any handle on this store (`isReachable`).
    var graph: SharedCommitGraph
    /// An object database of this store's loose objects that writes them without compression
    /// (`looseOdb(for:)`), made at first use.
    private var storedOdb: OpaquePointer?
    /// The store's packs as `streamBlob` reads them (made at its first use).
    private var packReader: PackedObjects??
    /// Loose refs this handle read, by their files' identity (`resolveReference`).
    private var looseRefs = LooseRefMemo()

    init(handle: OpaquePointer, gitDir: FilePath, workdir: FilePath) {
        self.handle = handle
        self.gitDir = gitDir
        self.workdir = workdir
        self.graph = SharedCommitGraph.of(gitDir)
    }

    deinit {
        if let storedOdb { git_odb_free(storedOdb) }
        git_repository_free(handle)
    }

    /// Runs `body` with the object database a loose object is written into: the store's own
    /// (zlib's fastest level, as git), or, `storing` bytes that look random (a photo, a video, an
    /// archive: `Incompressible.looks`), one that keeps them as they are: deflate ran at 50-80 MB/s
    /// over such bytes and saved nothing. Either writes a plain loose object git reads, hashed by
    /// libgit2 (collision detection included).
    func withLooseOdb<T>(storing: Bool, _ body: (OpaquePointer) throws(GitError) -> T) throws(GitError) -> T {
        guard storing else {
            var odb: OpaquePointer?
            try check(git_repository_odb(&odb, handle), "git_repository_odb")
            defer { git_odb_free(odb) }
            return try body(odb!)
        }
        if let storedOdb { return try body(storedOdb) }
        var existing: OpaquePointer?
        try check(git_repository_odb(&existing, handle), "git_repository_odb")
        let made = try StoredLooseBackend.database(objects: gitDir.appending("objects"), existing: existing!)
        storedOdb = made
        return try body(made)
    }

    /// Creates a git directory at `gitDir` (and its parents) whose work tree is `workdir`, with
    /// `main` as the unborn branch. The work tree gets no `.git` entry.
    public static func create(gitDir: FilePath, workdir: FilePath) throws(GitError) -> Repository {
        try Libgit2.initialize()
        var opts = git_repository_init_options()
        try check(git_repository_init_options_init(&opts, UInt32(GIT_REPOSITORY_INIT_OPTIONS_VERSION)),
                  "git_repository_init_options_init")
        opts.flags = GIT_REPOSITORY_INIT_MKPATH.rawValue | GIT_REPOSITORY_INIT_BARE.rawValue
        var out: OpaquePointer?
        let rc = "main".withCString { head in
            opts.initial_head = head
            return gitDir.withPlatformString { git_repository_init_ext(&out, $0, &opts) }
        }
        try check(rc, "git_repository_init_ext(\(gitDir))")
        let repo = Repository(handle: out!, gitDir: gitDir, workdir: workdir)
        // Plain `git --git-dir=<store>` then sees the data directory as the work tree.
        try repo.setConfig("core.bare", bool: false)
        try repo.setConfig("core.worktree", string: workdir.string)
        try repo.setConfig("core.logAllRefUpdates", bool: true)
        try repo.attachWorkdir()
        return repo
    }

    /// Opens the git directory itself (never searching upwards) and attaches `workdir`.
    public static func open(gitDir: FilePath, workdir: FilePath) throws(GitError) -> Repository {
        try Libgit2.initialize()
        var out: OpaquePointer?
        let rc = gitDir.withPlatformString {
            git_repository_open_ext(&out, $0, GIT_REPOSITORY_OPEN_NO_SEARCH.rawValue, nil)
        }
        try check(rc, "git_repository_open_ext(\(gitDir))")
        let repo = Repository(handle: out!, gitDir: gitDir, workdir: workdir)
        try repo.attachWorkdir()
        return repo
    }

    private func attachWorkdir() throws(GitError) {
        // Already set from core.worktree: libgit2 1.5 leaks its path buffer when asked to set the
        // same directory again (48 bytes for every fetch, which opens the store anew).
        if let current = git_repository_workdir(handle) {
            let have = Array(UnsafeBufferPointer(start: current, count: strlen(current))).map { UInt8(bitPattern: $0) }
            let want = workdir.withPlatformString { Array(UnsafeBufferPointer(start: $0, count: strlen($0))) }
                .map { UInt8(bitPattern: $0) } + [UInt8(ascii: "/")]
            if have == want { return }
        }
        let rc = workdir.withPlatformString { git_repository_set_workdir(handle, $0, 0) }
        try check(rc, "git_repository_set_workdir(\(workdir))")
    }

    // MARK: config

    public func setConfig(_ name: String, string value: String) throws(GitError) {
        try withConfig { cfg throws(GitError) in
            try check(git_config_set_string(cfg, name, value), "git_config_set_string(\(name))")
        }
    }

    public func setConfig(_ name: String, bool value: Bool) throws(GitError) {
        try withConfig { cfg throws(GitError) in
            try check(git_config_set_bool(cfg, name, value ? 1 : 0), "git_config_set_bool(\(name))")
        }
    }

    /// Sets an integer key unless it already has that value (no write, so no config change, when it has).
    public func ensureConfig(_ name: String, int64 value: Int64) throws(GitError) {
        try withConfig { cfg throws(GitError) in
            var current: Int64 = 0
            if git_config_get_int64(&current, cfg, name) == 0, current == value { return }
            try check(git_config_set_int64(cfg, name, value), "git_config_set_int64(\(name))")
        }
    }

    private func withConfig(_ body: (OpaquePointer) throws(GitError) -> Void) throws(GitError) {
        var cfg: OpaquePointer?
        try check(git_repository_config(&cfg, handle), "git_repository_config")
        defer { git_config_free(cfg) }
        try body(cfg!)
    }

    // MARK: refs and commits

    /// The commit `HEAD` points at, or nil while the branch is unborn.
    public func headCommit() throws(GitError) -> Oid? {
        try resolveReference("HEAD")
    }

    /// The commit a reference points at (following symbolic refs), or nil if it does not exist.
    public func resolveReference(_ name: String) throws(GitError) -> Oid? {
        // This store's own refs are loose (`HEAD`, `main`, the records); a peer's or a hub's
        // tracking refs are mostly packed (`writePackedRefs`): left to libgit2 at once.
        if name == "HEAD" || name.hasPrefix("refs/heads/") || name.hasPrefix("refs/syncagent/"),
           let id = looseRefs.resolve(name, in: gitDir) { return id }
        var oid = git_oid()
        let rc = git_reference_name_to_id(&oid, handle, name)
        if rc == GitError.Code.notFound || rc == GitError.Code.unbornBranch { return nil }
        try check(rc, "git_reference_name_to_id(\(name))")
        return Oid(oid)
    }

    /// Reads a commit's tree, parents, author and message.
    public func commit(_ id: Oid) throws(GitError) -> CommitInfo {
        try graph.info(id) { id throws(GitError) in try readCommit(id) }
    }

    private func readCommit(_ id: Oid) throws(GitError) -> CommitInfo {
        var commit: OpaquePointer?
        var raw = id.raw
        try check(git_commit_lookup(&commit, handle, &raw), "git_commit_lookup(\(id))")
        defer { git_commit_free(commit) }
        let count = git_commit_parentcount(commit)
        var parents: [Oid] = []
        for i in 0..<count { parents.append(Oid(git_commit_parent_id(commit, i))) }
        let author = Signature(git_commit_author(commit)!.pointee)
        let message = git_commit_message(commit).map { String(cString: $0) } ?? ""
        return CommitInfo(id: id, tree: Oid(git_commit_tree_id(commit)), parents: parents,
                          author: author, message: message, committerTime: git_commit_time(commit))
    }

    /// Writes a commit. With `updateRef` (e.g. "HEAD") the ref moves only if it still points at the
    /// first parent; otherwise libgit2 fails with `GitError.Code.modified`.
    public func createCommit(tree: Oid, parents: [Oid], author: Signature, committer: Signature,
                             message: String, updateRef: String?) throws(GitError) -> Oid {
        var treeObj: OpaquePointer?
        var treeRaw = tree.raw
        try check(git_tree_lookup(&treeObj, handle, &treeRaw), "git_tree_lookup(\(tree))")
        defer { git_tree_free(treeObj) }
        var parentObjs: [OpaquePointer?] = []
        defer { parentObjs.forEach { git_commit_free($0) } }
        for parent in parents {
            var obj: OpaquePointer?
            var raw = parent.raw
            try check(git_commit_lookup(&obj, handle, &raw), "git_commit_lookup(\(parent))")
            parentObjs.append(obj)
        }
        let authorSig = try author.makeC()
        defer { git_signature_free(authorSig) }
        let committerSig = try committer.makeC()
        defer { git_signature_free(committerSig) }
        var out = git_oid()
        let rc = parentObjs.withUnsafeMutableBufferPointer { buf in
            git_commit_create(&out, handle, updateRef, authorSig, committerSig, "UTF-8", message,
                              treeObj, buf.count, buf.baseAddress)
        }
        try check(rc, "git_commit_create")
        return noteWritten(Oid(out))
    }

    // MARK: objects

    /// The bytes of a blob.
    public func blobData(_ id: Oid) throws(GitError) -> [UInt8] {
        var blob: OpaquePointer?
        var raw = id.raw
        try check(git_blob_lookup(&blob, handle, &raw), "git_blob_lookup(\(id))")
        defer { git_blob_free(blob) }
        let size = Int(git_blob_rawsize(blob))
        guard size > 0, let content = git_blob_rawcontent(blob) else { return [] }
        return Array(UnsafeRawBufferPointer(start: content, count: size))
    }

    /// The size of an object from its header, without reading its content.
    public func blobSize(_ id: Oid) throws(GitError) -> Int64 { Int64(try header(of: id).size) }

    /// An object's size and type from the object database's header, without its content.
    private func header(of id: Oid) throws(GitError) -> (size: Int, type: git_object_t) {
        var raw = id.raw
        var odb: OpaquePointer?
        try check(git_repository_odb(&odb, handle), "git_repository_odb")
        defer { git_odb_free(odb) }
        var size = 0
        var type = GIT_OBJECT_INVALID
        try check(git_odb_read_header(&size, &type, odb, &raw), "git_odb_read_header(\(id))")
        return (size, type)
    }

    /// The reader of this store's packs, made on first use (nil when libdeflate cannot start).
    func packedObjects() -> PackedObjects? {
        if let packReader { return packReader }
        let made = PackedObjects(packDir: gitDir.appending("objects").appending("pack"))
        packReader = .some(made)
        return made
    }

    /// Blobs smaller than this are read by libgit2: zlib costs them little, and a 100k-file apply
    /// would otherwise map every id of the store's pack indexes a second time (+2-3 MB of peak
    /// resident memory at a first sync, measured).
    static let packedReadFrom = 2048

    /// Closes the packs `packedObjects` holds open (the next read opens what is there then).
    func forgetPackReader() { packReader = nil }

    /// A packed blob up to this size is read by `PackedObjects` (whole, in memory: its compressed
    /// bytes and, unless stored, its content; about twice its size for a moment; one over 1 MiB in
    /// stored blocks, block by block through 64 KiB); a bigger one by libgit2, through its mapped
    /// windows.
    static let packedReadLimit = 16 << 20

    /// Hands the bytes of a blob to `body`: a packed one of 2 KiB or more through `PackedObjects` (libdeflate, or
    /// stored blocks as they lie), else in chunks of at most `chunk` bytes when the blob is
    /// bigger than that and loose (read with read(2) and zlib, see `LooseObject`), else at once
    /// from libgit2's own buffer (no copy). A 1 GiB file written by the commit path or copied from a peer
    /// on this machine is loose, so writing it out costs `chunk` bytes of memory, not 1 GiB.
    public func streamBlob(_ id: Oid, chunk: Int = 1 << 20, into body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var raw = id.raw
        let (size, type) = try header(of: id)
        if size >= Self.packedReadFrom, type == GIT_OBJECT_BLOB, let packed = packedObjects(),
           try packed.stream(id, expecting: .blob, maxSize: Self.packedReadLimit, into: body) != nil {
            return
        }
        if size > chunk, type == GIT_OBJECT_BLOB,
           try LooseObject.stream(objects: gitDir.appending("objects"), id: id, chunk: chunk, into: body) != nil {
            return
        }
        var blob: OpaquePointer?
        try check(git_blob_lookup(&blob, handle, &raw), "git_blob_lookup(\(id))")
        defer { git_blob_free(blob) }
        let length = Int(git_blob_rawsize(blob))
        try body(UnsafeRawBufferPointer(start: git_blob_rawcontent(blob), count: length))
    }

    /// Every blob and link in a tree, recursively, with full paths.
    public func treeFiles(_ tree: Oid) throws(GitError) -> [TreeFile] {
        var treeObj: OpaquePointer?
        var raw = tree.raw
        try check(git_tree_lookup(&treeObj, handle, &raw), "git_tree_lookup(\(tree))")
        defer { git_tree_free(treeObj) }
        final class Collector { var files: [TreeFile] = [] }
        let collector = Collector()
        let rc = git_tree_walk(treeObj, GIT_TREEWALK_PRE, { root, entry, payload in
            guard let entry, let root, let payload else { return 0 }
            let type = git_tree_entry_type(entry)
            guard type == GIT_OBJECT_BLOB else { return 0 }
            let name = git_tree_entry_name(entry)!
            var bytes = Array(UnsafeBufferPointer(start: UnsafeRawPointer(root).assumingMemoryBound(to: UInt8.self),
                                                  count: strlen(root)))
            bytes.append(contentsOf: UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self),
                                                         count: strlen(name)))
            let collector = Unmanaged<Collector>.fromOpaque(payload).takeUnretainedValue()
            collector.files.append(TreeFile(path: FilePath(bytes: bytes),
                                            oid: Oid(git_tree_entry_id(entry)),
                                            mode: git_tree_entry_filemode(entry).rawValue))
            return 0
        }, Unmanaged.passUnretained(collector).toOpaque())
        try check(rc, "git_tree_walk(\(tree))")
        return collector.files
    }

    /// The index of this repository; one object shared by every caller.
    public func index() throws(GitError) -> Index {
        if let cachedIndex { return cachedIndex }
        let index = try Index(repository: self)
        cachedIndex = index
        return index
    }
}

@available(*, unavailable)
extension Repository: Sendable {}

/// A blob or link inside a tree.
public struct TreeFile: Sendable, Equatable {
    public let path: FilePath
    public let oid: Oid
    /// The git file mode: 0o100644, 0o100755 or 0o120000 (link).
    public let mode: UInt32
    public var isLink: Bool { mode == 0o120000 }
}

/// A commit, copied out of libgit2.
public struct CommitInfo: Sendable, Equatable {
    public let id: Oid
    public let tree: Oid
    public let parents: [Oid]
    public let author: Signature
    public let message: String
    /// When the commit was made (seconds since the epoch); the author time is when its files changed.
    public let committerTime: Int64
}

extension Repository {
    /// The entry at `path` in a tree: blob, link or subtree (mode 0o040000); nil when absent.
    public func entry(at path: FilePath, inTree tree: Oid) throws(GitError) -> ConflictSide? {
        var treeObj: OpaquePointer?
        var raw = tree.raw
        try check(git_tree_lookup(&treeObj, handle, &raw), "git_tree_lookup(\(tree))")
        defer { git_tree_free(treeObj) }
        var entry: OpaquePointer?
        let rc = path.withPlatformString { git_tree_entry_bypath(&entry, treeObj, $0) }
        if rc == GitError.Code.notFound { return nil }
        try check(rc, "git_tree_entry_bypath(\(path))")
        defer { git_tree_entry_free(entry) }
        return ConflictSide(oid: Oid(git_tree_entry_id(entry)), mode: git_tree_entry_filemode(entry).rawValue)
    }

    /// The commit that made what `tip` holds at `path` (a blob, a subtree, or nothing): from `tip`,
    /// follow any parent that holds the same entry, and stop at the commit none of whose parents
    /// does. So a version is credited to the device whose commit made it, not to a device that
    /// merged it later. At most `maxSteps` commits are read.
    public func origin(of path: FilePath, from tip: Oid, maxSteps: Int = 2000) throws(GitError) -> CommitInfo {
        var current = try commit(tip)
        let wanted = try entry(at: path, inTree: current.tree)
        for _ in 0..<maxSteps {
            var next: CommitInfo?
            for parent in current.parents {
                let info = try commit(parent)
                if try entry(at: path, inTree: info.tree) == wanted {
                    next = info
                    break
                }
            }
            guard let next else { return current }
            current = next
        }
        return current
    }

    /// Whether the object database holds this object.
    /// Re-reads the pack directory, so objects other handles packed (a fetch, the pre-hash
    /// workers) are seen by lookups that do not refresh on a miss (`writeBlob`).
    public func refreshObjects() {
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, handle) == 0 else { return }
        _ = git_odb_refresh(odb)
        git_odb_free(odb)
    }

    public func hasObject(_ id: Oid) -> Bool {
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, handle) == 0 else { return false }
        defer { git_odb_free(odb) }
        var raw = id.raw
        return git_odb_exists(odb, &raw) == 1
    }
}
