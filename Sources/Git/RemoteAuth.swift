import CLibgit2
import ObjectStorage
import FoundationEssentials
import Glibc
import Platform
import SystemPackage

/// How to prove who we are to a server and how to tell it is the right server (ssh, http).
/// Secrets stay in here: they are never part of a message.
public struct RemoteAuth: Sendable {
    /// ssh: the private key to offer; nil: ssh-agent, then `defaultKeys` that exist.
    public var identity: FilePath?
    public var defaultKeys: [FilePath] = []
    /// http(s): basic authentication.
    public var user: String?
    public var password: String?
    /// ssh: whether the server's host key is the one known for it. Gets the host name, the key
    /// type ("ssh-ed25519"), the key (base64, as known_hosts has it) and its SHA-256 fingerprint
    /// ("SHA256:..."); returns nil when it is known, else what to tell the user.
    public var checkHostKey: (@Sendable (_ host: String, _ type: String, _ key: String, _ fingerprint: String) -> String?)?
    /// The user name when the URL has none (ssh).
    public var defaultUser: String = ProcessInfo.processInfo.environment["USER"] ?? "root"

    public init() {}
}

/// State of one connection's callbacks: which credential was tried, what went wrong.
final class AuthSession {
    let auth: RemoteAuth?
    let cancel: () -> Bool
    /// Told as objects move: (objects so far, objects in all when known, bytes so far).
    var transfer: ((Int, Int?, Int) -> Void)?
    var sshAttempt = 0
    var triedUserPassword = false
    var tried: [String] = []
    var hostKeyProblem: String?
    /// Every credential was offered and refused.
    var exhausted = false
    var refused: [PushRefusal] = []
    /// What the server printed on the side band ("remote: ..."), its last 4 KiB.
    var serverSaid: [UInt8] = []

    /// The server's side-band lines worth showing (a hook's refusal), without "remote:" noise.
    var serverLines: [String] {
        String(decoding: serverSaid, as: UTF8.self)
            .split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .map { $0.trimmed() }
            .filter { !$0.isEmpty && !$0.hasPrefix("Resolving deltas") && !$0.hasPrefix("Counting objects") }
    }

    init(_ auth: RemoteAuth?, cancel: @escaping () -> Bool) {
        self.auth = auth
        self.cancel = cancel
    }

    /// The error to report instead of libgit2's when the callbacks know better.
    func explain(_ error: GitError) -> GitError {
        if let hostKeyProblem {
            return GitError(code: error.code, errorClass: error.errorClass, message: hostKeyProblem, call: error.call)
        }
        if !tried.isEmpty, exhausted || error.code == GIT_EAUTH.rawValue || error.message.contains("authentication")
            || error.message.contains("credentials") {
            let detail = error.message == "no message from libgit2" ? "the server accepted none" : error.message
            return GitError(code: error.code, errorClass: error.errorClass,
                            message: "authentication failed (tried \(tried.joined(separator: ", "))): \(detail)",
                            call: error.call)
        }
        return error
    }

    static func install(_ callbacks: inout git_remote_callbacks, _ payload: UnsafeMutableRawPointer) {
        callbacks.payload = payload
        callbacks.credentials = { out, _, usernameFromURL, allowed, payload in
            let session = Unmanaged<AuthSession>.fromOpaque(payload!).takeUnretainedValue()
            return session.credential(out, usernameFromURL.map { String(cString: $0) }, allowed)
        }
        callbacks.sideband_progress = { text, length, payload in
            let session = Unmanaged<AuthSession>.fromOpaque(payload!).takeUnretainedValue()
            if let text, length > 0 {
                session.serverSaid += UnsafeRawBufferPointer(start: text, count: Int(length))
                if session.serverSaid.count > 4096 { session.serverSaid.removeFirst(session.serverSaid.count - 4096) }
            }
            return session.cancel() ? -1 : 0
        }
        callbacks.certificate_check = { cert, valid, host, payload in
            let session = Unmanaged<AuthSession>.fromOpaque(payload!).takeUnretainedValue()
            return session.checkCertificate(cert, valid != 0, host.map { String(cString: $0) } ?? "?")
        }
    }

    func credential(_ out: UnsafeMutablePointer<UnsafeMutablePointer<git_credential>?>?, _ urlUser: String?, _ allowed: UInt32) -> Int32 {
        let user = urlUser ?? auth?.defaultUser ?? "root"
        if allowed & GIT_CREDENTIAL_SSH_KEY.rawValue != 0 {
            var candidates: [FilePath?] = []
            if let identity = auth?.identity {
                candidates = [identity]
            } else {
                candidates = [nil] + (auth?.defaultKeys ?? []).filter { FileManager.default.fileExists(atPath: $0.string) }.map { $0 }
            }
            guard sshAttempt < candidates.count else {
                exhausted = true
                return GIT_EAUTH.rawValue
            }
            let candidate = candidates[sshAttempt]
            sshAttempt += 1
            guard let key = candidate else {
                // libssh2 gives up the whole connection when it cannot reach an agent (not
                // running under systemd, a stale SSH_AUTH_SOCK): look first, and go on to the
                // keys when nobody answers. An agent that answers but holds no key the server
                // takes is refused like any key, and the next one is offered.
                if let why = Self.agentProblem() {
                    tried.append("ssh-agent (\(why))")
                    return credential(out, urlUser, allowed)
                }
                tried.append("ssh-agent")
                return git_credential_ssh_key_from_agent(out, user)
            }
            tried.append("the key \(key)")
            let publicKey = key.string + ".pub"
            let hasPublic = FileManager.default.fileExists(atPath: publicKey)
            return git_credential_ssh_key_new(out, user, hasPublic ? publicKey : nil, key.string, nil)
        }
        if allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT.rawValue != 0 {
            guard let name = auth?.user, let password = auth?.password, !triedUserPassword else {
                if auth?.user == nil { tried.append("no user name and password (set credentials = PATH)") }
                exhausted = true
                return GIT_EAUTH.rawValue
            }
            triedUserPassword = true
            tried.append("the credentials file's user \(name)")
            return git_credential_userpass_plaintext_new(out, name, password)
        }
        return GIT_PASSTHROUGH.rawValue
    }

    /// Why no ssh-agent can be asked (nil: one answers at `SSH_AUTH_SOCK`).
    static func agentProblem() -> String? {
        guard let path = ProcessInfo.processInfo.environment["SSH_AUTH_SOCK"], !path.isEmpty else {
            return "none running: SSH_AUTH_SOCK is not set"
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return "SSH_AUTH_SOCK is too long a path" }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return "cannot make a socket: \(Errno(rawValue: errno))" }
        defer { close(fd) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0 ? nil : "nothing answers at SSH_AUTH_SOCK=\(path): \(Errno(rawValue: errno))"
    }

    func checkCertificate(_ cert: UnsafeMutablePointer<git_cert>?, _ valid: Bool, _ host: String) -> Int32 {
        guard let cert, cert.pointee.cert_type == GIT_CERT_HOSTKEY_LIBSSH2 else { return GIT_PASSTHROUGH.rawValue }
        guard let check = auth?.checkHostKey else { return GIT_PASSTHROUGH.rawValue }
        return cert.withMemoryRebound(to: git_cert_hostkey.self, capacity: 1) { hostkey in
            let key = hostkey.pointee
            guard key.type.rawValue & GIT_CERT_SSH_RAW.rawValue != 0, let raw = key.hostkey else {
                hostKeyProblem = "the ssh server \(host) did not show its host key; it cannot be checked"
                return GIT_ECERTIFICATE.rawValue
            }
            let blob = Data(bytes: raw, count: key.hostkey_len)
            var sha = key.hash_sha256
            let digest = withUnsafeBytes(of: &sha) { Data($0) }
            let fingerprint = "SHA256:" + digest.base64EncodedString().replacing("=", with: "")
            let type: String = switch key.raw_type {
            case GIT_CERT_SSH_RAW_TYPE_RSA: "ssh-rsa"
            case GIT_CERT_SSH_RAW_TYPE_DSS: "ssh-dss"
            case GIT_CERT_SSH_RAW_TYPE_KEY_ECDSA_256: "ecdsa-sha2-nistp256"
            case GIT_CERT_SSH_RAW_TYPE_KEY_ECDSA_384: "ecdsa-sha2-nistp384"
            case GIT_CERT_SSH_RAW_TYPE_KEY_ECDSA_521: "ecdsa-sha2-nistp521"
            case GIT_CERT_SSH_RAW_TYPE_KEY_ED25519: "ssh-ed25519"
            default: "unknown"
            }
            if let problem = check(host, type, blob.base64EncodedString(), fingerprint) {
                hostKeyProblem = problem
                return GIT_ECERTIFICATE.rawValue
            }
            return 0
        }
    }
}
