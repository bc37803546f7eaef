import Foundation
import Git
import SyncCore
import SystemPackage

/// Where a peer's store is, as libgit2 wants it, and whether the agent can watch its refs directly.
struct PeerLink: Sendable {
    let name: String
    /// What the user wrote in the config.
    let configuredURL: String
    /// A URL libgit2 understands: plain paths become `file://` URLs.
    let fetchURL: String
    /// The peer's git dir when it is on this machine (a path or file:// URL).
    let localGitDir: FilePath?
    let pollSeconds: Int
    /// An ordinary git server shared by many devices: fetch every device's branch, push our own.
    let hub: Bool
    let config: PeerConfig
    /// Keys, passwords and the host key check for ssh and http(s).
    let auth: RemoteAuth
    /// The program that prints a line whenever the peer's refs move (`notify`), kept running.
    let notifyCommand: [String]?

    init(_ peer: PeerConfig, configFile: FilePath, home: String? = ProcessInfo.processInfo.environment["HOME"]) {
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
        auth = KnownHosts.auth(for: peer, url: fetchURL, home: home)
        switch peer.notify {
        case .poll: notifyCommand = nil
        case .command: notifyCommand = peer.notifyCommand
        case .ssh:
            notifyCommand = SSHTarget(url: peer.url)?.notifyCommand(
                identity: peer.identity, knownHosts: KnownHosts.knownHostsFile(for: peer, home: home))
        }
    }

    /// The URL as messages show it: a password in it (http://user:secret@host) is never shown.
    var displayURL: String {
        guard var comps = URLComponents(string: configuredURL), comps.password != nil else { return configuredURL }
        comps.password = "***"
        return comps.string ?? configuredURL
    }

    static func isScpLike(_ url: String) -> Bool { PeerConfig.isScpLike(url) }
}
