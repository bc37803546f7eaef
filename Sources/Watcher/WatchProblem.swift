import FileSystem
import SystemPackage

/// Something the watcher could not do. The watcher keeps going; the agent reports these.
public struct WatchProblem: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// `inotify_add_watch` hit `fs.inotify.max_user_watches`; the watcher falls back to periodic scans.
        case watchLimit
        /// A directory could not be watched or read (permissions, ...); it is skipped.
        case unreadable
        /// The watched root itself was deleted or moved away.
        case rootGone
        /// The file system holding the root was unmounted: the kernel dropped every watch on it,
        /// and nothing there is seen until it is watched again.
        case unmounted
        /// A watch limit problem went away: every directory is watched again.
        case recovered
    }

    public let kind: Kind
    /// The directory involved, relative to the root ("" for the root).
    public let path: FilePath
    public let message: String
    public var description: String { message }
}

/// The watcher could not start at all.
public struct WatcherError: Error, Sendable, CustomStringConvertible {
    public let path: FilePath
    public let errno: Errno
    public let call: String
    public var description: String {
        if call == "inotify_init1", errno == .tooManyOpenFiles {
            // EMFILE from inotify_init1 is the per-user limit on inotify instances (each agent
            // process holds one, `InotifyHub`), not open files.
            let limit = Self.instanceLimit.map { " (\($0))" } ?? ""
            return "cannot watch \(path): this user has used all its inotify instances, fs.inotify.max_user_instances\(limit): "
                + "every agent and every other program watching files (editors, IDEs) holds some. Raise it: "
                + "sudo sysctl fs.inotify.max_user_instances=1024, and add that line to /etc/sysctl.d/ to keep it."
        }
        if call == "inotify_init1", errno == .tooManyOpenFilesInSystem || errno == .noMemory {
            return "cannot watch \(path): \(call) failed: \(errno). The system is out of file descriptors or memory; close some programs and start the agent again."
        }
        return "cannot watch \(path): \(call) failed: \(errno). Check that the directory exists and is readable by this user."
    }

    /// The limit in force: this user namespace's (/proc/sys/user/max_inotify_instances, the
    /// same as fs.inotify.max_user_instances outside containers), read from /proc.
    static var instanceLimit: Int? {
        for file in ["/proc/sys/user/max_inotify_instances", "/proc/sys/fs/inotify/max_user_instances"] {
            guard let bytes = try? Files.read(FilePath(file)) else { continue }
            return Int(String(decoding: bytes.filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self))
        }
        return nil
    }
}
