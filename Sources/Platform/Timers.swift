/// Timers that can be taken back. A `Task.sleep` cancelled early still wakes its executor at the
/// deadline (the runtime only resumes the task sooner; the scheduled job stays and fires for
/// nothing): every fetch's 20 s watchdog, cancelled when the fetch ended in milliseconds, woke an
/// idle agent 20 s later. Here `cancel` removes the deadline, so nothing wakes for it. One thread
/// of its own keeps the deadlines and sleeps until the soonest; with none it waits without end.
/// Bodies run on that thread and must be short (set a flag, resume a continuation).
public enum Timers {
    public final class Timer: @unchecked Sendable {
        fileprivate let id: UInt64
        fileprivate init(id: UInt64) { self.id = id }

        /// Takes the timer back: its body does not run if it has not started yet.
        public func cancel() { Keeper.shared.remove(id) }
    }

    /// Runs `body` once `delay` has passed, unless the returned timer is cancelled first.
    @discardableResult
    public static func after(_ delay: Duration, _ body: @escaping @Sendable () -> Void) -> Timer {
        var nanoseconds: UInt64 = 0
        if delay > .zero {
            let (seconds, attoseconds) = delay.components
            nanoseconds = UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
        }
        return Timer(id: Keeper.shared.add(at: QuietExecutor.monotonicNow() &+ nanoseconds, body))
    }

    private final class Keeper: @unchecked Sendable {
        static let shared = Keeper()
        private let condition = Condition()
        /// Soonest first: (monotonic nanoseconds, id, body).
        private var entries: [(at: UInt64, id: UInt64, body: @Sendable () -> Void)] = []
        private var nextID: UInt64 = 0
        private var started = false

        func add(at: UInt64, _ body: @escaping @Sendable () -> Void) -> UInt64 {
            condition.lock()
            defer { condition.unlock() }
            if !started {
                started = true
                OwnThread.start(name: "syncagent-timers") { [self] in run() }
            }
            nextID &+= 1
            var low = 0, high = entries.count
            while low < high {
                let mid = (low + high) / 2
                if entries[mid].at <= at { low = mid + 1 } else { high = mid }
            }
            entries.insert((at, nextID, body), at: low)
            if low == 0 { condition.signal() }  // a new soonest deadline
            return nextID
        }

        func remove(_ id: UInt64) {
            condition.lock()
            // The soonest one gone: the thread is told now (amid the work that cancelled it) to
            // wait for the next deadline instead of waking at this one for nothing.
            if let i = entries.firstIndex(where: { $0.id == id }) {
                entries.remove(at: i)
                if i == 0 { condition.signal() }
            }
            condition.unlock()
        }

        private func run() {
            condition.lock()
            while true {
                let now = QuietExecutor.monotonicNow()
                if let first = entries.first, first.at <= now {
                    entries.removeFirst()
                    condition.unlock()
                    first.body()
                    condition.lock()
                    continue
                }
                if let first = entries.first {
                    _ = condition.wait(until: Deadline(monotonicNanoseconds: first.at))
                } else {
                    condition.wait()
                }
            }
        }
    }
}
