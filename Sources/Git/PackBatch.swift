import CLibgit2
import SystemPackage

/// Objects written into a pack of exactly those objects beside the store's others, a new pack each
/// time one holds `flushBytes` and at `flush()`: a big batch costs no inode per object and no later
/// repacking. Each object is compressed once and streamed to the pack's temporary file
/// (`PackFileWriter`), so a batch holds no object in memory. No delta search (a batch is new
/// content; for photos it found nothing and cost most of the CPU); the store's own repacking finds
/// deltas between versions. Objects are not synced: make them durable before a reference names
/// them. One thread at a time.
public final class PackBatch {
    let gitDir: FilePath
    let flushBytes: Int
    /// The store's packed objects, for `has` (never re-read on a miss; re-read after each pack of ours).
    private let odb: OpaquePointer
    private var writer: PackFileWriter?
    /// The objects of the pack being written.
    private var waiting: Set<Oid> = []
    /// Packs written so far.
    public private(set) var packs = 0
    /// Their names (the checksum's hex, as `Repository.pack(_:holds:)` takes them).
    public private(set) var names: [String] = []
    /// A write or a pack failed: objects this batch said it holds may not be in the store, so
    /// every later call throws this (the caller drops what the batch wrote).
    private var failed: GitError?
    /// Called while a pack is finished; returning false abandons it (the write throws).
    var onProgress: (() -> Bool)?

    public init(gitDir: FilePath, flushBytes: Int = 32 << 20) throws(GitError) {
        // The store's packs only: asking the loose objects is an access(2) per miss, and most
        // objects of a batch are new. An object held only loose is packed once more (harmless).
        var odb: OpaquePointer?
        var packs: UnsafeMutablePointer<git_odb_backend>?
        let objects = gitDir.appending("objects")
        try check(git_odb_new(&odb), "git_odb_new")
        guard objects.withPlatformString({ git_odb_backend_pack(&packs, $0) }) == 0,
              git_odb_add_backend(odb, packs, 1) == 0 else {
            let error = lastError(code: GitError.Code.generic, call: "git_odb_backend_pack(\(objects))")
            git_odb_free(odb)
            throw error
        }
        self.gitDir = gitDir
        self.flushBytes = flushBytes
        self.odb = odb!
    }

    /// A miss does not re-read the pack directory (most objects of a batch are new): at worst an
    /// object another process packed meanwhile is written once more.
    static let noRefresh = UInt32(GIT_ODB_LOOKUP_NO_REFRESH.rawValue)

    deinit {
        writer?.abandon()
        git_odb_free(odb)
    }

    /// Whether the object is in the batch or already in one of the store's packs.
    public func has(_ id: Oid) -> Bool {
        if waiting.contains(id) { return true }
        var raw = id.raw
        return git_odb_exists_ext(odb, &raw, Self.noRefresh) == 1
    }

    /// Adds an object (nothing when the store or the batch has it already); returns its id.
    @discardableResult
    public func write(_ data: UnsafeRawBufferPointer, type: git_object_t = GIT_OBJECT_BLOB) throws(GitError) -> Oid {
        var out = git_oid()
        try check(git_odb_hash(&out, data.baseAddress, data.count, type), "git_odb_hash")
        let id = Oid(out)
        if let failed { throw failed }
        guard !has(id) else { return id }
        do {
            let writer: PackFileWriter
            if let open = self.writer {
                writer = open
            } else {
                writer = try PackFileWriter(packDir: gitDir.appending("objects").appending("pack"))
                self.writer = writer
            }
            try writer.append(data, type: type, id: id)
        } catch {
            failed = error
            throw error
        }
        waiting.insert(id)
        if let writer, writer.size >= UInt64(flushBytes) { try flush() }
        return id
    }

    /// Finishes the pack being written (with its index) and puts it beside the store's others.
    public func flush() throws(GitError) {
        if let failed { throw failed }
        guard let writer else { return }
        self.writer = nil
        defer { waiting.removeAll(keepingCapacity: true) }  // in the store now, or abandoned
        do {
            names.append(String(try writer.finish(tick: onProgress).dropFirst("pack-".count)))
        } catch {
            failed = error
            throw error
        }
        _ = git_odb_refresh(odb)  // the new pack: what it holds is still found by `has`
        packs += 1
    }
}

@available(*, unavailable)
extension PackBatch: Sendable {}
