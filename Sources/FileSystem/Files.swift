import Glibc
import Synchronization
import SystemPackage

/// Byte-exact file operations: every name goes from `FilePath` to the syscall as its own bytes
/// (`withPlatformString`), never through `String`. No policy: callers decide what to write where.
public enum Files {
    /// `unlink(2)`; nothing there is not an error.
    public static func remove(_ path: FilePath) throws(Errno) {
        let rc = path.withPlatformString { unlink($0) }
        if rc != 0 && errno != ENOENT { throw Errno(rawValue: errno) }
    }

    /// `rmdir(2)`; true when the directory was removed (it was empty).
    @discardableResult
    public static func removeEmptyDirectory(_ path: FilePath) -> Bool {
        path.withPlatformString { rmdir($0) } == 0
    }

    /// Removes a directory that holds no files, only (possibly nested) empty directories; true when
    /// it is gone. A file or link anywhere inside keeps it (empty branches may go).
    @discardableResult
    public static func removeDirectoryWithoutFiles(_ path: FilePath) -> Bool {
        guard let entries = try? Directory.entries(of: path) else { return false }
        for entry in entries {
            let child = path.appending(entry.name)
            let kind = entry.kind ?? ((try? FileStat.of(child)) ?? nil)?.kind
            guard kind == .directory, removeDirectoryWithoutFiles(child) else { return false }
        }
        return removeEmptyDirectory(path)
    }

    /// Removes a file, link or whole directory tree (links are never followed).
    public static func removeTree(_ path: FilePath) throws(Errno) {
        guard let stat = try FileStat.of(path) else { return }
        guard stat.kind == .directory else { return try remove(path) }
        for entry in try Directory.entries(of: path) {
            try removeTree(path.appending(entry.name))
        }
        if path.withPlatformString({ rmdir($0) }) != 0 && errno != ENOENT { throw Errno(rawValue: errno) }
    }

    /// `rename(2)`.
    public static func rename(_ from: FilePath, to: FilePath) throws(Errno) {
        let rc = from.withPlatformString { f in to.withPlatformString { t in Glibc.rename(f, t) } }
        if rc != 0 { throw Errno(rawValue: errno) }
    }

    /// Swaps two existing names atomically (`renameat2` with `RENAME_EXCHANGE`): each name then
    /// holds what the other held. Lets a writer replace a file and still get at the old one,
    /// including bytes written into it up to the very moment of the swap.
    public static func exchange(_ a: FilePath, _ b: FilePath) throws(Errno) {
        let rc = a.withPlatformString { x in b.withPlatformString { y in linuxRenameat2(AT_FDCWD, x, AT_FDCWD, y, 2 /* RENAME_EXCHANGE */) } }
        if rc != 0 { throw Errno(rawValue: errno) }
    }

    /// `renameat2` with `RENAME_NOREPLACE`: throws `.fileExists` when `to` exists (appeared),
    /// instead of replacing it.
    public static func renameNoReplace(_ from: FilePath, to: FilePath) throws(Errno) {
        let rc = from.withPlatformString { x in to.withPlatformString { y in linuxRenameat2(AT_FDCWD, x, AT_FDCWD, y, 1 /* RENAME_NOREPLACE */) } }
        if rc != 0 { throw Errno(rawValue: errno) }
    }

    /// Creates a directory and its missing parents. A non-directory in the way throws `.fileExists`.
    public static func makeDirectories(_ path: FilePath, mode: mode_t = 0o755) throws(Errno) {
        if let stat = try FileStat.of(path) {
            if stat.kind == .directory { return }
            throw .fileExists
        }
        let parent = path.removingLastComponent()
        if !parent.isEmpty, parent != path { try makeDirectories(parent, mode: mode) }
        let rc = path.withPlatformString { mkdir($0, mode) }
        if rc != 0 && errno != EEXIST { throw Errno(rawValue: errno) }
    }

    /// The whole content of a regular file.
    public static func read(_ path: FilePath) throws(Errno) -> [UInt8] {
        let fd = path.withPlatformString { open($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }  // never blocks on a FIFO put there meanwhile
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Errno(rawValue: errno)
            }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
        }
    }

    /// The target of a symbolic link, as bytes.
    public static func readLink(_ path: FilePath) throws(Errno) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = path.withPlatformString { p in
            buffer.withUnsafeMutableBytes { readlink(p, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
        }
        guard n >= 0 else { throw Errno(rawValue: errno) }
        return Array(buffer[0..<n])
    }

    /// Creates a new regular file (it must not exist) holding `bytes`, with mode 0644 or 0755.
    /// On any failure nothing is left behind.
    public static func create(_ path: FilePath, bytes: some Collection<UInt8>, executable: Bool) throws(Errno) {
        let all = Array(bytes)
        try create(path, executable: executable) { sink in
            try all.withUnsafeBytes { buffer in try sink.write(buffer) }
        }
    }

    /// Creates a new regular file (it must not exist) whose bytes `contents` hands to the sink,
    /// chunk by chunk, with mode 0644 or 0755. On any failure, the sink's or one `contents`
    /// throws, nothing is left behind; an error that is not an `Errno` becomes `EIO`.
    /// - Parameter mtime: set as the file's modification time once its bytes are written (a
    ///   `WriteStamp`); when the file system will not take it, the file is left with its own.
    /// - Parameter writeback: start the file's writeback once its bytes are written, whatever its
    ///   size (a file an `fsync` follows soon: its blocks join the journal transaction of its rename).
    public static func create(_ path: FilePath, executable: Bool, mtime: timespec? = nil, writeback: Bool = false,
                              contents: (FileSink) throws -> Void) throws(Errno) {
        let fd = path.withPlatformString { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, executable ? 0o755 : 0o644) }
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        var failure: Errno?
        let sink = FileSink(fd: fd)
        do {
            try contents(sink)
        } catch let error as Errno {
            failure = error
        } catch {
            failure = .ioError
        }
        // The umask may have taken bits: set the mode we mean (a syscall per file only when it did).
        let mode: mode_t = executable ? 0o755 : 0o644
        if failure == nil, mode & processUmask != 0, fchmod(fd, mode) != 0 { failure = Errno(rawValue: errno) }
        if failure == nil, let mtime {
            let times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2 /* UTIME_OMIT: atime as it is */), mtime]
            _ = times.withUnsafeBufferPointer { futimens(fd, $0.baseAddress) }
        }
        if failure == nil, writeback || sink.written >= Durability.writebackFrom { Durability.startWriteback(fd) }
        if close(fd) != 0, failure == nil { failure = Errno(rawValue: errno) }
        if let failure {
            _ = path.withPlatformString { unlink($0) }
            throw failure
        }
    }

    /// Where `create` writes: every byte handed over is written before `write` returns.
    public final class FileSink {
        let fd: Int32
        /// Bytes written so far.
        public private(set) var written = 0

        init(fd: Int32) { self.fd = fd }

        public func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw Errno(rawValue: errno)
                }
                offset += n
                written += n
            }
        }

        /// Makes what was written durable (`fsync`), unless durability is off (`Durability.disabled`).
        public func flush() throws(Errno) {
            guard !Durability.disabled, !Durability.flush(fd) else { return }
            throw Errno(rawValue: errno)
        }
    }

    /// Creates a symbolic link at `path` pointing at `target` (bytes, exactly).
    public static func createLink(_ path: FilePath, target: [UInt8]) throws(Errno) {
        let rc = path.withPlatformString { p in
            (target + [0]).withUnsafeBufferPointer { t in
                t.withMemoryRebound(to: CChar.self) { symlink($0.baseAddress!, p) }
            }
        }
        if rc != 0 { throw Errno(rawValue: errno) }
    }
}

/// The agent's temporary files in the data directory: short names (so a 255-byte user name still
/// fits beside them), created exclusively, and recognisable so start-up can remove what a killed
/// agent left.
public enum AgentTemporary {
    /// Every temporary name starts with this; with the `.tmp` suffix the watcher ignores it.
    public static let prefix = ".syncagent-"

    /// Numbers temporaries across the whole process: two writers in one directory (an app's `set`
    /// and a merge, two applies on two threads) never pick the same name.
    private static let issued = Atomic<UInt64>(0)

    /// This process's names start with this: `.syncagent-<pid>.<nonce>-`. The random nonce tells
    /// them from an earlier process that had the same pid (PID 1 in a container always does), whose
    /// leftovers start-up must remove.
    private static let processPrefix = prefix + String(getpid(), radix: 16) + "." + String(UInt32.random(in: 1...UInt32.max), radix: 16) + "-"
    private static let landingPrefix = Array((processPrefix + "a").utf8)

    /// A fresh temporary path in `directory`: `.syncagent-<pid>.<nonce>-<n>.tmp` (at most ~50
    /// bytes), `n` unique in this process; `counter` is set to `n`. `landing`: a temporary of the
    /// apply, which records itself what it moves in and out through it (`-a<n>`, `isOwnLanding`).
    public static func path(in directory: FilePath, counter: inout UInt64, landing: Bool = false) -> FilePath {
        counter = issued.add(1, ordering: .relaxed).newValue
        return directory.appending(processPrefix + (landing ? "a" : "") + String(counter, radix: 16) + ".tmp")
    }

    /// Whether a name is one of this process's landing temporaries (`path(in:counter:landing: true)`).
    public static func isOwnLanding(_ name: FilePath.Component) -> Bool {
        name.withPlatformString { c in
            let bytes = UnsafeRawBufferPointer(start: c, count: strlen(c))
            return bytes.starts(with: landingPrefix) && bytes.count > landingPrefix.count + 4 && bytes.suffix(4).elementsEqual(".tmp".utf8)
        }
    }

    /// Whether a name is one of ours: this naming, or the longer one older versions used
    /// (`.NAME.syncagent.tmp`).
    public static func isTemporary(_ name: FilePath.Component) -> Bool {
        // Every temporary's name begins with '.': told without making a string for the others.
        guard name.withPlatformString({ $0[0] == CChar(UInt8(ascii: ".")) }) else { return false }
        let bytes = Array(name.string.utf8)
        let s = name.string
        guard bytes.count < 256 else { return false }
        return (s.hasPrefix(prefix) && s.hasSuffix(".tmp")) || (s.hasPrefix(".") && s.hasSuffix(".syncagent.tmp"))
    }

    /// Removes every temporary a killed agent left under `root` (a full walk: start-up only).
    @discardableResult
    /// This process's own temporaries are left alone: they are writes in flight (a program that
    /// embeds the agent may be setting a value while the agent starts).
    public static func removeLeftovers(under root: FilePath) -> [FilePath] {
        var removed: [FilePath] = []
        let mine = processPrefix
        Directory.walk(root, descend: { $0.lastComponent?.string != ".git" }) { rel, kind in
            guard kind != .directory, let name = rel.lastComponent, isTemporary(name), !name.string.hasPrefix(mine) else { return }
            if (try? Files.remove(root.pushing(rel))) != nil { removed.append(rel) }
        }
        return removed
    }
}

/// glibc declares it only under _GNU_SOURCE, which Swift's Glibc module does not set.
@_silgen_name("renameat2")
private func linuxRenameat2(_ olddirfd: Int32, _ oldpath: UnsafePointer<CChar>, _ newdirfd: Int32,
                            _ newpath: UnsafePointer<CChar>, _ flags: UInt32) -> Int32

/// The process's umask, read once from `/proc/self/status` (umask(2) can only read it by setting
/// it, which other threads creating files at that moment would see). Unknown: every bit, so
/// `create` always sets the mode itself.
private let processUmask: mode_t = {
    guard let bytes = try? Files.read(FilePath("/proc/self/status")) else { return 0o777 }
    let key = Array("Umask:".utf8)
    var start = 0
    while start < bytes.count {
        let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
        let line = bytes[start..<end]
        if line.starts(with: key) {
            var value: mode_t = 0
            var digits = 0
            for byte in line.dropFirst(key.count) where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") {
                guard (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(byte) else { return 0o777 }
                value = value * 8 + mode_t(byte - UInt8(ascii: "0"))
                digits += 1
            }
            return digits > 0 ? value : 0o777
        }
        start = end + 1
    }
    return 0o777
}()
