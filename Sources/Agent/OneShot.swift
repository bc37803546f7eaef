import Foundation
import Git
import SyncCore
import SystemPackage

/// Commands that change the store while no agent runs: they take the agent lock themselves, so
/// there is still only one writer per store.
public enum OneShot {
    /// Asks the running agent, or does the work here under the lock when none runs.
    public static func sync(config: Config, peer: String?) throws -> [SyncResult] {
        if AgentLock.holder(of: config.lockPath) != nil {
            let line = try ControlClient.send(ControlRequest(command: "sync", peer: peer), to: config.socketPath,
                                              timeoutSeconds: 120)
            return try JSONDecoder().decode([SyncResult].self, from: Data(line))
        }
        let lock = try AgentLock.acquire(config.lockPath)
        defer { _ = lock }
        Store.clearStaleLocks(gitDir: config.storePath)
        let store = try Store.openOrCreate(device: config.device, data: config.data, gitDir: config.storePath)
        store.rules = config.resolvers
        _ = try store.commit(paths: try store.changedSinceLastCommit())
        let chosen = config.peers.filter { peer == nil || $0.name == peer }
        if let peer, chosen.isEmpty {
            return [SyncResult(peer: peer, error: "no peer named '\(peer)' in \(config.file)")]
        }
        return chosen.map { peerConfig in
            let link = PeerLink(peerConfig, configFile: config.file)
            do {
                if link.localGitDir == nil { try FetchRunner.probe(url: link.fetchURL, timeout: .seconds(5)) }
                try Store.fetch(gitDir: config.storePath, data: config.data, peer: link.name, url: link.fetchURL)
                _ = try store.integrate(peer: link.name)
                return SyncResult(peer: link.name, error: nil)
            } catch {
                return SyncResult(peer: link.name, error: "\(error)")
            }
        }
    }
}
