import CLibgit2
import ObjectStorage
import FoundationEssentials
import Glibc
import Synchronization

/// Process-wide libgit2 set-up. `Libgit2.initialize()` runs once, before any other call of this module.
public enum Libgit2 {
    private static let once: Result<Void, GitError> = {
        let rc = git_libgit2_init()
        if rc < 0 { return .failure(lastError(code: rc, call: "git_libgit2_init")) }
        // A store is owned by the agent's user, but a peer's store may not be: no owner checks.
        _ = syncagent_git_set_owner_validation(0)
        // Deterministic behaviour: never read the user's global, XDG or system git config.
        let empty = emptyConfigDirectory()
        for level in [GIT_CONFIG_LEVEL_GLOBAL, GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_PROGRAMDATA] {
            _ = syncagent_git_set_search_path(level.rawValue, empty)
        }
        // No fsync per object from libgit2: the store flushes what a batch wrote before a ref moves
        // (`Store.moveRef`: the objects it logged and the packs it wrote, else the file system).
        _ = syncagent_git_enable_fsync_gitdir(0)
        // Trees and commits are made only from objects this process has just written or read: no
        // existence check per entry (at 1,000 entries a level it cost a lookup each, every commit).
        _ = syncagent_git_enable_strict_object_creation(0)
        // An object's id is checked once, as it enters a store (hashed as it is written, or by the
        // indexer for a pack; `ObjectCopier` compares what it wrote with the id it asked for), not
        // again on every read: that was a third SHA-1 (with collision detection) over every byte a
        // merge writes into the data directory. Git does the same; zlib's checksum still guards
        // each stored object's bytes.
        _ = syncagent_git_enable_strict_hash_verification(0)
        return .success(())
    }()

    /// The system's certificate authorities, loaded once, before the first http(s) remote: parsing
    /// the ~140 certificates of the bundle (mbedTLS) again was a fifth of the CPU of every process
    /// start, a `syncagent status` included, whether or not any peer spoke https (Debian's libgit2
    /// loads its default bundle at init already; this is for builds without one).
    private static let certificates: Bool = {
        guard FileManager.default.fileExists(atPath: "/etc/ssl/certs/ca-certificates.crt") else { return false }
        return syncagent_git_set_ssl_cert_locations("/etc/ssl/certs/ca-certificates.crt", nil) == 0
    }()

    /// Loads the certificate authorities when `url` may lead to TLS (http redirects to https;
    /// libgit2 takes the scheme in any case).
    static func prepareTransport(for url: String) {
        let scheme = url.prefix(8).lowercased()
        if scheme.hasPrefix("http://") || scheme.hasPrefix("https://") { _ = certificates }
    }

    /// Initialise libgit2 once for the process. Safe to call many times.
    public static func initialize() throws(GitError) {
        try once.get()
    }

    /// Sizes libgit2's process-wide caches on purpose (its defaults let one repository cache 256 MiB
    /// of objects, map 8 GiB of packs and keep every pack file open): `cacheBytes` for parsed
    /// objects (0 turns the cache off), `packMapBytes` for pack data mapped at once (windows of a
    /// quarter of that), and at most `openPacks` pack files open at once.
    public static func limitMemory(cacheBytes: Int, packMapBytes: Int, openPacks: Int = 32) throws(GitError) {
        try initialize()
        _ = syncagent_git_enable_caching(cacheBytes > 0 ? 1 : 0)
        if cacheBytes > 0 { _ = syncagent_git_set_cache_max_size(cacheBytes) }
        _ = syncagent_git_set_mwindow_size(max(1 << 20, packMapBytes / 4))
        _ = syncagent_git_set_mwindow_mapped_limit(packMapBytes)
        _ = syncagent_git_set_mwindow_file_limit(openPacks)
    }

    /// libgit2's own limit for a tree in its object cache (a tree is cached when smaller), which
    /// `withoutCachingTrees` puts back.
    static let cachedTreeLimit = 4096

    /// How many `withoutCachingTrees` calls are running, and how many have begun.
    private static let uncachedWalks = Mutex((running: 0, begun: 0))

    /// The state of `withoutCachingTrees` now: trees enter the cache when `running` is 0; `begun`
    /// tells whether a scope began meanwhile (for a test of the cache, in a process of other tests).
    static var treeCaching: (running: Int, begun: Int) { uncachedWalks.withLock { $0 } }

    /// Runs `body` with no tree entering libgit2's object cache (process-wide: objects already
    /// cached are still found, and commits are still cached). For walks that read each tree of a
    /// big history once (a first sync's walk of 100k paths, a copy's plan): the cache would fill
    /// with 1,000 trees nothing reads again, 2-3 times the cache's counted size in memory, held at
    /// the walk's peak and after it (4 MB of a 100k-file first sync's 55).
    public static func withoutCachingTrees<T, E: Error>(if condition: Bool = true, _ body: () throws(E) -> T) throws(E) -> T {
        guard condition else { return try body() }
        uncachedWalks.withLock { state in
            if state.running == 0 { _ = syncagent_git_set_cache_object_limit(GIT_OBJECT_TREE, 0) }
            state.running += 1
            state.begun += 1
        }
        defer {
            uncachedWalks.withLock { state in
                state.running -= 1
                if state.running == 0 { _ = syncagent_git_set_cache_object_limit(GIT_OBJECT_TREE, cachedTreeLimit) }
            }
        }
        return try body()
    }

    /// A new config object for a pack builder that must not search for deltas: libgit2 1.5 takes
    /// its "no delta above this size" threshold from `pack.deltaCacheSize` (pack-objects.c), so 1
    /// byte there turns delta search off. Each caller gets its own object (a repository takes
    /// ownership of the config it is given, so one shared between threads would be written from
    /// several); the caller frees it. Nil if its file cannot be written (then deltas are searched).
    static func noDeltaConfig() -> OpaquePointer? {
        guard let file = noDeltaFile else { return nil }
        var config: OpaquePointer?
        guard git_config_new(&config) == 0 else { return nil }
        guard git_config_add_file_ondisk(config, file, GIT_CONFIG_LEVEL_APP, nil, 0) == 0 else {
            git_config_free(config)
            return nil
        }
        return config
    }

    /// The file behind `noDeltaConfig`, written once per process.
    private static let noDeltaFile: String? = {
        let file = FileManager.default.temporaryDirectory.path + "/syncagent-nodelta-\(getuid()).gitconfig"
        let text = "[pack]\n\tdeltaCacheSize = 1\n"
        if (try? String(contentsOfFile: file, encoding: .utf8)) != text {
            let temp = file + ".\(getpid())"
            guard (try? text.write(toFile: temp, atomically: false, encoding: .utf8)) != nil,
                  rename(temp, file) == 0 else { return nil }
        }
        return file
    }()

    private static func emptyConfigDirectory() -> String {
        let dir = FileManager.default.temporaryDirectory.path + "/syncagent-empty-gitconfig-\(getuid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}
