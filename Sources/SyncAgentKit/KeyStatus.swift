import Agent
import FoundationEssentials
import Glibc
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
        /// The rules keep it on this device only (`never`): it is not synced at all.
        case local
    }

    /// One peer's side of the key.
    public struct Peer: Sendable, Equatable {
        /// When this device last synced with the peer (ISO 8601; nil: not yet). Kept in the
        /// agent's state directory: it survives restarts.
        public let lastSync: String?
        /// Whether the peer's history, as last fetched, holds the key as this device's does; nil
        /// when that is not known (never fetched; the hub itself).
        public let hasThisVersion: Bool?
    }

    /// Where the key stands.
    public let state: State
    /// Each peer (a device seen through a hub too), by name.
    public let peers: [String: Peer]

    static func of(_ key: String, agent: SyncAgent) async throws -> KeyStatus {
        let report = try? await agent.connection.request(.status, as: StatusReport.self)
        let config = agent.config
        let held: [HeldEntry]
        switch agent.connection {
        case .embedded: held = (try? await agent.connection.request(.held, as: [HeldEntry].self)) ?? []
        case .client: held = (try? await blocking("syncagent-kit-held") { try OneShot.held(config: config) }) ?? []  // the store's, with no agent
        }
        let listed = report?.peers ?? []
        let (open, committed, disk, holds) = try await blocking("syncagent-kit-status") {
            () -> ([String], [UInt8]?, [UInt8]?, [String: Bool?]) in
            let store = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
            let path = FilePath(key)
            let open = try store.conflicts().filter { $0.path == key }.map(\.id)
            var holds: [String: Bool?] = [:]
            for peer in listed where config.peers.first(where: { $0.name == peer.name })?.hub != true {
                let tracked = peer.via.map { Store.hubPeer($0, device: peer.name) } ?? peer.name
                holds[peer.name] = .some((try? store.peerHolds(path, sameAsMain: tracked)) ?? nil)
            }
            return (open, try store.committedBytes(path), try SyncedValue<Int>.read(config.data.pushing(path)), holds)
        }
        var peers: [String: Peer] = [:]
        for peer in listed { peers[peer.name] = Peer(lastSync: peer.lastSync, hasThisVersion: holds[peer.name] ?? nil) }
        if config.policy.rule(for: FilePath(key))?.sync == .never { return KeyStatus(state: .local, peers: peers) }
        if !open.isEmpty { return KeyStatus(state: .conflicted(ids: open), peers: peers) }
        if let entry = held.first(where: { $0.path == key }) { return KeyStatus(state: .held(reason: entry.reason), peers: peers) }
        return KeyStatus(state: committed == disk ? .synced : .pending, peers: peers)
    }
}
