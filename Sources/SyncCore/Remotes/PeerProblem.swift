/// What went wrong with a peer: a code a program can act on (`status --json` `errorCode`) and
/// the message a user reads, which names the peer and its url and says what to do.
public struct PeerProblem: Error, Sendable, Equatable, CustomStringConvertible {
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
        case other
    }

    public let code: Code
    public let message: String
    public var description: String { message }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
