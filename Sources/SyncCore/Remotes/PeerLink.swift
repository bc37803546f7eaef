import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import HubSeal
import Platform
import FileSystem
import SystemPackage

/// The keys, passwords and host key check a peer's fetches and pushes use (ssh and http(s)).
public struct PeerAuth: Sendable {
    let remote: RemoteAuth
}

/// Where a peer's store is, as libgit2 wants it, and whether the agent can watch its refs directly.
public struct PeerLink: Sendable {
    public let name: String
    /// What the user wrote in the config.
    public let configuredURL: String
    /// A URL libgit2 understands: plain paths become `file://` URLs.
    public var fetchURL: String
    /// The peer's git dir when it is on this machine (a path or file:// URL).
    public let localGitDir: FilePath?
    public let pollSeconds: Int
    /// An ordinary git server shared by many devices: fetch every device's branch, push our own.
    public let hub: Bool
    public let config: PeerConfig
    /// Keys, passwords and the host key check for ssh and http(s).
    public let auth: PeerAuth
    /// The program that prints a line whenever the peer's refs move (`notify`), kept running.
    public let notifyCommand: [String]?
    /// Ends the shared ssh connection when the agent stops (`notify = "ssh"`).
    public var closeCommand: [String]?
    /// An encrypted hub's key, read from `key_file` (nil: a plain hub, or a direct peer); the
    /// error names the file and what to do when it cannot be read.
    public var hubKey: Result<HubKey, SyncError>?

    /// - Parameter state: the agent's state directory, where the shared ssh connection's socket
    ///   lives (`notify = "ssh"`); nil: no shared connection.
    public init(_ peer: PeerConfig, configFile: FilePath, state: FilePath? = nil,
         home: String? = ProcessInfo.processInfo.environment["HOME"]) {
        name = peer.name
        hub = peer.hub
        config = peer
        configuredURL = peer.url
        pollSeconds = peer.pollSeconds
        if let path = peer.localPath(configFile: configFile) {
            localGitDir = path
            fetchURL = peer.url.hasPrefix("file://") ? peer.url : "file://" + path.string
        } else {
            localGitDir = nil
            fetchURL = peer.url
        }
        auth = PeerAuth(remote: KnownHosts.auth(for: peer, url: fetchURL, home: home))
        hubKey = peer.keyFile.map { Self.loadKey($0, peer: peer.name) }
        switch peer.notify {
        case .poll: notifyCommand = nil
        case .command: notifyCommand = peer.notifyCommand
        case .ssh:
            let target = SSHTarget(url: peer.url)
            let knownHosts = KnownHosts.knownHostsFile(for: peer, home: home)
            let control = state.flatMap { Self.controlPath(state: $0, peer: peer.name) }
            notifyCommand = target?.notifyCommand(identity: peer.identity, knownHosts: knownHosts, controlPath: control)
            closeCommand = control.flatMap { path in target?.closeSharedConnection(controlPath: path) }
            // Fetches and pushes ride on the notify channel's connection: OpenSSH instead of libssh2.
            // A well-formed url libgit2 takes, naming this peer of this agent.
            let execURL = ExecTransport.scheme + "localhost/\(peer.name)/\(Self.shortHash(control ?? peer.url))"
            // The server's shell runs `syncagent notify-changes`, so it runs plain commands: the
            // next fetch and push are kept started ahead there.
            if let target, (try? ExecTransport.set(target.execTarget(identity: peer.identity, knownHosts: knownHosts,
                                                                      controlPath: control, warm: true), for: execURL)) != nil {
                fetchURL = execURL
            }
        }
    }

    /// Fetches and pushes over the shared ssh connection (`notify = "ssh"`) keep the next session
    /// started ahead, while a running agent asks for it; `endSessionsAhead` ends them.
    public func startSessionsAhead() {
        if fetchURL.hasPrefix(ExecTransport.scheme) { ExecTransport.enableSessionsAhead(for: fetchURL) }
    }

    public func endSessionsAhead() {
        if fetchURL.hasPrefix(ExecTransport.scheme) { ExecTransport.forget(url: fetchURL) }
    }

    /// The URL as messages show it: a password in it (http://user:secret@host) is never shown.
    public var displayURL: String {
        guard var comps = URLComponents(string: configuredURL), comps.password != nil else { return configuredURL }
        comps.password = "***"
        return comps.string ?? configuredURL
    }

    public static func isScpLike(_ url: String) -> Bool { PeerConfig.isScpLike(url) }

    /// Where OpenSSH keeps the shared connection's socket: `<state>/ssh/<peer>`, or
    /// `/tmp/syncagent-ssh-<uid>/<hash of state>-<peer>` when that would pass the 107 bytes a
    /// socket's name may have (OpenSSH adds 17 while it sets the socket up).
    public static func controlPath(state: FilePath, peer: String) -> String? {
        var dir = state.appending("ssh").string
        var name = peer
        if dir.utf8.count + 1 + name.utf8.count + 17 > 104 {
            dir = "/tmp/syncagent-ssh-\(getuid())"
            name = shortHash(state.string) + "-" + peer
        }
        guard mkdir(dir, 0o700) == 0 || errno == EEXIST else { return nil }
        var st = stat()
        guard lstat(dir, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == getuid() else { return nil }
        return dir + "/" + name
    }

    /// FNV-1a of `text` in hex: the same text always gives the same short name.
    public static func shortHash(_ text: String) -> String {
        var hash: UInt32 = 2166136261
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 16777619 }
        return String(hash, radix: 16)
    }
}

extension PeerLink {
    /// The key in `file`: the text `syncagent key new` wrote, or `passphrase: WORDS` (scrypt).
    public static func loadKey(_ file: FilePath, peer: String) -> Result<HubKey, SyncError> {
        Result {
            guard let bytes = try? Files.read(file) else {
                throw SyncError(.auth, "cannot read the hub key file \(file.display) of peer \(peer); copy it from a device that syncs with the hub (`syncagent key new FILE` makes the first one)", subject: peer)
            }
            let text = String(decoding: bytes, as: UTF8.self).trimmed(newlines: true)
            do {
                if text.hasPrefix("passphrase:") {
                    return try HubKey(secret: try HubKey.fromPassphrase(String(text.dropFirst("passphrase:".count)).trimmed()))
                }
                return try HubKey(secret: try HubKey.parse(text))
            } catch {
                throw SyncError(.auth, "the hub key file \(file.display) of peer \(peer): \(error)", subject: peer)
            }
        }.mapError { $0 as? SyncError ?? SyncError(.auth, "\($0)", subject: peer) }
    }
}
