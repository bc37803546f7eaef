import CLibgit2
import SystemPackage

/// Objects written into memory, then into one pack of exactly those objects beside the store's
/// others, each time they hold `flushBytes` and at `flush()`: a big batch costs no inode per
/// object and no later repacking. No delta search (a batch is new content; for photos it found
/// nothing and cost most of the CPU); the store's own repacking finds deltas between versions.
/// Objects are not synced: make them durable before a reference names them. One thread at a time.
public final class PackBatch {
    let gitDir: FilePath
    let flushBytes: Int
    /// An object database with a mempack in front, and a repository around it for the pack builder.
    private let odb: OpaquePointer
    private let mempack: UnsafeMutablePointer<git_odb_backend>
    private let repo: OpaquePointer
    private var bytes = 0
    /// The objects waiting for the next pack, in the order they were written.
    private(set) var ids: [Oid] = []
    /// Packs written so far.
    public private(set) var packs = 0
    /// Called while a pack is written; returning false abandons it (the write throws).
    var onProgress: (() -> Bool)?

    public init(gitDir: FilePath, flushBytes: Int = 32 << 20) throws(GitError) {
        var odb: OpaquePointer?
        let objects = gitDir.appending("objects")
        try check(objects.withPlatformString { git_odb_open(&odb, $0) }, "git_odb_open(\(objects))")
        var mempack: UnsafeMutablePointer<git_odb_backend>?
        var repo: OpaquePointer?
        guard git_mempack_new(&mempack) == 0, git_odb_add_backend(odb, mempack, 999) == 0,
              git_repository_wrap_odb(&repo, odb) == 0 else {
            let error = lastError(code: GitError.Code.generic, call: "git_mempack_new / git_repository_wrap_odb")
            git_odb_free(odb)
            throw error
        }
        if let config = Libgit2.noDeltaConfig() {
            _ = git_repository_set_config(repo, config)  // the repository holds its own reference
            git_config_free(config)
        }
        self.gitDir = gitDir
        self.flushBytes = flushBytes
        self.odb = odb!
        self.mempack = mempack!
        self.repo = repo!
    }

    /// A miss does not re-read the pack directory (most objects of a batch are new): at worst an
    /// object another process packed meanwhile is written once more.
    static let noRefresh = UInt32(GIT_ODB_LOOKUP_NO_REFRESH.rawValue)

    deinit {
        git_repository_free(repo)
        git_odb_free(odb)
    }

    /// Whether the object is in the batch or already in the store.
    public func has(_ id: Oid) -> Bool {
        var raw = id.raw
        return git_odb_exists_ext(odb, &raw, Self.noRefresh) == 1
    }

    /// Adds an object (nothing when the store or the batch has it already); returns its id.
    @discardableResult
    public func write(_ data: UnsafeRawBufferPointer, type: git_object_t = GIT_OBJECT_BLOB) throws(GitError) -> Oid {
        var out = git_oid()
        try check(git_odb_hash(&out, data.baseAddress, data.count, type), "git_odb_hash")
        guard git_odb_exists_ext(odb, &out, Self.noRefresh) == 0 else { return Oid(out) }
        try check(git_odb_write(&out, odb, data.baseAddress, data.count, type), "git_odb_write(\(Oid(out))) to a pack batch")
        bytes += data.count
        ids.append(Oid(out))
        if bytes >= flushBytes { try flush() }
        return Oid(out)
    }

    /// Writes the waiting objects as one pack (with its index), then empties the batch.
    /// Not `git_mempack_dump`: in libgit2 1.5 it packs only what the commits in the mempack reach
    /// (a batch of blobs whose commit comes in a later batch became an empty pack, and the blobs
    /// were dropped with the reset), and with a commit it packs its whole tree again.
    public func flush() throws(GitError) {
        guard !ids.isEmpty else { return }
        var builder: OpaquePointer?
        try check(git_packbuilder_new(&builder, repo), "git_packbuilder_new")
        defer { git_packbuilder_free(builder) }
        git_packbuilder_set_threads(builder, 1)
        // A big batch takes a while to write: it reports progress, so a silence timeout above
        // never takes it for a dead peer, and a cancel stops it.
        if let onProgress {
            let ticker = PackTicker(onProgress)
            let payload = Unmanaged.passRetained(ticker).toOpaque()
            defer { Unmanaged<PackTicker>.fromOpaque(payload).release() }
            git_packbuilder_set_callbacks(builder, { _, _, _, payload in
                guard let payload else { return 0 }
                return Unmanaged<PackTicker>.fromOpaque(payload).takeUnretainedValue().tick() ? 0 : -1
            }, payload)
            try write(builder)
        } else {
            try write(builder)
        }
        try check(git_mempack_reset(mempack), "git_mempack_reset")
        _ = git_odb_refresh(odb)  // the new pack: what left memory is still found by `has`
        bytes = 0
        ids.removeAll(keepingCapacity: true)
        packs += 1
    }

    private func write(_ builder: OpaquePointer?) throws(GitError) {
        for id in ids {
            var raw = id.raw
            try check(git_packbuilder_insert(builder, &raw, nil), "git_packbuilder_insert(\(id)) from the batch")
        }
        let packDir = gitDir.appending("objects").appending("pack")
        try check(packDir.withPlatformString { git_packbuilder_write(builder, $0, 0, nil, nil) },
                  "writing a pack of \(ids.count) objects into \(packDir)")
        guard git_packbuilder_object_count(builder) == ids.count else {
            throw GitError(code: GitError.Code.generic, errorClass: 0,
                           message: "the pack written into \(packDir) holds \(git_packbuilder_object_count(builder)) objects, not the \(ids.count) of the batch",
                           call: "git_packbuilder_write")
        }
    }
}

@available(*, unavailable)
extension PackBatch: Sendable {}

/// The pack builder's progress callback, as an object a C callback can reach.
final class PackTicker {
    let tick: () -> Bool
    init(_ tick: @escaping () -> Bool) { self.tick = tick }
}
