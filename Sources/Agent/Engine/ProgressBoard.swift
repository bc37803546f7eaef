import FoundationEssentials
import Glibc
import Platform
import Logging
import Synchronization
import SyncCore

/// Long work in hand (SPEC `status.progress`): `{"task", "done", "total", "since"}`; `total` is
/// null while it is not known yet (the first scan counts files as it finds them).
public struct ProgressReport: Codable, Sendable, Equatable {
    public var task: String
    public var done: Int
    public var total: Int?
    public var since: String

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(task, forKey: .task)
        try c.encode(done, forKey: .done)
        try c.encode(total, forKey: .total)  // null while unknown: the key is part of the contract
        try c.encode(since, forKey: .since)
    }
}

/// What the engine is busy with, readable from any thread while the engine works (so `status`
/// answers during a long start-up). Logs the progress every `logEvery` seconds.
final class ProgressBoard: Sendable {
    private struct State {
        var current: ProgressReport?
        var started = ContinuousClock.now
        var lastLog = ContinuousClock.now
        var lastStep = ContinuousClock.now
        var logged = false
    }
    private let state = Mutex(State())
    private let logger: Logger
    private let logEvery: Duration

    init(logger: Logger, logEvery: Duration = .seconds(3)) {
        self.logger = logger
        self.logEvery = logEvery
    }

    var current: ProgressReport? { state.withLock { $0.current } }

    /// Whether long work is in hand and took a step within `interval` (for the watchdog: work that
    /// stopped moving is not "busy", it is stuck).
    func moved(within interval: Duration) -> Bool {
        state.withLock { $0.current != nil && ContinuousClock.now - $0.lastStep <= interval }
    }

    /// A step of `task`: `done` of `total` (nil: not known yet). `done == total` ends the task.
    func update(_ task: String, done: Int, total: Int?) {
        if let total, done >= total {
            finish(task)
            return
        }
        let line: String? = state.withLock { s in
            let now = ContinuousClock.now
            if s.current?.task != task {
                s.current = ProgressReport(task: task, done: done, total: total, since: ISOTime.now())
                s.started = now
                s.lastLog = now
                s.logged = false
            }
            s.current?.done = done
            s.current?.total = total
            s.lastStep = now
            guard now - s.lastLog >= logEvery else { return nil }
            s.lastLog = now
            s.logged = true
            return "\(task): \(done)\(total.map { " of \($0)" } ?? " so far")"
        }
        if let line { logger.notice("\(line)") }
    }

    /// `task` is over: says so, with how long it took (only work big enough to report progress
    /// calls `update`, so small merges and commits stay quiet).
    func finish(_ task: String) {
        let line: String? = state.withLock { s in
            guard let current = s.current, current.task == task else { return nil }
            s.current = nil
            let took = ContinuousClock.now - s.started
            let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
            return "\(task) finished\(current.total.map { " (\($0) paths)" } ?? "") in \(oneDecimal(seconds)) s"
        }
        if let line { logger.notice("\(line)") }
    }
}
