import FileSystem
import FoundationEssentials
import Glibc
import SystemPackage

/// What the agent last knew of each peer, kept in `<state>/peers.json` so that `status` tells the
/// truth while the agent is stopped and `lastSync` survives restarts.
public struct PeerLedger: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        public var lastSync: String?
        public var reachable: Bool?
        public var lastError: String?
        /// A hub: the last successful push.
        public var lastPush: String?
        /// When the agent last tried this peer (a fetch that worked or failed): what `status` says
        /// it knew, and as of when, while the agent is stopped. Refreshed at most once a minute
        /// unless something else changed.
        public var lastChecked: String?
        /// With `notify`: whether the channel that says when the peer's refs move is open
        /// ("listening"), or why not ("down: ..."); nil when the peer is only polled.
        public var notify: String?
        /// `SyncError.Code` of `lastError`.
        public var errorCode: String?
        public init(lastSync: String? = nil, reachable: Bool? = nil, lastError: String? = nil, lastPush: String? = nil) {
            self.lastPush = lastPush
            self.lastSync = lastSync
            self.reachable = reachable
            self.lastError = lastError
        }
    }

    public var peers: [String: Entry] = [:]
    public init() {}

    public static func file(state: FilePath) -> FilePath { state.appending("peers.json") }

    /// The ledger on disk; empty when there is none (or it cannot be read).
    public static func load(state: FilePath) -> PeerLedger {
        guard let bytes = try? Files.read(file(state: state)),
              let ledger = try? JSONDecoder().decode(PeerLedger.self, from: Data(bytes)) else { return PeerLedger() }
        return ledger
    }

    /// Writes the ledger atomically (a temporary, then rename).
    public func save(state: FilePath) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        guard let data = try? encoder.encode(self) else { return }
        let target = Self.file(state: state)
        let temp = state.appending("peers.json.new")
        try? Files.remove(temp)
        guard (try? Files.create(temp, bytes: Array(data), executable: false)) != nil else { return }
        try? Files.rename(temp, to: target)
    }
}
