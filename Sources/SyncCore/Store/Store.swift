import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import Synchronization
import SystemPackage

/// The device's git store: `<state>/store.git`, whose work tree is the data directory. It turns
/// changed paths into commits on `main`, touching only those paths' index entries.
/// Not thread-safe: one owner (the agent's store actor, or a CLI command holding the lock).
public final class Store {
    /// Paths a first sync writes per chunk of the peer's tree (`fastForward` walks the tree
    /// instead of holding its list); tests make it small.
    var firstSyncChunk = 8192
    public let device: String
    public let data: FilePath
    public let gitDir: FilePath
    let repo: Repository
    /// Special files already warned about, so each is reported once.
    var warnedSpecial: Set<FilePath> = []
    /// Resolvers of a program that embeds the agent; asked before `rules`.
    public var resolvers: [any ConflictResolver] = []
    /// The config's `[[resolver]]` rules.
    public var rules: [ResolverRule] = []
    /// Paths a merge could not write (`<store>/syncagent/unapplied`), once read.
    let unappliedCache = Cache<[FilePath: ConflictSide]>()
    /// Local changes held back (`<store>/syncagent/held`), once read.
    let heldCache = Cache<[FilePath: HeldChange]>()
    /// A running agent keeps the index in memory and saves it when idle (`flushIndex`); one-shot
    /// commands save it after every change (see Store+Index).
    public var deferIndexWrites = false
    let indexState = IndexState()
    /// The `[[rule]]`s and `mode`: what is committed, held, written.
    public var policy: PathPolicy
    /// Long work reports its steps here: (task, done, total or nil while unknown).
    public var onProgress: ((String, Int, Int?) -> Void)?
    /// What the index file recorded at the paths `reconcileIndexWithHead` put back at `main` (the
    /// agent stopped before saving it): after a power cut, a file that still matches that record
    /// went back in time (`powerCutDamage`).
    var recordedBeforeReconcile: [FilePath: IndexEntry] = [:]
    /// An interrupted apply is being finished: its new paths may hold their version already.
    var resumingApply = false
    /// The last fold of a hub's devices (`foldJoins`): the `main` its tree was built on, and its
    /// join. Merging that join into that `main` is a fast-forward of content (`integrateMain`).
    var lastFold: (base: Oid, join: Oid)?
    /// New files a power cut left empty or zero-filled, kept out of commits while unchanged
    /// (`Store+PowerCut`); nil until read.
    var powerCutLeftCache: [FilePath: PowerCutStamp]?
    public static let scanTask = "scan"
    public static let mergeTask = "merge"
    public static let commitTask = "commit"
    /// Commits and merges of at least this many paths tell their progress (`onProgress`).
    static let progressFrom = 100

    private init(device: String, data: FilePath, gitDir: FilePath, repo: Repository) {
        self.device = device
        self.data = data
        self.gitDir = gitDir
        self.repo = repo
        policy = PathPolicy(device: device)
    }

    /// Sizes libgit2's caches for this process from `[store]` (see `StoreMemorySettings`). Call it
    /// before the first store is opened.
    public static func limitMemory(_ settings: StoreMemorySettings) {
        try? Libgit2.limitMemory(cacheBytes: settings.cacheMB << 20, packMapBytes: settings.packWindowMB << 20)
    }

    /// Opens the store, creating it (and an empty `main`) if it does not exist yet.
    public static func openOrCreate(device: String, data: FilePath, gitDir: FilePath) throws(StoreError) -> Store {
        do {
            let exists = try FileStat.of(gitDir.appending("HEAD")) != nil
            let repo = exists ? try Repository.open(gitDir: gitDir, workdir: data)
                              : try Repository.create(gitDir: gitDir, workdir: data)
            // The pack builder (rolling fetched packs up) keeps every small delta in memory up to
            // 256 MiB and its delta window unbounded by default: cap both (git reads them too).
            // libgit2 1.5 also takes `pack.deltaCacheSize` as its big-file threshold (objects
            // above it are never delta-searched; `pack.bigFileThreshold` is not read): at 2 MiB, a
            // push of 90 photos of 2 MB spent most of its time searching deltas between random
            // bytes. 512 KiB: documents still get deltas, photos and archives are not searched.
            try repo.ensureConfig("pack.deltaCacheSize", int64: 512 << 10)
            try repo.ensureConfig("pack.windowMemory", int64: 8 << 20)
            neutralizeAttributes(gitDir: gitDir)
            return Store(device: device, data: data, gitDir: gitDir, repo: repo)
        } catch let error as GitError {
            throw StoreError(path: gitDir, code: .io, message: "cannot open the store: \(error)",
                             hint: "check that \(gitDir) is a git directory written by syncagent, or move it away to start a new store")
        } catch {
            throw StoreError(path: gitDir, code: .io, message: "cannot read the store: \(error)", hint: "check the permissions of \(gitDir)")
        }
    }

    /// A `.gitattributes` in the data directory is the user's data, never instructions to the store:
    /// `info/attributes` (which git and libgit2 rank above every in-tree file) leaves every attribute
    /// that changes bytes or merges unspecified. The agent reads and writes bytes itself anyway;
    /// this keeps libgit2's merge and plain `git` on the store from obeying the data directory.
    static let neutralAttributes = "# written by syncagent: files in the data directory are stored byte for byte\n"
        + "* !text !eol !crlf !ident !filter !merge !diff !working-tree-encoding\n"

    private static func neutralizeAttributes(gitDir: FilePath) {
        let file = gitDir.appending("info").appending("attributes")
        let bytes = Array(neutralAttributes.utf8)
        guard (try? Files.read(file)) != bytes else { return }
        try? Files.makeDirectories(file.removingLastComponent())
        let temp = gitDir.appending("info").appending("attributes.new")
        try? Files.remove(temp)
        if (try? Files.create(temp, bytes: bytes, executable: false)) != nil { try? Files.rename(temp, to: file) }
    }

    /// Opens an existing store; fails with a clear message when there is none.
    public static func open(device: String, data: FilePath, gitDir: FilePath) throws(StoreError) -> Store {
        guard (try? FileStat.of(gitDir.appending("HEAD"))) != nil else {
            throw StoreError(path: gitDir, message: "no store here", hint: "run `syncagent run` (it creates the store) or `syncagent init`")
        }
        return try openOrCreate(device: device, data: data, gitDir: gitDir)
    }

    /// The commit `main` points at; nil before the first commit.
    func head() throws(GitError) -> Oid? { try repo.headCommit() }

    /// The commit `main` points at; nil before the first commit.
    public func headID() throws -> ObjectID? { try head()?.id }

    func commitInfo(_ id: Oid) throws(GitError) -> CommitInfo { try repo.commit(id) }

    /// Files in a commit, for checks and tests.
    func files(at commit: Oid) throws(GitError) -> [TreeFile] {
        try repo.treeFiles(try repo.commit(commit).tree)
    }

    func blob(_ id: Oid) throws(GitError) -> [UInt8] { try repo.blobData(id) }

    /// Moves a ref only after every object written so far is on disk, so a crash can never leave a
    /// ref pointing at a missing object. A crash before the move loses nothing either: the data
    /// directory still holds the files, and the next start commits them again.
    /// With `written` (the loose objects this step wrote, from `Repository.takeWrites()`) and
    /// `packs` (the packs it wrote, `PackBatch.names`), only those files are flushed: every other
    /// object the ref reaches was made durable before an earlier ref pointed at it, or by the
    /// flush after a fetch, a copy or a pack. (An object the log names that is not a loose file,
    /// found already packed, makes the flush fail: then the whole file system is flushed.)
    func moveRef(_ name: String, to id: Oid, expected: Oid?, message: String, written: [Oid]? = nil,
                 packs: [String] = []) throws(GitError) {
        let packDir = gitDir.appending("objects").appending("pack")
        Self.flushObjects(of: repo, written: written, packs: packs.flatMap { [packDir.appending("pack-\($0).pack"), packDir.appending("pack-\($0).idx")] })
        // A ref replaced where it was (a loose file already) changes its own directory only; its
        // first move in this process flushes every directory above it all the same (one made by
        // a process killed before its flush would otherwise never be).
        let replacing = ((try? FileStat.of(gitDir.pushing(FilePath(name)))) ?? nil)?.kind == .regular
            && Self.refsFlushedWhole.withLock { !$0.insert(gitDir.pushing(FilePath(name))).inserted }
        try repo.updateReference(name, to: id, expected: expected, message: message)
        // libgit2 renames its lock file over the ref without an fsync (GIT_OPT_ENABLE_FSYNC_GITDIR
        // would fsync every loose object too, one by one): the ref and its directories now.
        Self.flushRefs([name], under: gitDir, replaced: replacing)
    }

    /// Makes the loose objects `written` (a write log, `Repository.takeWrites()`), the pack files
    /// `packs` and the files `also` of `repo` durable, an fsync each; the whole file system when
    /// the log gave up (nil) or anything cannot be flushed (an object the log names that is not a
    /// loose file, found already packed, among them).
    static func flushObjects(of repo: Repository, written: [Oid]?, packs: [FilePath] = [], also: [FilePath] = []) {
        let objects = repo.gitDir.appending("objects")
        // Nothing written: nothing to flush (objects and packs once flushed are skipped, `DurableFiles`).
        guard let written, Durability.flushImmutable(packs + also + written.map(repo.looseObjectPath),
                                                 andDirectories: packs.isEmpty ? [objects] : [objects, objects.appending("pack")]) else {
            return Durability.flushFileSystem(containing: repo.gitDir)
        }
    }

    /// Refs whose every directory this process flushed once (`moveRef`).
    static let refsFlushedWhole = Mutex<Set<FilePath>>([])

    /// Makes these refs of `gitDir` durable (the files libgit2 renamed into place, and their
    /// directories), else its whole file system. `replaced`: each ref was a loose file before the
    /// move, so only its own directory changed (a lock file renamed over it); its parents name
    /// what they named before and are not flushed again (1-2 ms a move on a busy ext4, where an
    /// fsync of a directory with nothing new still flushes the disk's cache).
    static func flushRefs(_ refs: [String], under gitDir: FilePath, replaced: Bool = false) {
        for ref in refs {
            let path = FilePath(ref)
            let done = replaced
                ? Durability.flushFiles([gitDir.pushing(path)], andDirectories: [gitDir.pushing(path.removingLastComponent())])
                : Durability.flushReplaced(path, under: gitDir)
            if !done { return Durability.flushFileSystem(containing: gitDir) }
        }
    }

    /// Removes `*.lock` files libgit2 left in the git dir when a process died mid-write. Call it only
    /// while holding the agent lock: then no live writer can own them.
    @discardableResult
    public static func clearStaleLocks(gitDir: FilePath) -> [FilePath] {
        var removed: [FilePath] = []
        Directory.walk(gitDir, descend: { $0 != FilePath("objects") }) { rel, kind in
            guard kind != .directory, rel.lastComponent?.extension == "lock" else { return }
            // Only the locks libgit2 takes for the agent: never a git CLI's own (gc.log.lock, ...).
            let libgit2Lock = rel.starts(with: "refs")
                || ["index.lock", "HEAD.lock", "config.lock", "packed-refs.lock"].contains(rel.string)
            guard libgit2Lock else { return }
            let abs = gitDir.pushing(rel)
            if (try? Files.remove(abs)) != nil { removed.append(abs) }
        }
        removed += Self.removeTemporaries(of: gitDir)
        return removed
    }
}

extension Store {
    /// A pack file still being written, by libgit2 (`pack_git2_*`) or by a pack batch
    /// (`tmp_pack_*`, `tmp_idx_*`, git's own names for them).
    static func isTemporaryPack(_ name: FilePath.Component) -> Bool {
        let text = name.string
        return text.hasPrefix("pack_git2_") || text.hasPrefix("tmp_pack_") || text.hasPrefix("tmp_idx_")
    }

    /// A loose object still being written without compression, or a peer's being checked through
    /// a link (`tmp_obj_*` in `objects/`).
    static func isTemporaryObject(_ name: FilePath.Component) -> Bool {
        name.string.hasPrefix("tmp_obj_")
    }

    /// Removes what a fetch, push, copy or roll-up killed mid-way left in `gitDir`: libgit2's
    /// temporary pack and its lock (`pack_git2_*`), a pack batch's temporaries (`tmp_pack_*`,
    /// `tmp_idx_*`; `tmp_pack_adopt_*`, a folder where a peer's pack is checked), a loose object
    /// stored without compression (`objects/tmp_obj_*`). Finished
    /// packs (`pack-<id>.*`) and objects are never touched. With `modifiedBefore` (seconds since
    /// the epoch), only older ones go: on a hub, other devices may be writing theirs right now.
    /// Returns the paths removed.
    static func removeTemporaries(of gitDir: FilePath, modifiedBefore: Int64? = nil) -> [FilePath] {
        var removed: [FilePath] = []
        let objects = gitDir.appending("objects")
        for (dir, isTemporary) in [(objects.appending("pack"), isTemporaryPack), (objects, isTemporaryObject)] {
            for entry in (try? Directory.entries(of: dir)) ?? [] where isTemporary(entry.name) {
                let path = dir.appending(entry.name)
                if let modifiedBefore {
                    guard let stat = (try? FileStat.of(path)) ?? nil, stat.mtimeSeconds < modifiedBefore else { continue }
                }
                // (A pack being adopted is checked in a folder of its own.)
                let isFolder = ((try? FileStat.of(path)) ?? nil)?.kind == .directory
                if (try? isFolder ? Files.removeTree(path) : Files.remove(path)) != nil { removed.append(path) }
            }
        }
        removed += removeOrphanPacks(in: objects.appending("pack"))
        return removed
    }

    /// A pack file without its index, an hour old: a write killed between putting the pack and its
    /// index in place (git, libgit2 and this agent all link or rename the pack first). Nobody
    /// reads it (a pack is found by its index), and it may be hundreds of megabytes. A younger
    /// one may be a write in progress, here or on a hub.
    static func removeOrphanPacks(in packDir: FilePath, olderThan seconds: Int64 = 3600) -> [FilePath] {
        let names = Set(((try? Directory.entries(of: packDir)) ?? []).map(\.name))
        let before = Int64(Date().timeIntervalSince1970) - seconds
        var removed: [FilePath] = []
        for name in names where name.string.hasPrefix("pack-") && name.extension == "pack" {
            guard let index = FilePath.Component(name.stem + ".idx"), !names.contains(index) else { continue }
            let path = packDir.appending(name)
            guard let stat = (try? FileStat.of(path)) ?? nil, stat.kind == .regular, stat.mtimeSeconds < before else { continue }
            if (try? Files.remove(path)) != nil { removed.append(path) }
        }
        return removed
    }
}

@available(*, unavailable)
extension Store: Sendable {}

/// A value filled on first use; lets `Store` extensions keep state without stored properties.
final class Cache<Value> {
    var value: Value?
}

/// A store problem, naming the path and what to do.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public let path: FilePath
    public let message: String
    public let hint: String
    /// What kind of problem, for programs (`SyncError(_:)`): `io` when the store cannot be opened
    /// or read, else a path or version that is not there (or a target that already is).
    public var code: SyncError.Code = .noSuchPath
    public var description: String { "\(path.display): \(message). \(hint)" }

    public init(path: FilePath, code: SyncError.Code = .noSuchPath, message: String, hint: String) {
        self.path = path
        self.code = code
        self.message = message
        self.hint = hint
    }
}
