import CLibgit2
import ObjectStorage
import Glibc
import SystemPackage

/// An object database backend that writes loose objects whose bytes are stored in zlib's "stored"
/// blocks, not compressed: for bytes deflate cannot shrink (`Incompressible`), where zlib's
/// fastest level ran at 64 MB/s on this machine and level 0 at 1.4 GB/s (the blocks are framed
/// here, `StoredZlib`, with libdeflate's Adler-32: faster still). libgit2's own loose
/// backend cannot do this (at level 0 it writes no zlib stream at all: an object git cannot read).
///
/// It implements only `writestream`; libgit2 hashes what goes through the stream (collision
/// detection included) and hands the id to `finalize_write`, and `git_odb_write` on a database of
/// this backend alone goes through the same stream. The object is written to a temporary file in
/// `objects/`, then renamed to `objects/xx/yyyy…` (an object already there is kept). Not synced:
/// like every loose object here, it is made durable before a reference names it.
enum StoredLooseBackend {
    /// A new object database holding only this backend for `objects`. Free with `git_odb_free`.
    /// - Parameter existing: the store's own object database (its packs and loose objects): an
    ///   object it has is not written again (libgit2 asks `exists` before a write and before a
    ///   stream's finish). Taken over: freed with the backend, or here when this throws.
    static func database(objects: FilePath, existing: OpaquePointer) throws(GitError) -> OpaquePointer {
        let directory = Directory(objects: objects, existing: existing)  // from here on it owns `existing`
        return try CustomOdb.database { backend in
            backend.pointee.owner = Unmanaged.passRetained(directory).toOpaque()
            backend.pointee.parent.writestream = openStream
            backend.pointee.parent.exists = { raw, oid in
                guard let raw, let oid else { return 0 }
                let directory = Unmanaged<Directory>.fromOpaque(CustomOdb.owner(raw)).takeUnretainedValue()
                return git_odb_exists_ext(directory.existing, oid, UInt32(GIT_ODB_LOOKUP_NO_REFRESH.rawValue))  // (a pack made meanwhile: a second copy, harmless)
            }
            backend.pointee.parent.free = { raw in
                guard let raw else { return }
                Unmanaged<Directory>.fromOpaque(CustomOdb.owner(raw)).release()
                UnsafeMutableRawPointer(raw).assumingMemoryBound(to: syncagent_odb_backend.self).deallocate()
            }
        }
    }

    final class Directory {
        let objects: FilePath
        /// A reference of its own to the store's object database (freed with the backend).
        let existing: OpaquePointer
        init(objects: FilePath, existing: OpaquePointer) {
            self.objects = objects
            self.existing = existing
        }
        deinit { git_odb_free(existing) }
    }

    private static let openStream: @convention(c) (
        UnsafeMutablePointer<UnsafeMutablePointer<git_odb_stream>?>?, UnsafeMutablePointer<git_odb_backend>?,
        git_object_size_t, git_object_t
    ) -> Int32 = { out, backend, size, type in
        guard let out, let backend else { return -1 }
        let directory = Unmanaged<Directory>.fromOpaque(CustomOdb.owner(backend)).takeUnretainedValue()
        guard let writer = Writer(objects: directory.objects, size: UInt64(size), type: type) else {
            return -1
        }
        let stream = UnsafeMutablePointer<syncagent_odb_stream>.allocate(capacity: 1)
        stream.initialize(to: syncagent_odb_stream())
        stream.pointee.parent.backend = backend
        stream.pointee.parent.mode = UInt32(GIT_STREAM_WRONLY.rawValue)
        stream.pointee.owner = Unmanaged.passRetained(writer).toOpaque()
        stream.pointee.parent.write = { raw, buffer, length in
            guard let raw else { return -1 }
            return Writer.of(raw).write(UnsafeRawBufferPointer(start: buffer, count: length)) ? 0 : -1
        }
        stream.pointee.parent.finalize_write = { raw, oid in
            guard let raw, let oid else { return -1 }
            return Writer.of(raw).finish(Oid(oid.pointee)) ? 0 : -1
        }
        stream.pointee.parent.free = { raw in
            guard let raw else { return }
            let own = UnsafeMutableRawPointer(raw).assumingMemoryBound(to: syncagent_odb_stream.self)
            Unmanaged<Writer>.fromOpaque(own.pointee.owner).release()  // an unfinished one drops its file
            own.deallocate()
        }
        out.pointee = UnsafeMutableRawPointer(stream).assumingMemoryBound(to: git_odb_stream.self)
        return 0
    }

    /// One object being written: "type size\0" then the bytes, in stored blocks.
    final class Writer {
        let objects: FilePath
        private var fd: Int32
        private let temp: FilePath
        /// The Adler-32 of every byte so far (the zlib stream's trailer).
        private var adler: UInt32 = 1
        private var out: [UInt8] = []
        private var failed = false

        static func of(_ raw: UnsafeMutablePointer<git_odb_stream>) -> Writer {
            Unmanaged<Writer>.fromOpaque(UnsafeMutableRawPointer(raw).assumingMemoryBound(to: syncagent_odb_stream.self).pointee.owner)
                .takeUnretainedValue()
        }

        init?(objects: FilePath, size: UInt64, type: git_object_t) {
            self.objects = objects
            do {
                (fd, temp) = try PackFileWriter.temporary(in: objects, prefix: "tmp_obj_", what: "object file")
            } catch {
                git_error_set_str(Int32(GIT_ERROR_OS.rawValue), error.message)
                return nil
            }
            out.reserveCapacity(1 << 17)
            out.append(contentsOf: StoredZlib.header)
            let name: String
            switch type {
            case GIT_OBJECT_BLOB: name = "blob"
            case GIT_OBJECT_TREE: name = "tree"
            case GIT_OBJECT_COMMIT: name = "commit"
            default: name = "tag"
            }
            let header = Array("\(name) \(size)".utf8) + [0]
            guard header.withUnsafeBytes({ write($0) }) else { return nil }
        }

        deinit {
            if fd >= 0 {
                close(fd)
                _ = temp.withPlatformString { unlink($0) }
            }
        }

        /// Writes `bytes` into the file as stored blocks (with `finish`, then the end of the zlib
        /// stream), 16 blocks (1 MiB) at a time: `git_odb_write` hands a whole object.
        func write(_ bytes: UnsafeRawBufferPointer, finish: Bool = false) -> Bool {
            guard !failed, fd >= 0 else { return false }
            adler = Checksum.adler32(adler, bytes)
            var at = 0
            while at < bytes.count {
                let n = min(16 * StoredZlib.blockLimit, bytes.count - at)
                StoredZlib.appendBlocks(UnsafeRawBufferPointer(rebasing: bytes[at..<(at + n)]), to: &out)
                at += n
                guard writeAll(out.count) else { return fail() }
                out.removeAll(keepingCapacity: true)
            }
            if finish {
                StoredZlib.appendEnd(adler: adler, to: &out)
                guard writeAll(out.count) else { return fail() }
                out.removeAll(keepingCapacity: true)
            }
            return true
        }

        private func fail() -> Bool {
            failed = true
            return false
        }

        private func writeAll(_ count: Int) -> Bool {
            var done = 0
            while done < count {
                let n = out.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, count - done) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    git_error_set_str(Int32(GIT_ERROR_OS.rawValue), "cannot write a temporary object file in \(objects): \(Errno(rawValue: errno))")
                    return false
                }
                done += n
            }
            return true
        }

        /// Ends the zlib stream and puts the file at the object's name.
        func finish(_ id: Oid) -> Bool {
            guard write(UnsafeRawBufferPointer(start: nil, count: 0), finish: true) else { return false }
            if lseek(fd, 0, SEEK_CUR) >= 1 << 20 { PackFileWriter.startWriteback(fd) }  // before the batch's flush
            fchmod(fd, 0o444)
            let closed = close(fd) == 0
            fd = -1
            var renamed = false
            defer { if !renamed { _ = temp.withPlatformString { unlink($0) } } }
            guard closed else {
                git_error_set_str(Int32(GIT_ERROR_OS.rawValue), "cannot write object \(id) in \(objects): \(Errno(rawValue: errno))")
                return false
            }
            let hex = id.hex
            let dir = objects.appending(String(hex.prefix(2)))
            _ = dir.withPlatformString { mkdir($0, 0o777) }  // (the umask applies, as for git's own)
            let final = dir.appending(String(hex.dropFirst(2)))
            // An object already there (written meanwhile by another handle) is the same object.
            if final.withPlatformString({ access($0, F_OK) }) == 0 { return true }
            let rc = temp.withPlatformString { a in final.withPlatformString { b in rename(a, b) } }
            guard rc == 0 else {
                git_error_set_str(Int32(GIT_ERROR_OS.rawValue), "cannot put object \(hex) in \(objects): \(Errno(rawValue: errno))")
                return false
            }
            renamed = true
            return true
        }
    }
}
