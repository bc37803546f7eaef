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
        /// it knew, and as of when, while the agent is stopped. Written with the next other change,
        /// at most every 30 minutes otherwise, and at a clean stop (the running agent's `status`
        /// shows it live).
        public var lastChecked: String?
        /// With `notify`: whether the channel that says when the peer's refs move is open
        /// ("listening"), or why not ("down: ..."); nil when the peer is only polled.
        public var notify: String?
        /// `SyncError.Code` of `lastError`.
        public var errorCode: String?
        /// Whether the two differ at most in the value of their times (last sync, push and
        /// check), each known in both or in neither: what the agent need not write at once.
        public func sameButTimes(_ other: Entry) -> Bool {
            func timeless(_ e: Entry) -> Entry {
                var e = e
                e.lastSync = e.lastSync.map { _ in "" }
                e.lastPush = e.lastPush.map { _ in "" }
                e.lastChecked = e.lastChecked.map { _ in "" }
                return e
            }
            return timeless(self) == timeless(other)
        }

        public init(lastSync: String? = nil, reachable: Bool? = nil, lastError: String? = nil, lastPush: String? = nil) {
            self.lastPush = lastPush
            self.lastSync = lastSync
            self.reachable = reachable
            self.lastError = lastError
        }
    }

    public var peers: [String: Entry] = [:]
    public init() {}

    /// How long a peer's new times may stay only in memory (`note`).
    public static let timesUnsavedFor: TimeInterval = 30 * 60

    /// Takes what a round or poll found of a peer, checked at `now`; returns whether the ledger
    /// should be written now: something besides the times changed (reachability, an error, a
    /// first sync or push), or it was last written `timesUnsavedFor` ago or never. An idle agent's
    /// polls only move the times (they were every two minutes): rewriting and flushing `peers.json` for them was
    /// most of its CPU at rest.
    public mutating func note(_ name: String, _ entry: Entry, now: Date, lastSaved: Date?) -> Bool {
        var entry = entry
        entry.lastChecked = ISOTime.string(now)
        let timesOnly = peers[name]?.sameButTimes(entry) ?? false
        peers[name] = entry
        guard timesOnly, let lastSaved else { return true }
        return now.timeIntervalSince(lastSaved) >= Self.timesUnsavedFor
    }

    public static func file(state: FilePath) -> FilePath { state.appending("peers.json") }

    /// The ledger on disk; empty when there is none (or it cannot be read).
    public static func load(state: FilePath) -> PeerLedger {
        guard let bytes = try? Files.read(file(state: state)),
              let ledger = try? JSONDecoder().decode(PeerLedger.self, from: Data(bytes)) else { return PeerLedger() }
        return ledger
    }

    /// Writes the ledger atomically (a temporary, then rename); returns whether it could (the
    /// caller keeps what it could not write and tries again).
    @discardableResult
    public func save(state: FilePath) -> Bool {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        guard let data = try? encoder.encode(self) else { return false }
        let target = Self.file(state: state)
        let temp = state.appending("peers.json.new")
        try? Files.remove(temp)
        guard (try? Files.create(temp, bytes: Array(data), executable: false)) != nil else { return false }
        return (try? Files.rename(temp, to: target)) != nil
    }
}
