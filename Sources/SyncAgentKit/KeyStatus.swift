import Agent
import Foundation
import SyncCore
import SystemPackage

/// Where one key stands.
public struct KeyStatus: Sendable, Equatable {
    /// What the key's latest change is waiting for, if anything.
    public enum State: Sendable, Equatable {
        /// The store holds what the data directory holds.
        case synced
        /// Changed on disk, not committed yet (it will be within the debounce).
        case pending
        /// Kept back by the rules (`manual`, over `max_bytes`, receive-only): `reason` as
        /// `syncagent held` says it; ``SyncAgent/send(_:)`` shares it.
        case held(reason: String)
        /// Open conflict records over it (`Conflict.id`s).
        case conflicted(ids: [String])
    }

    /// Where the key stands.
    public let state: State
    /// When each peer last synced (ISO 8601; nil: not yet), by peer name. This device's sync state
    /// survives restarts: it is kept in the agent's state directory.
    public let lastSynced: [String: String?]

    static func of(_ key: String, agent: SyncAgent) async throws -> KeyStatus {
        let report = try? await agent.connection.request(.status, as: StatusReport.self)
        let held = (try? await agent.connection.request(.held, as: [HeldEntry].self)) ?? []
        let config = agent.config
        let (open, committed, disk) = try await blocking("syncagent-kit-status") { () -> ([String], [UInt8]?, [UInt8]?) in
            let store = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
            let path = FilePath(key)
            let open = try store.conflicts().filter { $0.path == key }.map(\.id)
            return (open, try store.committedBytes(path), try SyncedValue<Int>.read(config.data.pushing(path)))
        }
        var peers: [String: String?] = [:]
        for peer in report?.peers ?? [] { peers[peer.name] = .some(peer.lastSync) }
        if !open.isEmpty { return KeyStatus(state: .conflicted(ids: open), lastSynced: peers) }
        if let entry = held.first(where: { $0.path == key }) { return KeyStatus(state: .held(reason: entry.reason), lastSynced: peers) }
        return KeyStatus(state: committed == disk ? .synced : .pending, lastSynced: peers)
    }
}
