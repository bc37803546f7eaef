import CCompression
import Glibc
import SystemPackage

/// Reads a loose object's content in chunks with read(2) and zlib. libgit2 1.5's own stream maps
/// the whole compressed file, and every mapped page counts in the agent's resident memory: a
/// 1 GiB file cost 1 GiB of RSS while it was written out.
package enum LooseObject {
    /// Hands the content of the loose object `id` under `objects` to `body`, at most `chunk` bytes
    /// at a time. Nil when there is no loose file for it (packed, or absent): nothing was read.
    /// Throws when the file is damaged (zlib's own check, or a size that does not match).
    package static func stream(objects: FilePath, id: Oid, chunk: Int,
                       into body: (UnsafeRawBufferPointer) throws -> Void) throws -> (type: String, size: Int)? {
        try stream(file: path(objects: objects, id: id), chunk: chunk, into: body)
    }

    /// Where the loose object `id` is under `objects` (`xx/yyyy...`).
    package static func path(objects: FilePath, id: Oid) -> FilePath {
        let hex = id.hex
        return objects.appending(String(hex.prefix(2))).appending(String(hex.dropFirst(2)))
    }

    /// The same for the loose object file at `path`, whatever its name.
    package static func stream(file path: FilePath, chunk: Int,
                       into body: (UnsafeRawBufferPointer) throws -> Void) throws -> (type: String, size: Int)? {
        let fd = path.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        func damaged(_ why: String) -> GitError {
            GitError.damagedObject("loose object \(path) is damaged: \(why)", call: "inflate")
        }
        var z = z_stream()
        guard syncagent_inflate_init(&z) == Z_OK else { throw damaged("zlib would not start") }
        defer { inflateEnd(&z) }
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { input.deallocate() }
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: max(chunk, 64), alignment: 16)
        defer { output.deallocate() }
        var header: [UInt8]? = []
        var kind = "", size = 0, delivered = 0
        var ended = false
        while !ended {
            let n = read(fd, input.baseAddress, input.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw damaged(String(cString: strerror(errno)))
            }
            if n == 0 { throw damaged("it ends before its zlib stream does") }
            z.next_in = input.baseAddress!.assumingMemoryBound(to: Bytef.self)
            z.avail_in = uInt(n)
            // Until the input is used up and the last call left room in the output: a call that
            // filled the output may hold more, even with no input left.
            var full = false
            repeat {
                z.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
                z.avail_out = uInt(output.count)
                let rc = inflate(&z, Z_NO_FLUSH)
                guard rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR else { throw damaged("zlib error \(rc)") }
                ended = rc == Z_STREAM_END
                full = z.avail_out == 0
                var produced = UnsafeRawBufferPointer(rebasing: output[0..<(output.count - Int(z.avail_out))])
                if header != nil {
                    // "<type> <size>\0", then the content
                    guard let nul = produced.firstIndex(of: 0) else {
                        header! += produced
                        guard header!.count < 64 else { throw damaged("no object header") }
                        continue
                    }
                    header! += produced[..<nul]
                    let parts = header!.split(separator: UInt8(ascii: " "))
                    guard parts.count == 2, let n = Int(String(decoding: parts[1], as: UTF8.self)) else {
                        throw damaged("a malformed object header")
                    }
                    kind = String(decoding: parts[0], as: UTF8.self)
                    size = n
                    header = nil
                    produced = UnsafeRawBufferPointer(rebasing: produced[(nul + 1)...])
                }
                if !produced.isEmpty {
                    delivered += produced.count
                    guard delivered <= size else { throw damaged("more bytes than its header says") }
                    try body(produced)
                }
                if rc == Z_BUF_ERROR { break }
            } while (z.avail_in > 0 || full) && !ended
        }
        guard header == nil, delivered == size else { throw damaged("\(delivered) of \(size) bytes") }
        return (kind, size)
    }
}
