import FoundationEssentials
import Glibc

/// One line of `syncagent events` (SPEC "Events"): a sequence number that grows by one and survives
/// restarts, a time, and what happened with its fields (`Kind`). The JSON line is flat (`type` and
/// the type's fields, the others left out), as SPEC gives it.
public struct AgentEvent: Codable, Sendable, Equatable {
    /// What happened, with the fields of its type.
    public enum Kind: Sendable, Equatable {
        case committed(commit: String, paths: [String], count: Int)
        case received(peer: String, commit: String?, paths: [String], count: Int)
        case conflictOpened(id: String, path: String)
        case conflictResolved(id: String, path: String, strategy: String?, by: String?)
        case peerReachable(peer: String)
        case peerUnreachable(peer: String, error: String?)
        case held(path: String, reason: HoldReason)
        case problem(message: String)
        case started(message: String?)
        case stopped
        /// A peer (nil: every peer) paused or resumed by `syncagent pause` / `resume`.
        case paused(peer: String?)
        case resumed(peer: String?)
        /// `events --since` asked for lines the log no longer keeps.
        case gap(since: Int, oldest: Int, message: String)
        /// Long work moving: live listeners only (never logged nor numbered).
        case progress(ProgressReport)
    }

    /// Set when the event is logged; a `gap` has none.
    public var seq: Int?
    /// When it happened, to the millisecond (as the line shows it).
    public var time: Date
    public var kind: Kind

    public init(_ kind: Kind, time: Date = Date()) {
        self.kind = kind
        self.time = Date(timeIntervalSince1970: (time.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// The same event: sequence number, what happened, and the time to the millisecond the line
    /// keeps.
    public static func == (a: AgentEvent, b: AgentEvent) -> Bool {
        a.seq == b.seq && a.kind == b.kind
            && (a.time.timeIntervalSince1970 * 1000).rounded() == (b.time.timeIntervalSince1970 * 1000).rounded()
    }

    /// The event's type, as its line names it.
    public var type: EventType {
        switch kind {
        case .committed: .committed
        case .received: .received
        case .conflictOpened: .conflictOpened
        case .conflictResolved: .conflictResolved
        case .peerReachable: .peerReachable
        case .peerUnreachable: .peerUnreachable
        case .held: .held
        case .problem: .problem
        case .started: .started
        case .stopped: .stopped
        case .paused: .paused
        case .resumed: .resumed
        case .gap: .gap
        case .progress: .progress
        }
    }

    /// The paths a change touched (`committed`, `received`: the first `maxPaths`; a conflict's one
    /// path), as `status` shows them; empty for other types.
    public var paths: [String] {
        switch kind {
        case .committed(_, let paths, _), .received(_, _, let paths, _): paths
        case .conflictOpened(_, let path), .conflictResolved(_, let path, _, _), .held(let path, _): [path]
        default: []
        }
    }

    public static let maxPaths = 100

    static func format(_ date: Date) -> String {
        ISOTime.precise(date)
    }

    public static func committed(commit: String, paths: [String], count: Int) -> AgentEvent {
        AgentEvent(.committed(commit: commit, paths: Array(paths.prefix(maxPaths)), count: count))
    }

    public static func received(peer: String, commit: String?, paths: [String], count: Int) -> AgentEvent {
        AgentEvent(.received(peer: peer, commit: commit, paths: Array(paths.prefix(maxPaths)), count: count))
    }

    public static func conflictOpened(id: String, path: String) -> AgentEvent {
        AgentEvent(.conflictOpened(id: id, path: path))
    }

    public static func conflictResolved(id: String, path: String, strategy: String?, by: String?) -> AgentEvent {
        AgentEvent(.conflictResolved(id: id, path: path, strategy: strategy, by: by))
    }

    public static func peer(_ name: String, reachable: Bool, error: String?) -> AgentEvent {
        AgentEvent(reachable ? .peerReachable(peer: name) : .peerUnreachable(peer: name, error: error))
    }

    public static func held(path: String, reason: HoldReason) -> AgentEvent {
        AgentEvent(.held(path: path, reason: reason))
    }

    public static func problem(_ message: String) -> AgentEvent {
        AgentEvent(.problem(message: message))
    }

    public static func gap(since: Int, oldest: Int) -> AgentEvent {
        AgentEvent(.gap(since: since, oldest: oldest,
                        message: "events \(since + 1) to \(oldest - 1) are no longer kept (only the last \(EventLog.keep) are)"))
    }

    // MARK: the flat line

    /// Every field a line may have, as it travels.
    private struct Line: Codable {
        var seq: Int?
        var time: String
        var type: String
        var commit: String?
        var peer: String?
        var id: String?
        var path: String?
        var reason: String?
        var strategy: String?
        var by: String?
        var count: Int?
        var paths: [String]?
        var error: String?
        var message: String?
        var since: Int?
        var oldest: Int?
        var task: String?
        var done: Int?
        var total: Int?
        var bytes: Int?
        var rate: Double?
        var secondsLeft: Int?
        var started: String?
    }

    private var line: Line {
        var l = Line(seq: seq, time: Self.format(time), type: type.rawValue)
        switch kind {
        case .committed(let commit, let paths, let count): (l.commit, l.paths, l.count) = (commit, paths, count)
        case .received(let peer, let commit, let paths, let count): (l.peer, l.commit, l.paths, l.count) = (peer, commit, paths, count)
        case .conflictOpened(let id, let path): (l.id, l.path) = (id, path)
        case .conflictResolved(let id, let path, let strategy, let by): (l.id, l.path, l.strategy, l.by) = (id, path, strategy, by)
        case .peerReachable(let peer): l.peer = peer
        case .peerUnreachable(let peer, let error): (l.peer, l.error) = (peer, error)
        case .held(let path, let reason): (l.path, l.reason) = (path, reason.rawValue)
        case .problem(let message): l.message = message
        case .started(let message): l.message = message
        case .stopped: break
        case .paused(let peer), .resumed(let peer): l.peer = peer
        case .gap(let since, let oldest, let message): (l.since, l.oldest, l.message) = (since, oldest, message)
        case .progress(let p):
            (l.task, l.peer, l.done, l.total, l.bytes) = (p.task, p.peer, p.done, p.total, p.bytes)
            (l.rate, l.secondsLeft, l.started) = (p.rate.map { ($0 * 10).rounded() / 10 }, p.secondsLeft, p.since)
        }
        return l
    }

    public init(from decoder: any Decoder) throws {
        let l = try Line(from: decoder)
        func need<V>(_ value: V?, _ key: String) throws -> V {
            guard let value else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a \(l.type) event without \(key)"))
            }
            return value
        }
        let kind: Kind
        switch EventType(rawValue: l.type) {
        case .committed?: kind = .committed(commit: try need(l.commit, "commit"), paths: l.paths ?? [], count: l.count ?? (l.paths?.count ?? 0))
        case .received?: kind = .received(peer: try need(l.peer, "peer"), commit: l.commit, paths: l.paths ?? [], count: l.count ?? (l.paths?.count ?? 0))
        case .conflictOpened?: kind = .conflictOpened(id: try need(l.id, "id"), path: try need(l.path, "path"))
        case .conflictResolved?: kind = .conflictResolved(id: try need(l.id, "id"), path: try need(l.path, "path"), strategy: l.strategy, by: l.by)
        case .peerReachable?: kind = .peerReachable(peer: try need(l.peer, "peer"))
        case .peerUnreachable?: kind = .peerUnreachable(peer: try need(l.peer, "peer"), error: l.error)
        case .held?:
            guard let reason = HoldReason(rawValue: try need(l.reason, "reason")) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a held event with an unknown reason \(l.reason ?? "")"))
            }
            kind = .held(path: try need(l.path, "path"), reason: reason)
        case .problem?: kind = .problem(message: try need(l.message, "message"))
        case .started?: kind = .started(message: l.message)
        case .stopped?: kind = .stopped
        case .paused?: kind = .paused(peer: l.peer)
        case .resumed?: kind = .resumed(peer: l.peer)
        case .gap?: kind = .gap(since: try need(l.since, "since"), oldest: try need(l.oldest, "oldest"), message: l.message ?? "")
        case .progress?:
            kind = .progress(ProgressReport(task: try need(l.task, "task"), peer: l.peer, done: try need(l.done, "done"), total: l.total,
                                            bytes: l.bytes, rate: l.rate, secondsLeft: l.secondsLeft, since: l.started ?? l.time))
        case nil:
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "an event of unknown type \(l.type)"))
        }
        guard let time = ISOTime.date(l.time) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "an event whose time is no time: \(l.time)"))
        }
        self.seq = l.seq
        self.time = time
        self.kind = kind
    }

    public func encode(to encoder: any Encoder) throws {
        try line.encode(to: encoder)
    }

    /// One JSON line (no newline), keys in a fixed order: seq, time, type, then the type's fields.
    public var jsonLine: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        var parts: [String] = []
        func add<V: Encodable>(_ key: String, _ value: V?) {
            guard let value, let data = try? encoder.encode(value) else { return }
            parts.append("\"\(key)\":" + String(decoding: data, as: UTF8.self))
        }
        let l = line
        add("seq", l.seq)
        add("time", l.time)
        add("type", l.type)
        add("commit", l.commit)
        add("peer", l.peer)
        add("id", l.id)
        add("path", l.path)
        add("reason", l.reason)
        add("strategy", l.strategy)
        add("by", l.by)
        add("count", l.count)
        add("paths", l.paths)
        add("error", l.error)
        add("message", l.message)
        add("since", l.since)
        add("oldest", l.oldest)
        add("task", l.task)
        add("done", l.done)
        add("total", l.total)
        add("bytes", l.bytes)
        add("rate", l.rate)
        add("secondsLeft", l.secondsLeft)
        add("started", l.started)
        return Array(("{" + parts.joined(separator: ",") + "}").utf8)
    }
}
