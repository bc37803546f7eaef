import Foundation
import Git
import SyncCore
import SystemPackage

/// Commands that change the store while no agent runs: they take the agent lock themselves, so
/// there is still only one writer per store, and go through the same start-up and engine as `run`.
public enum OneShot {
    /// Asks the running agent, or does the work here under the lock when none runs. Every fetch has
    /// the agent's timeout, so a black-holed peer fails the command instead of hanging it.
    public static func sync(config: Config, peer: String?) async throws -> [SyncResult] {
        if AgentLock.holder(of: config.lockPath) != nil {
            let line = try ControlClient.send(.sync(peer: peer), to: config.socketPath, timeoutSeconds: 120)
            return try JSONDecoder().decode([SyncResult].self, from: Data(line))
        }
        let chosen = config.peers.filter { peer == nil || $0.name == peer }
        if let peer, chosen.isEmpty {
            return [SyncResult(peer: peer, error: "no peer named '\(peer)' in \(config.file)")]
        }
        let session = try Startup.openUnderLock(config: config, logger: quietLogger)
        await session.engine.commitStartupChanges(stopping: { false })
        let ledger = PeerLedger.load(state: config.state)
        var results: [SyncResult] = []
        for peerConfig in chosen {
            let link = PeerLink(peerConfig, configFile: config.file)
            let syncer = PeerSyncer(link: link, config: config, engine: session.engine, logger: quietLogger,
                                    known: ledger.peers[link.name])
            results.append(SyncResult(peer: link.name, error: await syncer.round()))
        }
        return results
    }

    /// `syncagent send --deletes`: through the running agent, or under the lock.
    public static func sendDeletes(config: Config) async throws -> MessageResult {
        if AgentLock.holder(of: config.lockPath) != nil {
            let line = try ControlClient.send(.sendDeletes, to: config.socketPath, timeoutSeconds: 120)
            return try JSONDecoder().decode(MessageResult.self, from: Data(line))
        }
        let session = try Startup.openUnderLock(config: config, logger: quietLogger)
        await session.engine.commitStartupChanges(stopping: { false })
        return MessageResult(message: await session.engine.confirmDeletes(), error: nil)
    }
}
