import CCompression
import Glibc
import SystemPackage

/// One pack and its index (both version 2, as git's own `index-pack` leaves them), written from
/// whole objects as they come: each is compressed once and streamed to a temporary file; the
/// pack's checksum and its index are made at `finish`, then both are renamed into `objects/pack`
/// (the index last: git and libgit2 see a pack by its index). No deltas.
///
/// Why not libgit2's pack builder: it keeps every object in memory, then its indexer inflates and
/// hashes each one again, and every `git_odb_write` in front of it re-reads the pack directory.
/// In a profile of a 100k-file first commit that was two thirds of the hashing threads' time.
/// The files written here are checked by `git verify-pack` and `git fsck` in `PackFileWriterTests`.
/// One thread at a time.
package final class PackFileWriter {
    /// zlib's fastest level: most of a batch is new files, often photos that do not compress; the
    /// store's own repacking (`Packs.swift`) writes the long-lived packs.
    package static let compression: Int32 = 1

    package struct Entry {
        // (In this order 32 bytes a stride, not 40: 100k objects' entries are 3.2 MB.)
        package var offset: UInt64
        package var id: Oid
        package var crc: UInt32
    }

    package let packDir: FilePath
    private var fd: Int32
    private let tempPath: FilePath
    private var pending: [UInt8] = []
    /// `pending` goes to the file once it holds this much: a start-up commit has several writers
    /// open (one per hashing core, and the chunk ahead), and at 256 KiB each one's buffer grew to
    /// 512 KiB (1.5 MB of a 100k-file commit's peak); more system calls at 64 KiB cost nothing seen.
    static let writeFrom = 64 << 10
    /// Bytes of the pack so far, header included (the next object's offset).
    package private(set) var size: UInt64 = 12
    private var entries: [Entry] = []
    private var stream = z_stream()
    /// libdeflate at the same level, for whole objects (`append`): twice zlib's speed on text, and
    /// as small (a streamed object, whose bytes come in pieces, goes through zlib).
    /// Made at the first object deflated (a batch's writer, `deflateAtRest`, never deflates: zlib's
    /// and libdeflate's state were 250 KB a writer for nothing).
    private var compressor: OpaquePointer?
    /// Whether `stream` was initialised (at the first object streamed through zlib).
    private var streamReady = false
    private var scratch: [UInt8] = []
    private var finished = false
    /// A write failed: the file no longer matches `entries`, so nothing more goes in and
    /// `finish` refuses (the pack is abandoned).
    private var broken: GitError?

    /// Every object is framed in stored blocks as it comes, compressible or not: deflate is left
    /// for when the store is at rest (`PackRollUp.combine(deflating:)`). Deflate was about half of a
    /// sending agent's CPU on a folder of documents, and inflating it again twice more on the
    /// receiving side (the adoption's check, the apply); stored blocks are read as they lie
    /// (`PackedObjects`). Until then such a pack takes about twice the room for text.
    package let deflateAtRest: Bool

    package var count: Int { entries.count }

    /// Room for this many objects' entries, ahead of time.
    package func reserve(_ objects: Int) { entries.reserveCapacity(objects) }

    /// The object added `position`-th.
    package func entry(at position: Int) -> Entry { entries[position] }

    /// Where the object `id` starts, if it was added (a look through every entry).
    package func offset(of id: Oid) -> UInt64? { entries.first { $0.id == id }?.offset }

    package init(packDir: FilePath, deflateAtRest: Bool = false) throws(GitError) {
        self.deflateAtRest = deflateAtRest
        let (fd, path) = try Self.temporary(in: packDir, prefix: "tmp_pack_")
        self.fd = fd
        self.tempPath = path
        self.packDir = packDir
        pending.reserveCapacity(2 * Self.writeFrom)
        pending.append(contentsOf: Array("PACK".utf8) + [0, 0, 0, 2, 0, 0, 0, 0])  // the count is set at `finish`
    }

    deinit {
        if streamReady { deflateEnd(&stream) }
        if let compressor { libdeflate_free_compressor(compressor) }
        if !finished { abandon() }
    }

    /// An object's header in a pack: its type and size, 4 bits then 7 at a time, low bits first.
    package static func header(type: ObjectType, size: UInt64) -> [UInt8] {
        var header: [UInt8] = []
        var rest = size
        var byte = UInt8(truncatingIfNeeded: (UInt64(type.rawValue) << 4) | (rest & 0x0f))
        rest >>= 4
        while rest > 0 {
            header.append(byte | 0x80)
            byte = UInt8(truncatingIfNeeded: rest & 0x7f)
            rest >>= 7
        }
        header.append(byte)
        return header
    }

    /// Adds one whole object; `id` is its id (the caller hashed it).
    package func append(_ data: UnsafeRawBufferPointer, type: ObjectType, id: Oid) throws(GitError) {
        if let broken { throw broken }
        drop()  // a stream libgit2 opened and never finished or freed is not part of the pack
        if let broken { throw broken }
        guard data.count <= Int(UInt32.max) else {
            throw GitError(code: GitError.Code.generic, errorClass: 0, message: "object \(id) is too big for a pack batch (\(data.count) bytes)", call: "PackFileWriter.append")
        }
        // Bytes that look random (photos, video, archives: already compressed) are stored as they
        // are: deflate would spend most of a batch's time on them for nothing. The same framing
        // as a streamed object's, in one piece.
        if deflateAtRest || Incompressible.looks(data) {
            try begin(type: type, size: UInt64(data.count), stored: true)
            try feed(data)
            return try end(id: id)
        }
        let header = Self.header(type: type, size: UInt64(data.count))
        let produced = compress(data)
        guard produced > 0 else { throw zlibFailed(id) }
        let crc = header.withUnsafeBytes { Checksum.crc32(0, $0) }
        let whole = scratch.withUnsafeBytes { Checksum.crc32(crc, UnsafeRawBufferPointer(rebasing: $0[..<produced])) }
        entries.append(Entry(offset: size, id: id, crc: whole))
        pending.append(contentsOf: header)
        pending.append(contentsOf: scratch[..<produced])
        size += UInt64(header.count + produced)
        if pending.count >= Self.writeFrom { try writePending() }
    }

    /// The object being streamed in (`begin`, `feed`, `end`): where it starts, the CRC-32 of what
    /// of it was produced so far, whether its bytes are stored rather than deflated, and (stored)
    /// the Adler-32 of its bytes so far.
    private var streaming: (start: UInt64, crc: UInt32, stored: Bool, adler: UInt32)?
    /// Room for one piece of deflate's output while streaming.
    private var piece: [UInt8] = []

    /// Starts an object of `size` bytes whose bytes come in pieces (`feed`), and whose id is known
    /// only at `end`: a big file is read, hashed and packed in one pass, never held whole.
    /// `stored`: its bytes look incompressible (`Incompressible`), so deflate only frames them.
    package func begin(type: ObjectType, size objectSize: UInt64, stored: Bool) throws(GitError) {
        let stored = stored || deflateAtRest
        drop()  // a stream libgit2 opened and never finished or freed is not part of the pack
        if let broken { throw broken }
        if !stored {
            if !streamReady {
                guard syncagent_deflate_init(&stream, Self.compression) == Z_OK else { throw zlibFailed(nil) }
                streamReady = true
            } else {
                guard deflateReset(&stream) == Z_OK else { throw zlibFailed(nil) }
            }
            if piece.isEmpty { piece = [UInt8](repeating: 0, count: 1 << 17) }
        }
        var header = Self.header(type: type, size: objectSize)
        if stored { header += StoredZlib.header }
        let crc = header.withUnsafeBytes { Checksum.crc32(0, $0) }
        streaming = (size, crc, stored, 1)
        pending.append(contentsOf: header)
        size += UInt64(header.count)
    }

    /// Deflates the next piece of the object being streamed into the pack.
    package func feed(_ bytes: UnsafeRawBufferPointer) throws(GitError) {
        try deflatePiece(bytes, finish: false)
    }

    /// Ends the object being streamed: `id` is its id, hashed from the pieces fed.
    package func end(id: Oid) throws(GitError) {
        try deflatePiece(UnsafeRawBufferPointer(start: nil, count: 0), finish: true)
        guard let object = streaming else { return }
        streaming = nil
        entries.append(Entry(offset: object.start, id: id, crc: object.crc))
    }

    /// Takes the object being streamed back out of the pack (the store had it already, or its file
    /// changed while it was read): the pack ends where it ended before `begin`.
    package func drop() {
        guard let object = streaming else { return }
        streaming = nil
        let written = size - UInt64(pending.count)  // what is in the file already
        if object.start >= written {
            pending.removeLast(Int(size - object.start))
        } else {
            pending.removeAll(keepingCapacity: true)
            if broken == nil, ftruncate(fd, off_t(object.start)) != 0 || lseek(fd, off_t(object.start), SEEK_SET) < 0 {
                broken = ioFailed("cannot take an object back out of", errno)
            }
        }
        size = object.start
        writtenBack = min(writtenBack, size)
    }

    private func deflatePiece(_ bytes: UnsafeRawBufferPointer, finish: Bool) throws(GitError) {
        if let broken { throw broken }
        guard var object = streaming else { preconditionFailure("no object is being streamed into this pack") }
        if object.stored {
            // Stored blocks, framed here: one pass of each checksum over the bytes, no zlib.
            let start = pending.count
            if finish {
                StoredZlib.appendEnd(adler: object.adler, to: &pending)
            } else {
                object.adler = Checksum.adler32(object.adler, bytes)
                StoredZlib.appendBlocks(bytes, to: &pending)
            }
            object.crc = pending.withUnsafeBytes { Checksum.crc32(object.crc, UnsafeRawBufferPointer(rebasing: $0[start...])) }
            size += UInt64(pending.count - start)
            streaming = object
            if pending.count >= Self.writeFrom { try writePending() }
            return
        }
        func run(_ zs: inout z_stream) throws(GitError) {
            zs.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: Bytef.self))
            zs.avail_in = uInt(bytes.count)
            defer { zs.next_in = nil }
            while true {
                let rc = piece.withUnsafeMutableBufferPointer { out -> Int32 in
                    zs.next_out = out.baseAddress
                    zs.avail_out = uInt(out.count)
                    return deflate(&zs, finish ? Z_FINISH : Z_NO_FLUSH)
                }
                guard rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR else { throw zlibFailed(nil) }
                let produced = piece.count - Int(zs.avail_out)
                object.crc = piece.withUnsafeBytes { Checksum.crc32(object.crc, UnsafeRawBufferPointer(rebasing: $0[..<produced])) }
                pending.append(contentsOf: piece[..<produced])
                size += UInt64(produced)
                if pending.count >= Self.writeFrom { try writePending() }
                if finish ? rc == Z_STREAM_END : (zs.avail_in == 0 && zs.avail_out > 0) { return }
            }
        }
        // (a piece is at most what a read returns: far below zlib's 32-bit counts)
        try run(&stream)
        streaming = object
    }

    /// Deflates one whole object into `scratch` (a zlib stream, as a pack holds it); returns how
    /// many bytes it took, 0 when libdeflate failed.
    private func compress(_ data: UnsafeRawBufferPointer) -> Int {
        if compressor == nil { compressor = libdeflate_alloc_compressor(Self.compression) }
        guard let compressor else { return 0 }
        let bound = libdeflate_zlib_compress_bound(compressor, data.count)
        if scratch.count < bound { scratch = [UInt8](repeating: 0, count: bound) }
        return scratch.withUnsafeMutableBytes { out in
            libdeflate_zlib_compress(compressor, data.baseAddress, data.count, out.baseAddress, out.count)
        }
    }

    /// Adds one object exactly as another pack holds it (its header and compressed bytes, an
    /// offset delta's base offset already rewritten for this pack); returns where it starts.
    @discardableResult
    package func appendRaw(_ bytes: UnsafeRawBufferPointer, id: Oid) throws(GitError) -> UInt64 {
        drop()
        if let broken { throw broken }
        let start = size
        entries.append(Entry(offset: start, id: id, crc: Checksum.crc32(0, bytes)))
        pending.append(contentsOf: bytes)
        size += UInt64(bytes.count)
        if pending.count >= Self.writeFrom { try writePending() }
        return start
    }

    /// `appendRaw` for an object read from `fd` (another pack) at `offset`, `length` bytes, in
    /// pieces: a big object is never held whole. Its bytes must have the CRC-32 `expected` (the
    /// other pack's index says so); when they do not, nothing more goes into this pack and
    /// `finish` refuses (what was copied already cannot be told apart from the rest).
    @discardableResult
    package func appendRaw(from fd: Int32, offset: UInt64, length: Int, id: Oid, crc expected: UInt32,
                           source: FilePath) throws(GitError) -> UInt64 {
        drop()
        if let broken { throw broken }
        let start = size
        var crc: UInt32 = 0
        var chunk = [UInt8](repeating: 0, count: min(length, 1 << 20))
        var done = 0
        while done < length {
            let want = min(chunk.count, length - done)
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = GitError(code: GitError.Code.generic, errorClass: 0,
                                     message: "cannot read \(source)\(n < 0 ? ": " + String(cString: strerror(errno)) : ": it ends early")",
                                     call: "PackFileWriter.appendRaw", osError: n < 0 ? errno : nil)
                broken = error
                throw error
            }
            chunk.withUnsafeBytes { crc = Checksum.crc32(crc, UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            pending.append(contentsOf: chunk[..<n])
            size += UInt64(n)
            done += n
            if pending.count >= Self.writeFrom { try writePending() }
        }
        guard crc == expected else {
            let error = GitError(code: GitError.Code.generic, errorClass: 0,
                                 message: "\(source): object \(id) does not match its CRC-32 (the pack is damaged on disk); the packs were left as they are. Check the store with `git --git-dir=<store> fsck --full` and restore a damaged pack from a peer or a backup",
                                 call: "PackFileWriter.appendRaw")
            broken = error
            throw error
        }
        entries.append(Entry(offset: start, id: id, crc: crc))
        return start
    }

    /// Finishes the pack and its index and puts both in `objects/pack`; returns the pack's name
    /// (`pack-<checksum>`). `tick` is called as the pack is read back for its checksum; returning
    /// false abandons it (this throws).
    package func finish(tick: (() -> Bool)? = nil) throws(GitError) -> String {
        do throws(GitError) {
            if let broken { throw broken }
            drop()  // an object left half-streamed is not part of the pack
            if let broken { throw broken }  // (the drop could not take it back out)
            try writePending()
            var count = UInt32(entries.count).bigEndian
            guard pwrite(fd, &count, 4, 8) == 4 else { throw ioFailed("cannot write the object count of", errno) }
            // The pack's checksum: every byte of it, read back (the count is known only now).
            let sha = try StreamSHA1()
            var chunk = [UInt8](repeating: 0, count: 256 << 10)  // (1 MiB a writer was 2 MB of a start-up commit's peak)
            var at: UInt64 = 0
            while at < size {
                let want = Int(min(UInt64(chunk.count), size - at))
                let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(at)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw ioFailed("cannot read back", n < 0 ? errno : EIO) }
                chunk.withUnsafeBytes { sha.update(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                at += UInt64(n)
                if let tick, !tick() {
                    throw GitError(code: GitError.Code.generic, errorClass: 0, message: "writing a pack into \(packDir) was stopped", call: "PackFileWriter.finish")
                }
            }
            let checksum = try sha.finish()
            pending = checksum
            try writePending()
            let name = "pack-" + Oid(bytes: checksum).hex  // git names a pack by its checksum, in hex
            pending = []
            scratch = []
            let (indexFD, indexTemp) = try Self.temporary(in: packDir, prefix: "tmp_idx_")
            defer { close(indexFD) }
            let wrote = Self.writeIndex(entries, checksum: checksum, to: indexFD)
            guard wrote == 0 else {
                _ = indexTemp.withPlatformString { unlink($0) }
                throw ioFailed("cannot write the index of", wrote)
            }
            if size >= UInt64(Self.writebackStep) / 8 {
                Self.startWriteback(fd, offset: writtenBack)
                Self.startWriteback(indexFD)
            }
            _ = fchmod(fd, 0o444)
            _ = fchmod(indexFD, 0o444)
            let packPath = packDir.appending(name + ".pack"), indexPath = packDir.appending(name + ".idx")
            // The same objects may be there already under this name (same bytes, same checksum).
            let existed = packPath.withPlatformString { access($0, F_OK) } == 0
            guard Self.rename(tempPath, packPath) == 0 else {
                _ = indexTemp.withPlatformString { unlink($0) }
                throw ioFailed("cannot rename into place", errno)
            }
            finished = true  // the temporary name is gone
            guard Self.rename(indexTemp, indexPath) == 0 else {
                let why = errno
                _ = indexTemp.withPlatformString { unlink($0) }
                if !existed { _ = packPath.withPlatformString { unlink($0) } }  // a pack without an index is never read
                close(fd)
                fd = -1
                throw ioFailed("cannot put the index beside", why)
            }
            close(fd)
            fd = -1
            return name
        } catch {
            abandon()
            throw error
        }
    }

    /// Removes the temporary pack (nothing of it was put in place).
    package func abandon() {
        guard !finished else { return }
        finished = true
        if fd >= 0 { close(fd) }
        fd = -1
        _ = tempPath.withPlatformString { unlink($0) }
    }

    /// Writes the version 2 index of a pack of `entries` to `fd`: fan-out table, ids in order,
    /// CRC-32s, offsets (31 bits, or an entry of the 64-bit table), the pack's checksum, then its
    /// own. Streamed through 64 KiB, in the order of a sorted list of positions: a roll-up of a
    /// 100k-object store held its 4 MB of entries sorted again and the 2.8 MB index whole, on
    /// top of the list. Returns 0, or the errno of the write that failed.
    package static func writeIndex(_ entries: [Entry], checksum: [UInt8], to fd: Int32) -> Int32 {
        var order = [Int32](0..<Int32(entries.count))
        order.sort { entries[Int($0)].id < entries[Int($1)].id }
        guard let sha = try? StreamSHA1() else { return EIO }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 16)
        var failed: Int32 = 0
        func flush() {
            guard failed == 0, !buffer.isEmpty else { return }
            buffer.withUnsafeBytes { sha.update($0) }
            failed = buffer.withUnsafeBytes { writeAll(fd, $0) }
            buffer.removeAll(keepingCapacity: true)
        }
        func put(_ bytes: UnsafeRawBufferPointer) {
            buffer.append(contentsOf: bytes)
            if buffer.count >= 1 << 16 { flush() }
        }
        func be32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { put($0) } }
        let magic: [UInt8] = [0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2]
        magic.withUnsafeBytes { put($0) }
        var fanout = [UInt32](repeating: 0, count: 256)
        for entry in entries { fanout[Int(entry.id.firstByte)] += 1 }
        var total: UInt32 = 0
        for i in 0..<256 {
            total += fanout[i]
            be32(total)
        }
        for at in order { entries[Int(at)].id.withBytes { put($0) } }
        for at in order { be32(entries[Int(at)].crc) }
        var large: [UInt64] = []
        for at in order {
            let offset = entries[Int(at)].offset
            if offset < 1 << 31 {
                be32(UInt32(offset))
            } else {
                be32(0x8000_0000 | UInt32(large.count))
                large.append(offset)
            }
        }
        for offset in large { withUnsafeBytes(of: offset.bigEndian) { put($0) } }
        checksum.withUnsafeBytes { put($0) }
        flush()
        guard failed == 0 else { return failed }
        guard let own = try? sha.finish() else { return EIO }
        return own.withUnsafeBytes { writeAll(fd, $0) }
    }

    private func writePending() throws(GitError) {
        guard !pending.isEmpty else { return }
        let rc = pending.withUnsafeBytes { Self.writeAll(fd, $0) }
        guard rc == 0 else {
            // Part of it may be in the file: offsets would no longer hold. The pack is given up.
            let error = ioFailed("cannot write", rc)
            broken = error
            throw error
        }
        pending.removeAll(keepingCapacity: true)
        // A big pack goes to the disk while it is written: the flush before a reference names its
        // objects then waits for its tail only.
        if size - writtenBack >= Self.writebackStep {
            Self.startWriteback(fd, offset: writtenBack, count: size - writtenBack)
            writtenBack = size
        }
    }

    /// Bytes of the pack already handed to `startWriteback`.
    private var writtenBack: UInt64 = 0
    package static let writebackStep: UInt64 = 8 << 20

    /// Starts writing `fd`'s dirty pages in the range to the disk without waiting for them
    /// (`sync_file_range(2)`, `SYNC_FILE_RANGE_WRITE`; 0 bytes: to the end). Not durable until the
    /// flush that follows, as with git's `core.fsyncMethod=batch`.
    package static func startWriteback(_ fd: Int32, offset: UInt64 = 0, count: UInt64 = 0) {
        _ = syncFileRange(fd, Int64(offset), Int64(count), 2 /* SYNC_FILE_RANGE_WRITE */)
    }

    /// 0, or the errno of the write that failed.
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n < 0 ? errno : EIO }
            done += n
        }
        return 0
    }

    /// A new file `dir/<prefix>XXXXXX`, open for writing (close-on-exec); `what` names it in errors.
    package static func temporary(in dir: FilePath, prefix: String, what: String = "pack file") throws(GitError) -> (Int32, FilePath) {
        var template = dir.appending(prefix + "XXXXXX").withPlatformString { Array(UnsafeBufferPointer(start: $0, count: strlen($0) + 1)) }
        let fd = mkstemp(&template)
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        guard fd >= 0 else {
            let why = errno
            throw GitError(code: GitError.Code.generic, errorClass: 0,
                           message: "cannot create a temporary \(what) in \(dir): \(String(cString: strerror(why))); check that the store's directory is writable and the disk is not full",
                           call: "mkstemp")
        }
        return (fd, template.withUnsafeBufferPointer { FilePath(platformString: $0.baseAddress!) })
    }

    private static func rename(_ from: FilePath, _ to: FilePath) -> Int32 {
        from.withPlatformString { a in to.withPlatformString { b in Glibc.rename(a, b) } }
    }

    private func ioFailed(_ what: String, _ code: Int32) -> GitError {
        GitError(code: GitError.Code.generic, errorClass: 0,
                 message: "\(what) the pack being written in \(packDir): \(String(cString: strerror(code))); check that the disk is not full",
                 call: "PackFileWriter", osError: code)
    }

    private func zlibFailed(_ id: Oid?) -> GitError {
        GitError(code: GitError.Code.generic, errorClass: 0, message: "zlib or libdeflate could not compress \(id.map { "object \($0)" } ?? "an object") for a pack in \(packDir) (out of memory?); nothing was stored, it is retried with the next commit", call: "deflate")
    }
}

@available(*, unavailable)
extension PackFileWriter: Sendable {}

@_silgen_name("sync_file_range")
private func syncFileRange(_ fd: Int32, _ offset: Int64, _ count: Int64, _ flags: UInt32) -> Int32

/// SHA-1 over a stream of bytes (OpenSSL's, which libgit2's ssh transport links too): the
/// trailers of packs and their indexes, a checksum of bytes this process wrote, and the check that
/// a peer's object holds what its id says (`objectID`). OpenSSL uses the CPU's SHA instructions:
/// 1.9-2.1 GB/s here, where mbedTLS managed 1 GB/s and libgit2's SHA-1 with collision detection
/// 0.44 GB/s, and a pack of photos is re-read whole for it.
/// The ids of the objects this device creates stay libgit2's, with collision detection: a file
/// built to collide (the published SHAttered pair) is refused there instead of taken for its twin.
/// A peer's objects were made that way on the peer; checking them again finds damage as well
/// without it, and a peer able to send a crafted collision could as well send a plain commit.
package final class StreamSHA1 {
    private let context: OpaquePointer

    package init() throws(GitError) {
        guard let context = EVP_MD_CTX_new() else { throw Self.failed("EVP_MD_CTX_new") }
        self.context = context
        guard EVP_DigestInit_ex(context, EVP_sha1(), nil) == 1 else { throw Self.failed("EVP_DigestInit_ex") }
    }

    deinit { EVP_MD_CTX_free(context) }

    /// A failed update is remembered: `finish` then throws.
    private var failedUpdate = false

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        if EVP_DigestUpdate(context, base, bytes.count) != 1 { failedUpdate = true }
    }

    package func finish() throws(GitError) -> [UInt8] {
        if failedUpdate { throw Self.failed("EVP_DigestUpdate") }
        var out = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &out, &length) == 1, length == 20 else { throw Self.failed("EVP_DigestFinal_ex") }
        return out
    }

    /// The id of an object of this type and content, as git computes it (`<type> <size>\0` first).
    package static func objectID(type: ObjectType, content: UnsafeRawBufferPointer) throws(GitError) -> Oid {
        try StreamSHA1().objectID(type: type, content: content)
    }

    /// Starts the id of an object of this type and size through this context (its content goes
    /// through `update`, then `finishObject`).
    package func beginObject(type: ObjectType, size: Int) throws(GitError) {
        guard EVP_DigestInit_ex(context, nil, nil) == 1 else { throw Self.failed("EVP_DigestInit_ex") }
        failedUpdate = false
        Array("\(type.name) \(size)\0".utf8).withUnsafeBytes { update($0) }
    }

    /// The id of the object begun with `beginObject`.
    package func finishObject() throws(GitError) -> Oid { Oid(bytes: try finish()) }

    /// The same, through this context, started again for each object (one context for a whole
    /// pack: OpenSSL 3 looks the digest up again at every new context).
    package func objectID(type: ObjectType, content: UnsafeRawBufferPointer) throws(GitError) -> Oid {
        guard EVP_DigestInit_ex(context, nil, nil) == 1 else { throw Self.failed("EVP_DigestInit_ex") }
        failedUpdate = false
        Array("\(type.name) \(content.count)\0".utf8).withUnsafeBytes { update($0) }
        update(content)
        let digest = try finish()
        return Oid(bytes: digest)
    }

    /// A pack named by a checksum that was never computed would take the name of another: refused.
    package static func failed(_ call: String) -> GitError {
        GitError(code: GitError.Code.generic, errorClass: 0,
                 message: "OpenSSL could not compute a SHA-1 (\(call) failed: out of memory, or SHA-1 disabled in openssl.cnf); nothing was stored, check the system's OpenSSL configuration",
                 call: call)
    }
}
