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
        "cannot watch \(path): \(call) failed: \(errno). Check that the directory exists and is readable by this user."
    }
}
