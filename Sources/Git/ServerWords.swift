import CLibgit2
import ObjectStorage

/// What went wrong on the far side of a fetch or push, when only words tell it. ssh exits 255 for
/// every failure of its own (unknown host key, refused key, no route), and git servers and http
/// answer a missing repository, a refused write or a full disk with a line of text: there is no
/// code to read. This is the one place that reads those words, at the edge where they come in; every
/// layer above decides on this value and on libgit2's class and code, never on a message.
public enum ServerSaid: Sendable, Equatable {
    /// ssh: the server's host key is not in known_hosts ("Host key verification failed").
    case hostKeyUnknown
    /// ssh: the server's host key changed, or another host-key failure.
    case hostKey
    /// The server refused who we are (a key it does not know, a wrong password).
    case authentication
    /// There is no repository at that url (404, "does not appear to be a git repository").
    case repositoryMissing
    /// The server refused to read or write it (403, "permission denied").
    case permissionDenied
    /// The server's disk or quota is full.
    case diskFull
}

extension GitError {
    /// What the server or ssh said, read from libgit2's message; nil when the words name none of these.
    public var serverSaid: ServerSaid? {
        let text = message.lowercased()
        if text.contains("host key verification failed") { return .hostKeyUnknown }
        if text.contains("host key") { return .hostKey }
        if code == Code.auth || text.hasPrefix("authentication failed") || text.contains("permission denied (publickey") {
            return .authentication
        }
        if text.contains("no space") || text.contains("disk full") || text.contains("quota") { return .diskFull }
        if text.contains("could not find repository") || text.contains("not found") || text.contains("status code: 404")
            || text.contains("does not appear to be a git repository") || text.contains("not a git repository") {
            return .repositoryMissing
        }
        if text.contains("permission denied") || text.contains("403") { return .permissionDenied }
        return nil
    }
}
