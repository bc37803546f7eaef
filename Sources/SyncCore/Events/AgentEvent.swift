import FoundationEssentials
import Glibc

/// One line of `syncagent events` (SPEC "Events"): a sequence number that grows by one and survives
/// restarts, a time, a type, and the fields of that type. Fields a type does not have are left out.
public struct AgentEvent: Codable, Sendable, Equatable {
    /// Set when the event is logged; a `gap` has none.
    public var seq: Int?
    public var time: String
    public var type: String
    public var commit: String?
    public var peer: String?
    /// Paths (as `status` shows them: bytes that are not UTF-8 escaped), the first 100.
    public var paths: [String]?
    public var count: Int?
    public var id: String?
    public var path: String?
    public var strategy: String?
    public var by: String?
    public var error: String?
    public var reason: String?
    public var message: String?
    /// `gap`: the `--since` asked for, and the oldest sequence number still kept.
    public var since: Int?
    public var oldest: Int?

    public init(type: String, time: Date = Date()) {
        self.type = type
        self.time = Self.format(time)
    }

    public init(_ type: EventType, time: Date = Date()) {
        self.init(type: type.rawValue, time: time)
    }

    public static let maxPaths = 100

    static func format(_ date: Date) -> String {
        ISOTime.precise(date)
    }

    public static func committed(commit: String, paths: [String], count: Int) -> AgentEvent {
        var e = AgentEvent(.committed)
        e.commit = commit
        e.paths = Array(paths.prefix(maxPaths))
        e.count = count
        return e
    }

    public static func received(peer: String, commit: String?, paths: [String], count: Int) -> AgentEvent {
        var e = AgentEvent(.received)
        e.peer = peer
        e.commit = commit
        e.paths = Array(paths.prefix(maxPaths))
        e.count = count
        return e
    }

    public static func conflictOpened(id: String, path: String) -> AgentEvent {
        var e = AgentEvent(.conflictOpened)
        e.id = id
        e.path = path
        return e
    }

    public static func conflictResolved(id: String, path: String, strategy: String?, by: String?) -> AgentEvent {
        var e = AgentEvent(.conflictResolved)
        e.id = id
        e.path = path
        e.strategy = strategy
        e.by = by
        return e
    }

    public static func peer(_ name: String, reachable: Bool, error: String?) -> AgentEvent {
        var e = AgentEvent(reachable ? .peerReachable : .peerUnreachable)
        e.peer = name
        e.error = error
        return e
    }

    public static func held(path: String, reason: HoldReason) -> AgentEvent {
        var e = AgentEvent(.held)
        e.path = path
        e.reason = reason.rawValue
        return e
    }

    public static func problem(_ message: String) -> AgentEvent {
        var e = AgentEvent(.problem)
        e.message = message
        return e
    }

    public static func gap(since: Int, oldest: Int) -> AgentEvent {
        var e = AgentEvent(.gap)
        e.since = since
        e.oldest = oldest
        e.message = "events \(since + 1) to \(oldest - 1) are no longer kept (only the last \(EventLog.keep) are)"
        return e
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
        add("seq", seq)
        add("time", time)
        add("type", type)
        add("commit", commit)
        add("peer", peer)
        add("id", id)
        add("path", path)
        add("reason", reason)
        add("strategy", strategy)
        add("by", by)
        add("count", count)
        add("paths", paths)
        add("error", error)
        add("message", message)
        add("since", since)
        add("oldest", oldest)
        return Array(("{" + parts.joined(separator: ",") + "}").utf8)
    }
}
