import CLibgit2
import ObjectStorage
import SystemPackage

/// Objects written into a pack of exactly those objects beside the store's others, a new pack each
/// time one holds `flushBytes` and at `flush()`: a big batch costs no inode per object and no later
/// repacking. Each object is framed in stored blocks and streamed to the pack's temporary file
/// (`PackFileWriter.deflateAtRest`: deflated once the store is at rest), so a batch holds no
/// object in memory. No delta search (a batch is new
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
        if let streamOdb { git_odb_free(streamOdb) }
        git_odb_free(odb)
    }

    /// An object was found in one of the store's packs (maybe one this batch wrote, maybe one
    /// nobody has flushed yet): flushing `names` alone then does not cover every id it returned.
    public private(set) var foundStored = false

    /// Whether the object is in the batch or already in one of the store's packs.
    public func has(_ id: Oid) -> Bool {
        if waiting.contains(id) { return true }
        var raw = id.raw
        guard git_odb_exists_ext(odb, &raw, Self.noRefresh) == 1 else { return false }
        foundStored = true
        return true
    }

    /// Adds an object (nothing when the store or the batch has it already); returns its id.
    @discardableResult
    public func write(_ data: UnsafeRawBufferPointer, type: git_object_t = GIT_OBJECT_BLOB) throws(GitError) -> Oid {
        var out = git_oid()
        try check(git_odb_hash(&out, data.baseAddress, data.count, type), "git_odb_hash")
        let id = Oid(out)
        if let failed { throw failed }
        guard !has(id) else { return id }
        try failing { () throws(GitError) in try openWriter().append(data, type: ObjectType(type), id: id) }
        waiting.insert(id)
        if let writer, writer.size >= UInt64(flushBytes) { try flush() }
        return id
    }

    /// A database whose only backend streams objects into this batch (`withStreamDatabase`).
    private var streamOdb: OpaquePointer?
    /// Whether the object streamed next is stored rather than deflated.
    fileprivate var streamStored = false

    /// Calls `body` with an object database whose `git_odb_open_wstream` writes into this batch's
    /// pack: libgit2 hashes the pieces as they go through (collision detection included) and names
    /// the object at the stream's end. A big file is so read once and never held whole; an object
    /// the store or the batch has already, or a stream given up, is taken back out of the pack.
    /// - Parameter stored: the object's bytes look incompressible (`Incompressible`).
    public func withStreamDatabase<T>(stored: Bool, _ body: (OpaquePointer) throws(GitError) -> T) throws(GitError) -> T {
        if let failed { throw failed }
        if streamOdb == nil { streamOdb = try PackStreamBackend.database(for: self) }
        streamStored = stored
        return try body(streamOdb!)
    }

    /// Starts an object streamed in through `streamOdb`.
    fileprivate func beginStream(type: git_object_t, size: UInt64) throws(GitError) -> PackFileWriter {
        if let failed { throw failed }
        return try failing { () throws(GitError) in
            let writer = try openWriter()
            try writer.begin(type: ObjectType(type), size: size, stored: streamStored)
            return writer
        }
    }

    /// The next piece of the object being streamed in; a failure fails the batch.
    fileprivate func feedStream(_ writer: PackFileWriter, _ bytes: UnsafeRawBufferPointer) throws(GitError) {
        try failing { () throws(GitError) in try writer.feed(bytes) }
    }

    /// The pack being written, started on first use.
    private func openWriter() throws(GitError) -> PackFileWriter {
        if let writer { return writer }
        let made = try PackFileWriter(packDir: gitDir.appending("objects").appending("pack"), deflateAtRest: true)
        writer = made
        return made
    }

    /// `body`, and when it throws, the batch fails with its error (every later call throws it).
    private func failing<T>(_ body: () throws(GitError) -> T) throws(GitError) -> T {
        do {
            return try body()
        } catch {
            failed = error
            throw error
        }
    }

    /// Ends the object being streamed in: it is `id`, and in the batch from now on.
    fileprivate func endStream(_ writer: PackFileWriter, id: Oid) throws(GitError) {
        try failing { () throws(GitError) in try writer.end(id: id) }
        waiting.insert(id)
        if writer.size >= UInt64(flushBytes) { try flush() }
    }

    /// Finishes the pack being written (with its index) and puts it beside the store's others.
    public func flush() throws(GitError) {
        if let failed { throw failed }
        guard let writer else { return }
        self.writer = nil
        defer { waiting.removeAll(keepingCapacity: true) }  // in the store now, or abandoned
        let name = try failing { () throws(GitError) in try writer.finish(tick: onProgress) }
        names.append(String(name.dropFirst("pack-".count)))
        _ = git_odb_refresh(odb)  // the new pack: what it holds is still found by `has`
        packs += 1
    }
}

@available(*, unavailable)
extension PackBatch: Sendable {}

/// The object database backend behind `PackBatch.withStreamDatabase`: `exists` asks the batch,
/// `writestream` feeds the batch's pack. It holds the batch unretained (the batch owns the database).
private enum PackStreamBackend {
    static func batch(_ backend: UnsafeMutablePointer<git_odb_backend>) -> PackBatch {
        Unmanaged<PackBatch>.fromOpaque(CustomOdb.owner(backend)).takeUnretainedValue()
    }

    static func database(for batch: PackBatch) throws(GitError) -> OpaquePointer {
        try CustomOdb.database { backend in
            backend.pointee.owner = Unmanaged.passUnretained(batch).toOpaque()
            backend.pointee.parent.writestream = openStream
            backend.pointee.parent.exists = { raw, oid in
                guard let raw, let oid else { return 0 }
                return PackStreamBackend.batch(raw).has(Oid(oid.pointee)) ? 1 : 0
            }
            backend.pointee.parent.free = { raw in
                guard let raw else { return }
                UnsafeMutableRawPointer(raw).assumingMemoryBound(to: syncagent_odb_backend.self).deallocate()
            }
        }
    }

    /// One object on its way into the batch's pack; dropped from it unless it was finished.
    final class Stream {
        let batch: PackBatch
        let writer: PackFileWriter
        var finished = false
        init(batch: PackBatch, writer: PackFileWriter) {
            self.batch = batch
            self.writer = writer
        }
        deinit { if !finished { writer.drop() } }

        static func of(_ raw: UnsafeMutablePointer<git_odb_stream>) -> Stream {
            Unmanaged<Stream>.fromOpaque(UnsafeMutableRawPointer(raw).assumingMemoryBound(to: syncagent_odb_stream.self).pointee.owner)
                .takeUnretainedValue()
        }
    }

    static func fail(_ error: GitError) -> Int32 {
        git_error_set_str(Int32(GIT_ERROR_OS.rawValue), error.message)
        return -1
    }

    private static let openStream: @convention(c) (
        UnsafeMutablePointer<UnsafeMutablePointer<git_odb_stream>?>?, UnsafeMutablePointer<git_odb_backend>?,
        git_object_size_t, git_object_t
    ) -> Int32 = { out, backend, size, type in
        guard let out, let backend else { return -1 }
        let owner = PackStreamBackend.batch(backend)
        let writer: PackFileWriter
        do throws(GitError) { writer = try owner.beginStream(type: type, size: UInt64(size)) } catch { return fail(error) }
        let stream = UnsafeMutablePointer<syncagent_odb_stream>.allocate(capacity: 1)
        stream.initialize(to: syncagent_odb_stream())
        stream.pointee.parent.backend = backend
        stream.pointee.parent.mode = UInt32(GIT_STREAM_WRONLY.rawValue)
        stream.pointee.owner = Unmanaged.passRetained(Stream(batch: owner, writer: writer)).toOpaque()
        stream.pointee.parent.write = { raw, buffer, length in
            guard let raw else { return -1 }
            let own = Stream.of(raw)
            do throws(GitError) { try own.batch.feedStream(own.writer, UnsafeRawBufferPointer(start: buffer, count: length)) } catch { return fail(error) }
            return 0
        }
        stream.pointee.parent.finalize_write = { raw, oid in
            guard let raw, let oid else { return -1 }
            let own = Stream.of(raw)
            own.finished = true
            do throws(GitError) { try own.batch.endStream(own.writer, id: Oid(oid.pointee)) } catch { return fail(error) }
            return 0
        }
        stream.pointee.parent.free = { raw in
            guard let raw else { return }
            let own = UnsafeMutableRawPointer(raw).assumingMemoryBound(to: syncagent_odb_stream.self)
            Unmanaged<Stream>.fromOpaque(own.pointee.owner).release()  // an unfinished one is dropped
            own.deallocate()
        }
        out.pointee = UnsafeMutableRawPointer(stream).assumingMemoryBound(to: git_odb_stream.self)
        return 0
    }
}
