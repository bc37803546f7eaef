import FoundationEssentials
import SyncCore
import Glibc

/// `syncagent status --json`: the shape SPEC.md fixes.
public struct StatusReport: Codable, Sendable, Equatable {
    public struct Peer: Codable, Sendable, Equatable {
        public var name: String
        public var url: String
        public var reachable: Bool?
        public var lastSync: String?
        public var ahead: Int?
        public var behind: Int?
        public var lastError: String?
        /// A device seen through a hub: the hub's name (SPEC "Hub"); nil for a direct peer.
        public var via: String?
        /// A hub: when this device last pushed to it, and last fetched from it.
        public var lastPush: String?
        public var lastFetch: String?
        /// A device seen through a hub: the time of the newest commit of its branch there.
        public var lastSeen: String?
        /// When the agent last tried this peer (at rest, a watched peer up to an hour ago, one
        /// heard through `notify` up to a day); what `reachable` and `lastError` say is as of then (it matters while the
        /// agent is stopped).
        public var lastChecked: String?
        /// With `notify`: "listening", "connecting", or "down: <why>; polling every N s".
        public var notify: String?
        /// `syncagent pause`: nothing is exchanged with this peer until `resume` (JSON: always
        /// there, false when not paused).
        public var paused: Bool?
        /// What kind of problem `lastError` is (`SyncError.Code`: auth, host-key, not-found,
        /// unreachable, timeout, refused, name-clash, disk-full, bad-history, held, other).
        public var errorCode: String?

        public init(name: String, url: String, reachable: Bool? = nil, lastSync: String? = nil,
                    ahead: Int? = nil, behind: Int? = nil, lastError: String? = nil) {
            self.name = name
            self.url = url
            self.reachable = reachable
            self.lastSync = lastSync
            self.ahead = ahead
            self.behind = behind
            self.lastError = lastError
        }
    }

    public struct Conflicts: Codable, Sendable, Equatable {
        public var open: Int
        public init(open: Int) { self.open = open }
    }

    public var device: String
    public var running: Bool
    public var pid: Int32?
    public var data: String
    public var store: String
    public var head: String?
    public var pending: Int?
    /// `send-receive` or `receive-only`.
    public var mode: String = "send-receive"
    /// A receive-only device's local edits (never committed; `syncagent revert`).
    public var localChanges: Int = 0
    /// Everything held back: deletions waiting for `send --deletes`, manual and max_bytes changes,
    /// local edits (`syncagent held` lists them).
    public var held: Int
    /// What the store takes on disk, in bytes (allocated blocks).
    public var storeBytes: Int64?
    /// Long work in hand (first scan, start-up commit, a large merge); nil when there is none.
    public var progress: ProgressReport?
    /// Every piece of long work in hand, the engine's and each peer's transfers (`progress` is the
    /// engine's, or the first of these).
    public var tasks: [ProgressReport] = []
    public var peers: [Peer]
    public var conflicts: Conflicts
    /// Problems the agent wants the user to see (watch limit reached, unreadable directories, ...),
    /// typed. The JSON keeps `problems` as their messages (SPEC) and adds `problemDetails`.
    public var problems: [StatusProblem]

    public init(device: String, running: Bool, pid: Int32?, data: String, store: String, head: String?,
                pending: Int?, held: Int = 0, peers: [Peer], conflicts: Conflicts, problems: [StatusProblem]) {
        self.device = device
        self.running = running
        self.pid = pid
        self.data = data
        self.store = store
        self.head = head
        self.pending = pending
        self.held = held
        self.peers = peers
        self.conflicts = conflicts
        self.problems = problems
    }

    // Encode nils as JSON null: the keys are part of the contract.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(device, forKey: .device)
        try c.encode(running, forKey: .running)
        try c.encode(pid, forKey: .pid)
        try c.encode(data, forKey: .data)
        try c.encode(store, forKey: .store)
        try c.encode(head, forKey: .head)
        try c.encode(pending, forKey: .pending)
        try c.encode(mode, forKey: .mode)
        try c.encode(localChanges, forKey: .localChanges)
        try c.encode(held, forKey: .held)
        try c.encode(storeBytes, forKey: .storeBytes)
        try c.encode(progress, forKey: .progress)
        try c.encode(tasks, forKey: .tasks)
        try c.encode(peers, forKey: .peers)
        try c.encode(conflicts, forKey: .conflicts)
        try c.encode(problems.map(\.message), forKey: .problems)
        try c.encode(problems, forKey: .problemDetails)
    }

    private enum CodingKeys: String, CodingKey {
        case device, running, pid, data, store, head, pending, mode, localChanges, held, storeBytes, progress, tasks, peers,
             conflicts, problems, problemDetails
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        device = try c.decode(String.self, forKey: .device)
        running = try c.decode(Bool.self, forKey: .running)
        pid = try c.decodeIfPresent(Int32.self, forKey: .pid)
        data = try c.decode(String.self, forKey: .data)
        store = try c.decode(String.self, forKey: .store)
        head = try c.decodeIfPresent(String.self, forKey: .head)
        pending = try c.decodeIfPresent(Int.self, forKey: .pending)
        mode = try c.decodeIfPresent(String.self, forKey: .mode) ?? "send-receive"
        localChanges = try c.decodeIfPresent(Int.self, forKey: .localChanges) ?? 0
        held = try c.decodeIfPresent(Int.self, forKey: .held) ?? 0
        storeBytes = try c.decodeIfPresent(Int64.self, forKey: .storeBytes)
        progress = try c.decodeIfPresent(ProgressReport.self, forKey: .progress)
        tasks = try c.decodeIfPresent([ProgressReport].self, forKey: .tasks) ?? []
        peers = try c.decode([Peer].self, forKey: .peers)
        conflicts = try c.decode(Conflicts.self, forKey: .conflicts)
        // An agent of an older version sends the messages only.
        problems = try c.decodeIfPresent([StatusProblem].self, forKey: .problemDetails)
            ?? (c.decodeIfPresent([String].self, forKey: .problems) ?? []).map { StatusProblem(.other, $0) }
    }
}

/// A problem the agent wants the user to see: what kind it is, what happened and what to do, and
/// the path or peer it is about.
public struct StatusProblem: Codable, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Codable, Sendable {
        /// Committing failed (disk full, the store unwritable).
        case commit
        /// Deletions or merges held, or the data directory gone.
        case hold
        /// The store's index could not be saved or read.
        case index
        /// Loose objects could not be packed, or packs rolled up.
        case packing
        /// New files a power cut left empty, kept back.
        case powerCut = "power-cut"
        /// An incoming version that cannot be written at its path yet.
        case apply
        /// The watcher's own trouble (the watch limit, an unreadable directory).
        case watch
        /// The store cannot be read.
        case store
        /// The agent holds the lock but does not answer.
        case agent
        case other
    }
    public var code: Code
    public var message: String
    /// The path or peer it is about, as messages show it.
    public var subject: String?
    public var description: String { message }

    public init(_ code: Code, _ message: String, subject: String? = nil) {
        self.code = code
        self.message = message
        self.subject = subject
    }
}

extension StatusReport.Peer {
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(url, forKey: .url)
        try c.encode(reachable, forKey: .reachable)
        try c.encode(lastSync, forKey: .lastSync)
        try c.encode(ahead, forKey: .ahead)
        try c.encode(behind, forKey: .behind)
        try c.encode(lastError, forKey: .lastError)
        if lastError != nil { try c.encode(errorCode, forKey: .errorCode) }
        try c.encode(lastChecked, forKey: .lastChecked)
        try c.encode(via, forKey: .via)
        if lastPush != nil || lastFetch != nil {
            try c.encode(lastPush, forKey: .lastPush)
            try c.encode(lastFetch, forKey: .lastFetch)
        }
        if via != nil { try c.encode(lastSeen, forKey: .lastSeen) }
        if notify != nil { try c.encode(notify, forKey: .notify) }
        try c.encode(paused ?? false, forKey: .paused)
    }
}
