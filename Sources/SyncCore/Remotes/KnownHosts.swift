import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// The ssh host key check (SPEC `known_hosts`): the key a server shows must be the one its
/// known_hosts file holds for it. `ssh-keygen -F` does the lookup, so hashed entries (Debian's
/// default) work as they do for ssh itself.
public enum KnownHosts {
    /// Nil when `file` holds `key` for the host (and port); else what to tell the user.
    public static func check(host: String, port: Int?, type: String, key: String, fingerprint: String,
                             file: FilePath, peer: String) -> String? {
        let name = port.map { $0 == 22 ? host : "[\(host)]:\($0)" } ?? host
        let scan = "ssh-keyscan\(port.map { $0 == 22 ? "" : " -p \($0)" } ?? "") \(host) >> \(file)"
        guard FileManager.default.fileExists(atPath: file.string) else {
            return "the host key of \(name) (\(type) \(fingerprint)) cannot be checked: \(file) does not exist. "
                + "If that is the server's key (ask its admin), add it: \(scan)"
        }
        // ssh-keygen prints the matching lines on stdout: sent to stderr, which ChildProcess keeps.
        let outcome = ChildProcess.run(["sh", "-c", "exec ssh-keygen -F \"$1\" -f \"$2\" 1>&2", "sh", name, file.string],
                                       timeoutSeconds: 10)
        guard case .exited(let status, let output) = outcome else {
            return "cannot check the host key of \(name) for peer \(peer): ssh-keygen did not run (\(outcome)); install openssh-client"
        }
        let known = output.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line -> (String, String)? in
            let fields = line.split(separator: " ")
            return fields.count >= 3 ? (String(fields[1]), String(fields[2])) : nil
        }
        if known.contains(where: { $0.1 == key }) { return nil }
        if status == 0, !known.isEmpty {
            return "the host key of \(name) CHANGED: \(file) holds another key for it, the server now shows \(type) \(fingerprint). "
                + "Someone may be intercepting the connection; if the server was reinstalled, check the new key with its admin, "
                + "then: ssh-keygen -R '\(name)' -f \(file) && \(scan). Nothing was fetched or pushed."
        }
        return "the host key of \(name) (\(type) \(fingerprint)) is not in \(file). "
            + "If that is the server's key (ask its admin), add it: \(scan)"
    }

    /// Everything a peer's config says about authentication, for libgit2's callbacks.
    static func auth(for peer: PeerConfig, url: String, home: String?) -> RemoteAuth {
        var auth = RemoteAuth()
        auth.identity = peer.identity
        if let home {
            auth.defaultKeys = [FilePath(home).appending(".ssh/id_ed25519"), FilePath(home).appending(".ssh/id_rsa")]
        }
        let file = knownHostsFile(for: peer, home: home)
        let port = URLComponents(string: url)?.port
        let name = peer.name
        auth.checkHostKey = { host, type, key, fingerprint in
            check(host: host, port: port, type: type, key: key, fingerprint: fingerprint, file: file, peer: name)
        }
        if let credentials = peer.credentials, let text = try? String(contentsOfFile: credentials.string, encoding: .utf8) {
            let line = text.split(separator: "\n").first.map(String.init) ?? ""
            if let colon = line.firstIndex(of: ":") {
                auth.user = String(line[..<colon])
                auth.password = String(line[line.index(after: colon)...])
            }
        }
        return auth
    }

    /// The known_hosts file a peer's host key must be in: `known_hosts`, else ~/.ssh/known_hosts.
    public static func knownHostsFile(for peer: PeerConfig, home: String?) -> FilePath {
        peer.knownHosts ?? home.map { FilePath($0).appending(".ssh/known_hosts") } ?? FilePath("/etc/ssh/ssh_known_hosts")
    }

    /// A problem with the credentials file a user should hear about (nil: none or fine).
    public static func credentialsProblem(_ peer: PeerConfig) -> String? {
        guard let path = peer.credentials else { return nil }
        var st = stat()
        guard stat(path.string, &st) == 0 else {
            return "peer \(peer.name): the credentials file \(path) cannot be read (\(String(cString: strerror(errno)))); create it with one line user:password and chmod 600 it"
        }
        if st.st_mode & 0o077 != 0 {
            return "peer \(peer.name): the credentials file \(path) can be read by others (mode \(String(st.st_mode & 0o777, radix: 8))); run chmod 600 \(path)"
        }
        guard let text = try? String(contentsOfFile: path.string, encoding: .utf8), text.contains(":") else {
            return "peer \(peer.name): the credentials file \(path) must hold one line user:password"
        }
        return nil
    }
}
