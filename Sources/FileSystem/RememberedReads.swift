import Glibc
import Synchronization
import SystemPackage

/// Small files read again only when they changed: the refs of a hub or a peer, read whole at
/// every round (with 100 devices through one hub, 200 ref files each time, each an open, two
/// reads and a close, in directories that a hundred agents watch). A file seen with the same
/// device, inode, size, change and modification times as when it was read holds what was read.
///
/// Git and libgit2 replace a ref by renaming a new file over it. The rule against racy files is
/// `LooseRefMemo`'s: a file is remembered only once its change time is `settledNanoseconds` older
/// than the clock read before it was looked at (file systems stamp times from a coarse clock, and
/// ext4 hands a freed inode out again at once, so a file rewritten within one tick can show the
/// inode and times it had); a change time without nanoseconds is never remembered.
public enum RememberedReads {
    /// Past this many files the memo starts again (a hub of 100 devices: about 200 refs).
    static let limit = 2048
    /// Files bigger than this are read each time (and not kept).
    static let maxBytes = 64 << 10
    public static let settledNanoseconds: Int64 = 50_000_000

    /// Bytes kept in all, past which the memo starts again (refs are 41 bytes; a hub's
    /// `packed-refs`, a few KiB).
    static let limitBytes = 1 << 20

    private struct Memo {
        var files: [FilePath: (file: FileStat.Identity, bytes: [UInt8])] = [:]
        var bytes = 0
        /// Per root given to `read`: whether its file system is this machine's own (and when
        /// that was last asked, in seconds of the monotonic clock).
        var local: [FilePath: (yes: Bool, at: Int)] = [:]
    }
    private static let memo = Mutex(Memo())

    /// The bytes of the file at `path`, as `Files.read` gives them (the same errors: missing is
    /// `ENOENT`, a symbolic link `ELOOP`), from the memo when the file is the one read before.
    /// Only on this machine's own file systems (`LocalFileSystem`, asked of `root` once a minute):
    /// on NFS, `lstat` may answer from the client's cache for a minute where `open` asks the
    /// server, and the server's clock stamps the times. Elsewhere every call reads the file.
    public static func read(_ path: FilePath, root: FilePath, settledNanoseconds settled: Int64 = settledNanoseconds) throws(Errno) -> [UInt8] {
        guard isLocal(root) else { return try Files.read(path) }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var st = stat()
        guard path.withPlatformString({ lstat($0, &st) }) == 0 else { throw Errno(rawValue: errno) }
        if let file = identity(st), let known = memo.withLock({ $0.files[path] }), known.file == file {
            return known.bytes
        }
        let fd = path.withPlatformString { open($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        defer { close(fd) }
        guard fstat(fd, &st) == 0 else { throw Errno(rawValue: errno) }
        let bytes = try readAll(fd, expecting: st.st_mode & S_IFMT == S_IFREG ? Int(st.st_size) : 0)
        if let file = identity(st), isSettled(file, before: now, by: settled), bytes.count == Int(st.st_size), bytes.count <= maxBytes {
            memo.withLock { memo in
                if memo.files.count >= limit || memo.bytes + bytes.count > limitBytes {
                    memo.files.removeAll(keepingCapacity: true)
                    memo.bytes = 0
                }
                memo.bytes += bytes.count - (memo.files[path]?.bytes.count ?? 0)
                memo.files[path] = (file, bytes)
            }
        }
        return bytes
    }

    /// The identity a memo of a file may keep it under: a regular file's, when its change time has
    /// nanoseconds (a file system keeping whole seconds could write it twice in one and show the
    /// same times). Git's rule against racy files, with `isSettled`; `LooseRefMemo` keeps it too.
    public static func identity(_ st: stat) -> FileStat.Identity? {
        guard st.st_mode & S_IFMT == S_IFREG, st.st_ctim.tv_nsec != 0 else { return nil }
        return FileStat(st).identity
    }

    /// Whether a file of this identity, read after the clock said `now`, may be remembered: its
    /// change time is more than `settled` nanoseconds older (any later version has a later one).
    public static func isSettled(_ file: FileStat.Identity, before now: timespec, by settled: Int64) -> Bool {
        (Int64(now.tv_sec) - file.ctimeSeconds) * 1_000_000_000 + (Int64(now.tv_nsec) - file.ctimeNanoseconds) > settled
    }

    /// Whether `root` is on one of this machine's own file systems, asked again after a minute.
    private static func isLocal(_ root: FilePath) -> Bool {
        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &clock)
        let now = Int(clock.tv_sec)
        if let known = memo.withLock({ $0.local[root] }), now - known.at < 60 { return known.yes }
        let yes = LocalFileSystem.seesEveryChange(at: root)
        memo.withLock { memo in
            if memo.local.count >= 64 { memo.local.removeAll() }
            memo.local[root] = (yes, now)
        }
        return yes
    }

    /// Whether the memo holds `path` (for tests).
    static func remembers(_ path: FilePath) -> Bool { memo.withLock { $0.files[path] != nil } }

    /// Everything `fd` holds, read in one call when it holds `expecting` bytes (one more byte of
    /// room tells the end), in more when it grew meanwhile.
    private static func readAll(_ fd: Int32, expecting: Int) throws(Errno) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(expecting + 1, 64))
        var used = 0
        while true {
            if used == out.count { out += [UInt8](repeating: 0, count: out.count) }
            let n = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + used, $0.count - used) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Errno(rawValue: errno)
            }
            if n == 0 { break }
            used += n
        }
        out.removeSubrange(used...)
        return out
    }
}
