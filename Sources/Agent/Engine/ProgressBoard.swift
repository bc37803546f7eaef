import FoundationEssentials
import Glibc
import Platform
import Logging
import Synchronization
import SyncCore

/// What long work is in hand (SPEC `status.progress` and `status.tasks`), readable from any thread
/// while the engine works (so `status` answers during a long start-up): the engine's one task
/// (scan, start-up commit, commit, merge) and each peer's transfer (receive, send), with a rate and
/// a time left. Logs each task every `logEvery`; hands a `progress` event to live listeners at most
/// once a second per task once it has run a second or done `worthShowing` units, and at its end.
/// Nothing else runs for it: a step costs a lock and a clock read, whoever watches.
final class ProgressBoard: Sendable {
    private struct Task {
        var report: ProgressReport
        var started = ContinuousClock.now
        var lastLog = ContinuousClock.now
        var lastEvent: ContinuousClock.Instant?
        var logged = false
        var finishedAt: ContinuousClock.Instant?
    }
    private struct State {
        /// In the order they began; finished ones stay `keepFinished` (so a watcher sees 100 %).
        var tasks: [Task] = []
        var lastStep = ContinuousClock.now
    }
    private let state = Mutex(State())
    private let logger: Logger
    private let logEvery: Duration
    /// Live listeners of `progress` events (the event bus), set once the bus exists.
    private let listener = Mutex<(@Sendable (ProgressReport) -> Void)?>(nil)

    /// How long a finished task stays on the board, at 100 %: a watcher polling twice a second
    /// sees it end.
    static let keepFinished: Duration = .seconds(3)
    /// Work shorter than this and smaller than `worthShowing` units leaves nothing behind when it
    /// ends (a steady sync's few objects are no "task" to show).
    static let worthShowing = 100
    /// ... or that moved this many bytes (a few photos received in a batch are worth a bar).
    static let worthShowingBytes = 8_000_000

    init(logger: Logger, logEvery: Duration = .seconds(3)) {
        self.logger = logger
        self.logEvery = logEvery
    }

    func onReport(_ body: @escaping @Sendable (ProgressReport) -> Void) { listener.withLock { $0 = body } }

    /// The engine's task in hand (scan, start-up commit, merge), nil when it has none.
    var current: ProgressReport? {
        state.withLock { s in s.tasks.first { $0.report.peer == nil && $0.finishedAt == nil }.map { Self.measured($0) } }
    }

    /// Every task in hand, and those finished within `keepFinished`, in the order they began.
    var all: [ProgressReport] {
        state.withLock { s in
            Self.drop(&s)
            return s.tasks.map { Self.measured($0) }
        }
    }

    /// Whether long work is in hand and took a step within `interval` (for the watchdog: work that
    /// stopped moving is not "busy", it is stuck).
    func moved(within interval: Duration) -> Bool {
        // The engine's own work only: a transfer moves on a thread of its own, whatever the engine does.
        state.withLock { s in s.tasks.contains { $0.finishedAt == nil && $0.report.peer == nil } && ContinuousClock.now - s.lastStep <= interval }
    }

    /// A step of `task` (with `peer` for a transfer): `done` of `total` (nil: not known yet).
    /// `done == total` ends an engine task.
    func update(_ task: String, peer: String? = nil, done: Int, total: Int?, bytes: Int? = nil) {
        defer { if peer == nil, let total, done >= total { finish(task, done: done) } }
        let now = ContinuousClock.now
        let (line, event): (String?, ProgressReport?) = state.withLock { s in
            if peer == nil { s.lastStep = now }
            Self.drop(&s)
            let i: Int
            if let found = s.tasks.firstIndex(where: { $0.report.task == task && $0.report.peer == peer && $0.finishedAt == nil }) {
                i = found
            } else {
                s.tasks.removeAll { $0.report.task == task && $0.report.peer == peer }  // its last run, finished
                s.tasks.append(Task(report: ProgressReport(task: task, peer: peer, done: done, total: total, since: ISOTime.now()),
                                    started: now, lastLog: now))
                i = s.tasks.count - 1
            }
            s.tasks[i].report.done = done
            s.tasks[i].report.total = total
            if let bytes { s.tasks[i].report.bytes = bytes }
            var line: String?
            if now - s.tasks[i].lastLog >= logEvery {
                s.tasks[i].lastLog = now
                s.tasks[i].logged = true
                line = Self.measured(s.tasks[i]).line
            }
            var event: ProgressReport?
            // Worth an event: a second of work, or work of `worthShowing` units (done, or known
            // from its total at once: a page draws a big merge's bar from its first step).
            if now - s.tasks[i].started >= .seconds(1) || done >= Self.worthShowing || (total ?? 0) >= Self.worthShowing
                || (s.tasks[i].report.bytes ?? 0) >= Self.worthShowingBytes,
               s.tasks[i].lastEvent.map({ now - $0 >= .seconds(1) }) ?? true {
                s.tasks[i].lastEvent = now
                event = Self.measured(s.tasks[i])
            }
            return (line, event)
        }
        if let line { logger.notice("\(line)") }
        if let event, let tell = listener.withLock({ $0 }) { tell(event) }
    }

    /// `task` is over: says so, with how long it took, when it was long enough to be reported on.
    /// `done` (when given) is its last count; a task with no total gets its count as total.
    func finish(_ task: String, peer: String? = nil, done: Int? = nil) {
        let now = ContinuousClock.now
        let (line, event): (String?, ProgressReport?) = state.withLock { s in
            guard let i = s.tasks.firstIndex(where: { $0.report.task == task && $0.report.peer == peer && $0.finishedAt == nil }) else {
                return (nil, nil)
            }
            var t = s.tasks[i]
            if let done { t.report.done = done }
            t.report.total = max(t.report.total ?? t.report.done, t.report.done)
            t.report.done = t.report.total ?? t.report.done
            let took = now - t.started
            guard took >= .seconds(1) || t.report.done >= Self.worthShowing || (t.report.bytes ?? 0) >= Self.worthShowingBytes || t.logged else {
                s.tasks.remove(at: i)
                return (nil, nil)
            }
            t.finishedAt = now
            s.tasks[i] = t
            let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
            // The engine's long tasks always say how long they took; a commit or a transfer only
            // when it was long enough to be reported on meanwhile.
            let line = t.logged || took >= logEvery || (peer == nil && task != Store.commitTask)
                ? "\(t.report.title) finished (\(t.report.done) \(t.report.unit)\(t.report.bytes.map { ", \(ProgressReport.size($0))" } ?? "")) in \(oneDecimal(seconds)) s"
                : nil
            return (line, t.lastEvent != nil ? Self.measured(t) : nil)
        }
        if let line { logger.notice("\(line)") }
        if let event, let tell = listener.withLock({ $0 }) { tell(event) }
    }

    private static func drop(_ s: inout State) {
        let now = ContinuousClock.now
        s.tasks.removeAll { t in t.finishedAt.map { now - $0 > keepFinished } ?? false }
    }

    /// The report with its rate and time left, as of now (or of its end).
    private static func measured(_ t: Task) -> ProgressReport {
        var r = t.report
        let elapsed = (t.finishedAt ?? ContinuousClock.now) - t.started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if seconds >= 1, r.done > 0 {
            let rate = Double(r.done) / seconds
            r.rate = rate
            if let total = r.total, t.finishedAt == nil { r.secondsLeft = Int((Double(max(0, total - r.done)) / rate).rounded(.up)) }
        }
        return r
    }
}
