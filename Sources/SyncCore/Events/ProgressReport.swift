import FoundationEssentials

/// One piece of long work in hand (SPEC `status.progress`, `status.tasks`, the `progress` event):
/// `{"task", "peer", "done", "total", "bytes", "rate", "secondsLeft", "since"}`.
/// - `task`: `scan`, `start-up commit`, `merge` (the engine's), `receive` (objects fetched from
///   `peer`) or `send` (objects pushed to the hub `peer`).
/// - `done` of `total` (files, paths or objects; `total` null while unknown: a first scan counts as
///   it finds, a copy from a store on this machine walks as it copies); `bytes` moved so far (null
///   where nothing is counted).
/// - `rate` in `done` per second and `secondsLeft` once a second of work gives a rate to go by
///   (`secondsLeft` only with a `total`).
public struct ProgressReport: Codable, Sendable, Equatable {
    public var task: String
    public var peer: String?
    public var done: Int
    public var total: Int?
    public var bytes: Int?
    public var rate: Double?
    public var secondsLeft: Int?
    public var since: String

    public init(task: String, peer: String? = nil, done: Int, total: Int?, bytes: Int? = nil,
                rate: Double? = nil, secondsLeft: Int? = nil, since: String) {
        (self.task, self.peer, self.done, self.total, self.bytes) = (task, peer, done, total, bytes)
        (self.rate, self.secondsLeft, self.since) = (rate, secondsLeft, since)
    }

    /// "receive from watch", "merge".
    public var title: String { peer.map { "\(task) \(task == "send" ? "to" : "from") \($0)" } ?? task }

    /// Whether the work reached its total.
    public var complete: Bool { total.map { done >= $0 } ?? false }

    /// What `done` counts, for a line a person reads.
    public var unit: String { task == "receive" || task == "send" ? "objects" : "paths" }

    /// One plain line: "receive from watch: 120 of 300 objects (40%), 240.0 MB, 85/s, 2 s left".
    public var line: String {
        var s = "\(title): \(done)\(total.map { " of \($0)" } ?? "") \(unit)"
        if let total, total > 0 { s += " (\(min(100, done * 100 / total))%)" }
        if let bytes, bytes > 0 { s += ", \(Self.size(bytes))" }
        if let rate, !complete { s += ", \(Int(rate.rounded()))/s" }
        if let secondsLeft, !complete { s += ", \(Self.duration(secondsLeft)) left" }
        return s
    }

    public static func size(_ bytes: Int) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes), unit = 0
        while value >= 1000, unit < units.count - 1 { value /= 1000; unit += 1 }
        return unit == 0 ? "\(bytes) B" : "\((value * 10).rounded() / 10) \(units[unit])"
    }

    public static func duration(_ seconds: Int) -> String {
        seconds < 60 ? "\(seconds) s" : seconds < 3600 ? "\(seconds / 60) min \(seconds % 60) s" : "\(seconds / 3600) h \(seconds % 3600 / 60) min"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(task, forKey: .task)
        try c.encode(peer, forKey: .peer)
        try c.encode(done, forKey: .done)
        try c.encode(total, forKey: .total)  // null while unknown: the keys are part of the contract
        try c.encode(bytes, forKey: .bytes)
        try c.encode(rate.map { ($0 * 10).rounded() / 10 }, forKey: .rate)
        try c.encode(secondsLeft, forKey: .secondsLeft)
        try c.encode(since, forKey: .since)
    }
}
