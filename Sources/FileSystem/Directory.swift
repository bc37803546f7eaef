import Glibc
import Synchronization
import SystemPackage

/// Directory listing with names kept byte-exact.
public enum Directory {
    public struct Entry: Sendable {
        public let name: FilePath.Component
        /// From `d_type`; nil when the file system does not say (then `lstat` the entry).
        public let kind: FileStat.Kind?
    }

    /// The entries of a directory, without "." and "..". Throws the errno of `opendir`.
    public static func entries(of path: FilePath) throws(Errno) -> [Entry] {
        guard let dir = path.withPlatformString({ opendir($0) }) else { throw Errno(rawValue: errno) }
        defer { closedir(dir) }
        var result: [Entry] = []
        while let ent = readdir(dir) {
            let name: FilePath.Component? = withUnsafePointer(to: &ent.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: 256) { chars in
                    FilePath.Component(platformString: chars)
                }
            }
            guard let name, name.kind == .regular else { continue }  // skips "." and ".."
            result.append(Entry(name: name, kind: kind(ofDirentType: ent.pointee.d_type)))
        }
        return result
    }

    static func kind(ofDirentType type: UInt8) -> FileStat.Kind? {
        switch Int(type) {
        case Int(DT_REG): .regular
        case Int(DT_DIR): .directory
        case Int(DT_LNK): .symlink
        case Int(DT_FIFO): .fifo
        case Int(DT_SOCK): .socket
        case Int(DT_CHR): .characterDevice
        case Int(DT_BLK): .blockDevice
        default: nil
        }
    }

    /// Every non-directory under `root` (relative paths), never following links. Directories that
    /// cannot be read are passed to `unreadable` and skipped; `descend` may prune subtrees.
    public static func walk(_ root: FilePath, descend: (FilePath) -> Bool = { _ in true },
                            unreadable: (FilePath, Errno) -> Void = { _, _ in },
                            visit: (FilePath, FileStat.Kind) -> Void) {
        var stack: [FilePath] = [FilePath("")]
        while let rel = stack.popLast() {
            let abs = rel.isEmpty ? root : root.pushing(rel)
            let list: [Entry]
            do { list = try entries(of: abs) } catch {
                unreadable(rel, error)
                continue
            }
            for entry in list {
                let child = rel.appending(entry.name)
                var kind = entry.kind
                if kind == nil { kind = (try? FileStat.of(root.pushing(child)))?.kind }
                guard let kind else { continue }
                if kind == .directory {
                    if descend(child) { stack.append(child) }
                    visit(child, .directory)
                } else {
                    visit(child, kind)
                }
            }
        }
    }
}

/// Durability without an fsync per file.
public enum Durability {
    /// `SYNCAGENT_UNSAFE_NO_FSYNC=1` in the environment: nothing is flushed at all. For `make bench`
    /// only (its "durability" row: what the flushes cost); a power cut can then lose or damage the
    /// store and the data the agent wrote. The agent says so in its log when it starts.
    public static let disabled: Bool = {
        guard let value = getenv("SYNCAGENT_UNSAFE_NO_FSYNC") else { return false }
        return value[0] == 0x31 && value[1] == 0  // exactly "1"
    }()

    /// What this task's flushes made durable, for tests that hold a write path to its flush (a
    /// power cut in between is what they stand for): set with `Durability.$log.withValue`. Task
    /// local, so tests running side by side see only their own.
    public final class FlushLog: Sendable {
        private let state = Mutex<(files: [FilePath], fileSystems: [FilePath])>(([], []))
        private let onFlush: @Sendable () -> Void
        /// `onFlush`: called after each flush is noted (a test looks at what the disk holds then).
        public init(onFlush: @escaping @Sendable () -> Void = {}) { self.onFlush = onFlush }
        /// Files flushed one by one (`fsync`), in order.
        public var files: [FilePath] { state.withLock { $0.files } }
        /// Paths whose whole file system was flushed (`syncfs`).
        public var fileSystems: [FilePath] { state.withLock { $0.fileSystems } }
        func note(files: some Sequence<FilePath>) {
            state.withLock { $0.files += files }
            onFlush()
        }
        func note(fileSystem path: FilePath) {
            state.withLock { $0.fileSystems.append(path) }
            onFlush()
        }
    }
    @TaskLocal public static var log: FlushLog?

    /// Flushes everything written to the file system that holds `path` (`syncfs(2)`): one call makes
    /// a whole batch of new git objects durable before a ref points at them.
    public static func flushFileSystem(containing path: FilePath) {
        guard !disabled else { return }
        let fd = path.withPlatformString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return }
        defer { close(fd) }
        if linuxSyncfs(fd) == 0 { log?.note(fileSystem: path) }  // noted once made, as `flushFiles` notes
    }
}

extension Durability {
    /// Makes these files and the directories that name them durable, one `fsync` each (a
    /// directory once, however many of the files it holds). False when a file cannot be opened,
    /// or anything cannot be flushed: the caller then flushes the whole file system instead. The
    /// caller lists every parent up to the one that stays, so a directory already gone is skipped.
    /// Every file's writeback is started before the first `fsync` (`startWriteback`): on ext4 the
    /// first `fsync` then commits one journal transaction that holds every file's blocks, and the
    /// later ones find their data written and their transaction committed (four new objects:
    /// 3.1-3.5 -> 1.4-1.6 ms on the bench's ext4). Each file still gets its own `fsync`.
    public static func flushFiles(_ files: [FilePath], andDirectories extra: [FilePath] = []) -> Bool {
        guard !disabled else { return true }
        var directories: [FilePath] = []
        var seen = Set<FilePath>()
        for file in files {
            let up = file.removingLastComponent()
            if seen.insert(up).inserted { directories.append(up) }
        }
        for dir in extra where seen.insert(dir).inserted { directories.append(dir) }
        var start = files.startIndex
        while start < files.endIndex {
            let chunk = files[start ..< min(start + filesOpenAtOnce, files.endIndex)]
            start = chunk.endIndex
            var fds: [Int32] = []
            defer { for fd in fds { close(fd) } }
            for file in chunk {
                let fd = file.withPlatformString { open($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
                guard fd >= 0 else { return false }
                fds.append(fd)
                startWriteback(fd)
            }
            guard fds.allSatisfy(flush) else { return false }
            log?.note(files: chunk)
        }
        return directories.allSatisfy { dir in
            let fd = dir.withPlatformString { open($0, O_RDONLY | O_CLOEXEC | O_DIRECTORY) }
            // A directory that is gone (pruned once empty) needs no flush: its parent, which names
            // it no more, is flushed with the others.
            guard fd >= 0 else { return errno == ENOENT }
            defer { close(fd) }
            return flush(fd)
        }
    }

    /// Makes a file written by replacing it (a lock file renamed over it: a git ref, the index)
    /// durable at `relative` under `root`: the file, then every directory from its own up to
    /// `root` (a ref's directory may be new). After a power cut the file is then either this
    /// version or, had the cut come before this returned, the one before it; never a name that
    /// points at data that was never written. False when anything cannot be flushed.
    @discardableResult
    public static func flushReplaced(_ relative: FilePath, under root: FilePath) -> Bool {
        var dirs: [FilePath] = []
        var dir = relative.removingLastComponent()
        while !dir.isEmpty {
            dirs.append(root.pushing(dir))
            dir.removeLastComponent()
        }
        dirs.append(root)
        return flushFiles([root.pushing(relative)], andDirectories: dirs)
    }

    /// `flushFiles` for files that may not exist (objects a write found already packed): those
    /// that are there, and their directories.
    public static func flushExisting(_ files: [FilePath], andDirectories extra: [FilePath] = []) -> Bool {
        flushFiles(files.filter { ((try? FileStat.of($0)) ?? nil) != nil }, andDirectories: extra)
    }

    /// Files held open at once by `flushFiles` (its callers list at most a few hundred).
    public static let filesOpenAtOnce = 64

    /// `fsync`, again after an interrupt; false on any other failure (`errno` says which).
    static func flush(_ fd: Int32) -> Bool {
        while fsync(fd) != 0 {
            guard errno == EINTR else { return false }
        }
        return true
    }
}

extension Durability {
    /// Files at least this big start their way to the disk as soon as they are written
    /// (`startWriteback`): the batch's one flush then waits for the last of them only.
    public static let writebackFrom = 1 << 20

    /// Starts writing `fd`'s dirty pages in `offset ..< offset + count` (0: to the end) to the disk
    /// and returns without waiting (`sync_file_range(2)` with `SYNC_FILE_RANGE_WRITE`, as git's
    /// `core.fsyncMethod=batch` does). Durable only after the flush that follows; until then the
    /// kernel would hold hundreds of megabytes of a big batch dirty and write them all inside it.
    public static func startWriteback(_ fd: Int32, offset: Int64 = 0, count: Int64 = 0) {
        guard !disabled else { return }
        _ = linuxSyncFileRange(fd, offset, count, 2 /* SYNC_FILE_RANGE_WRITE */)
    }
}

@_silgen_name("sync_file_range")
private func linuxSyncFileRange(_ fd: Int32, _ offset: Int64, _ count: Int64, _ flags: UInt32) -> Int32

/// `syncfs(2)`: glibc declares it only under _GNU_SOURCE, which Swift's Glibc module does not set.
@_silgen_name("syncfs")
private func linuxSyncfs(_ fd: Int32) -> Int32
