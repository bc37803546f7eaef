import FoundationEssentials
import Glibc
import Platform
internal import Git
internal import ObjectStorage
import SystemPackage

/// Where an ssh url points (`ssh://[user@]host[:port]/path` or scp-like `[user@]host:path`), and the
/// OpenSSH command that keeps a notify channel to it open. Pure: parsing and argument lists only.
public struct SSHTarget: Equatable, Sendable {
    public var user: String?
    public var host: String
    public var port: Int?
    /// The repository's path as the server's shell should see it (`~/x` stays home-relative).
    public var path: String

    public init(user: String?, host: String, port: Int?, path: String) {
        (self.user, self.host, self.port, self.path) = (user, host, port, path)
    }

    /// Nil when `url` is not an ssh url.
    public init?(url: String) {
        var rest: Substring
        var scpLike = false
        if let scheme = ["ssh://", "ssh+git://", "git+ssh://"].first(where: url.hasPrefix) {
            rest = url.dropFirst(scheme.count)
        } else if !url.contains("://"), !url.hasPrefix("/"), !url.hasPrefix("."), !url.hasPrefix("~"),
                  let colon = url.firstIndex(of: ":"), !url[..<colon].contains("/"), colon != url.startIndex {
            rest = Substring(url)
            scpLike = true
        } else {
            return nil
        }
        var user: String?
        if let at = rest.firstIndex(of: "@"), !rest[..<at].contains("/") {
            user = String(rest[..<at])
            rest = rest[rest.index(after: at)...]
        }
        var host: Substring
        var port: Int?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {  // [::1]
            host = rest[rest.index(after: rest.startIndex)..<close]
            rest = rest[rest.index(after: close)...]
        } else {
            let end = rest.firstIndex(where: { $0 == ":" || (!scpLike && $0 == "/") }) ?? rest.endIndex
            host = rest[..<end]
            rest = rest[end...]
        }
        guard !host.isEmpty else { return nil }
        var path: Substring
        if scpLike {
            guard rest.hasPrefix(":") else { return nil }
            path = rest.dropFirst()
        } else {
            if rest.hasPrefix(":") {
                let digits = rest.dropFirst().prefix(while: \.isNumber)
                guard let number = Int(digits), (1...65535).contains(number) else { return nil }
                port = number
                rest = rest.dropFirst(1 + digits.count)
            }
            guard rest.hasPrefix("/") else { return nil }
            path = rest
            if path.hasPrefix("/~") { path = path.dropFirst() }  // git's ssh://host/~user/repo
        }
        guard !path.isEmpty else { return nil }
        self.init(user: user, host: String(host), port: port, path: String(path))
    }

    /// The options every ssh connection to this peer uses: the peer's own key and known_hosts,
    /// never a prompt, a dead connection noticed within a minute, and, with `controlPath`, one
    /// shared connection (OpenSSH's ControlMaster) that the notify channel, fetches and pushes
    /// all ride on, kept 60 s after the last of them.
    public func sshArguments(identity: FilePath?, knownHosts: FilePath, controlPath: String?) -> [String] {
        var args = ["ssh"]
        if let port { args += ["-p", String(port)] }
        if let identity { args += ["-i", identity.string] }
        args += ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=\(knownHosts.string)",
                 "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=20"]
        if let controlPath {
            args += ["-o", "ControlMaster=auto", "-o", "ControlPath=\(controlPath)", "-o", "ControlPersist=60"]
        }
        args += ["-T", user.map { "\($0)@\(host)" } ?? host]
        return args
    }

    /// `ssh ... [user@]host 'syncagent notify-changes PATH'`.
    public func notifyCommand(identity: FilePath?, knownHosts: FilePath, controlPath: String? = nil,
                              program: String = "syncagent") -> [String] {
        sshArguments(identity: identity, knownHosts: knownHosts, controlPath: controlPath)
            + ["\(program) notify-changes \(Self.shellQuoted(path))"]
    }

    /// Ends the shared connection at `controlPath` (`ssh -O exit`), when the agent stops.
    public func closeSharedConnection(controlPath: String) -> [String] {
        ["ssh", "-o", "ControlPath=\(controlPath)", "-O", "exit", user.map { "\($0)@\(host)" } ?? host]
    }

    /// Fetches and pushes through the same `ssh` (`ExecTransport`), sharing its connection.
    /// With `warm`, one session of each service is kept started ahead (`ExecTransport.Target.warm`).
    func execTarget(identity: FilePath?, knownHosts: FilePath, controlPath: String?, warm: Bool = false) -> ExecTransport.Target {
        ExecTransport.Target(command: sshArguments(identity: identity, knownHosts: knownHosts, controlPath: controlPath),
                             quotedPath: Self.shellQuoted(path), warm: warm)
    }

    /// `path` for a POSIX shell: single-quoted, except a leading `~` or `~user` (left for the
    /// server's shell to expand to a home directory).
    static func shellQuoted(_ path: String) -> String {
        var tilde = ""
        var rest = Substring(path)
        if rest.hasPrefix("~") {
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            let name = rest[rest.index(after: rest.startIndex)..<end]
            if name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." }) {
                // The slash stays unquoted too: the shell expands a tilde-prefix only up to an unquoted '/'.
                let afterSlash = end == rest.endIndex ? end : rest.index(after: end)
                tilde = String(rest[..<afterSlash])
                rest = rest[afterSlash...]
            }
        }
        guard !rest.isEmpty else { return tilde }
        return tilde + "'" + rest.replacingScalar("'", with: "'\\''") + "'"
    }
}
