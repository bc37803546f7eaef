import CLibgit2
@testable import Git
@testable import ObjectStorage
import Testing

/// What ssh, git servers and http said, as the words come through libgit2 (taken from this
/// machine's OpenSSH, git-daemon, git-http-backend and libgit2 1.5), read once into a value.
@Suite struct ServerSaidTests {
    static func said(_ message: String, code: git_error_code = GIT_ERROR, klass: git_error_t = GIT_ERROR_SSH) -> ServerSaid? {
        GitError(code: code.rawValue, errorClass: Int32(klass.rawValue), message: message, call: "test").serverSaid
    }

    static let rows: [(String, ServerSaid?)] = [
        ("ssh exited with status 255: Host key verification failed.", .hostKeyUnknown),
        ("ssh exited with status 255: WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!; host key for hub has changed", .hostKey),
        ("ssh exited with status 255: git@127.0.0.1: Permission denied (publickey).", .authentication),
        ("authentication failed for 'http://127.0.0.1:8080/hub.git'", .authentication),
        ("ssh exited with status 128: fatal: '/srv/nope.git' does not appear to be a git repository", .repositoryMissing),
        ("unexpected http status code: 404", .repositoryMissing),
        ("could not find repository at '/tmp/x/store.git'", .repositoryMissing),
        ("unexpected http status code: 403", .permissionDenied),
        ("remote: error: unable to write file: No space left on device", .diskFull),
        ("remote: fatal: disk quota exceeded", .diskFull),
        ("failed to connect to 10.0.0.2: Connection refused", nil),
        ("early EOF", nil),
    ]

    @Test(arguments: rows.indices) func words(_ i: Int) {
        #expect(Self.said(Self.rows[i].0) == Self.rows[i].1, "\(Self.rows[i].0)")
    }

    @Test func libgit2sAuthCodeIsAuthenticationWhateverTheWords() {
        #expect(Self.said("too many redirects or authentication replays", code: GIT_EAUTH, klass: GIT_ERROR_HTTP) == .authentication)
    }
}
