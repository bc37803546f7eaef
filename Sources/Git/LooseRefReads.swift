import CLibgit2
import FileSystem
import Glibc
import ObjectStorage
import SystemPackage

/// Loose refs read without libgit2, and remembered by their file's identity: `HEAD` and `main`
/// are asked for several times per merge, and with 100 devices through a hub, each of libgit2's
/// answers (`HEAD` opened and read, `main` stat'ed, opened and read, `packed-refs` stat'ed, the
/// configuration looked at) was a tenth of an agent's system calls in a burst.
///
/// Git and libgit2 only ever replace a ref by renaming a new file over it: a new inode, with a new
/// change time. While `lstat` gives the same inode, size, change and modification times, the
/// file holds what was read, with git's rule against racy files: a file is only remembered once
/// its change time is `settled` older than the clock read before it was looked at. File systems
/// stamp times from a coarse clock (a tick of 1-10 ms), and ext4 hands a freed inode out again at
/// once: a ref rewritten twice within one tick can come back with the inode and the times it had,
/// and a newer id. A file that old was written before the read, and any later version has a later
/// change time. (A change time with no nanoseconds at all: never remembered.) Anything that is not
/// plainly a loose ref (packed only, a directory, damaged bytes, a symbolic ref to a packed one)
/// is left to libgit2, which answers as before.
struct LooseRefMemo {
    /// A regular file's identity, when it may be remembered (`RememberedReads.identity`).
    private static func identity(_ st: stat) -> FileStat.Identity? { RememberedReads.identity(st) }

    private enum Target {
        case id(Oid)
        case symbolic(String)
    }

    private var known: [String: (file: FileStat.Identity, target: Target)] = [:]
    /// Past this many refs, the memo starts again (a hub's mirror and tracking refs: hundreds).
    static let limit = 4096
    /// How much older than the clock a file's change time must be for it to be remembered.
    let settledNanoseconds: Int64

    init(settledNanoseconds: Int64 = 50_000_000) { self.settledNanoseconds = settledNanoseconds }

    /// How many refs are remembered (for tests).
    var count: Int { known.count }

    /// The id `name` names through loose files only (a symbolic ref followed), or nil: then
    /// libgit2 answers.
    mutating func resolve(_ name: String, in gitDir: FilePath, depth: Int = 0) -> Oid? {
        guard depth < 5, !name.isEmpty, !name.hasPrefix("/"), !name.contains("..") else { return nil }
        let path = gitDir.appending(name)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var st = stat()
        guard path.withPlatformString({ lstat($0, &st) }) == 0, let id = Self.identity(st) else { return nil }
        if let memo = known[name], memo.file == id {
            switch memo.target {
            case .id(let oid): return oid
            case .symbolic(let target): return resolve(target, in: gitDir, depth: depth + 1)
            }
        }
        guard let read = Self.read(path) else { return nil }
        if known.count >= Self.limit { known.removeAll(keepingCapacity: true) }
        known[name] = RememberedReads.isSettled(read.file, before: now, by: settledNanoseconds) ? read : nil
        switch read.target {
        case .id(let oid): return oid
        case .symbolic(let target): return resolve(target, in: gitDir, depth: depth + 1)
        }
    }

    /// The file's identity (from the descriptor it was read through) and what it says: 40 hex
    /// digits and a newline, or `ref: refs/...` and a newline.
    private static func read(_ path: FilePath) -> (file: FileStat.Identity, target: Target)? {
        let fd = path.withPlatformString { open($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, let id = Self.identity(st), st.st_size > 0, st.st_size < 256 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size) + 1)
        let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n == Int(st.st_size), bytes[n - 1] == UInt8(ascii: "\n") else { return nil }
        let line = bytes[0..<(n - 1)]
        if line.count == 40, let hex = String(validating: line, as: UTF8.self), let oid = Oid(hex: hex) {
            return (id, .id(oid))
        }
        let prefix = Array("ref: refs/".utf8)
        if line.starts(with: prefix), let name = String(validating: line.dropFirst(5), as: UTF8.self),
           !name.contains(" "), !name.contains("..") {
            return (id, .symbolic(name))
        }
        return nil
    }
}
