import SystemPackage

/// What went wrong, for the user-facing layer: a code a program can act on (`errorCode` in
/// `status --json` and `sync`'s results), the path, peer or url it concerns, the message a user
/// reads (which names that subject and says what to do), and the underlying cause for the log.
/// Made in one place per source: `SyncError(_:)` for the store's errors, `SyncError.fetching` and
/// `pushing` for a peer's (libgit2's class and code first, then what servers say in words).
public struct SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// The server refused every key or password offered.
        case auth
        /// The server's host key is not known, or it changed.
        case hostKey = "host-key"
        /// No repository (or store) at the url.
        case notFound = "not-found"
        /// The host cannot be reached (no route, refused, no answer).
        case unreachable
        /// A fetch or push stopped moving and was abandoned.
        case timeout
        /// The server refused a push (permissions, a hook, gitolite's rules).
        case refused
        /// Another device pushes under this device's name.
        case nameClash = "name-clash"
        /// The server or this disk is full.
        case diskFull = "disk-full"
        /// The peer's history is damaged or hostile; nothing of it was merged.
        case badHistory = "bad-history"
        /// Merges wait (deletions held, the data directory gone).
        case held
        /// The peer is paused (`syncagent pause`): nothing is exchanged with it until `resume`.
        case paused
        /// The config file is wrong (a key, a value, a missing directory).
        case badConfig = "bad-config"
        /// Another agent (or a one-shot command) holds the state directory's lock.
        case locked
        /// No agent answers on the control socket.
        case noAgent = "no-agent"
        /// No such conflict record, or it is settled already.
        case noSuchConflict = "no-such-conflict"
        /// A path or version that is not there, or a target that already is.
        case noSuchPath = "no-such-path"
        /// Reading or writing a file failed (permissions, the file system).
        case io
        case other
    }

    public let code: Code
    public let message: String
    /// The path, peer or url this is about, as messages show it.
    public var subject: String?
    /// What failed underneath, as it was thrown (a `GitError` with libgit2's class and code, an
    /// `Errno`, a store error), for the log and for code that needs more than `code`.
    public var cause: (any Error & Sendable)?
    public var description: String { message }

    /// Equal when the code, the message and the subject are (the cause is what led there).
    public static func == (a: SyncError, b: SyncError) -> Bool {
        a.code == b.code && a.message == b.message && a.subject == b.subject
    }

    public init(_ code: Code, _ message: String, subject: String? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.subject = subject
        self.cause = cause
    }
}
