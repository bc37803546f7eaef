@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Swift's executors on threads of our own, so an idle agent sleeps. The runtime's defaults on Linux
/// are libdispatch's, and once its pool starts, libdispatch wakes every second for ever to watch it
/// (`_dispatch_workq_monitor_pools`, a 1 s timer on its manager thread): 74 of an idle agent's 88
/// wake-ups a minute. `install()` makes these the default executor (every task, `Task.sleep` from
/// any actor included) and the main actor's, through the runtime's `ExecutorFactory` (an SPI of
/// Swift 6.3's `_Concurrency`, the mechanism of the "custom main and global executors" proposal);
/// it must run before the first task is made, and the program's main thread then calls
/// `runMainThread()`.
public enum QuietExecutors {
    /// Makes these the runtime's executors. Call it first, before any task is made.
    public static func install() {
        _createExecutors(factory: Factory.self)
    }

    private enum Factory: ExecutorFactory {
        static var mainExecutor: any MainExecutor { QuietMainExecutor.shared }
        static var defaultExecutor: any TaskExecutor { QuietExecutor.shared }
    }

    /// Runs the main actor's jobs on the calling (main) thread, for ever.
    public static func runMainThread() -> Never {
        QuietMainExecutor.shared.loop()
    }
}

/// The default executor: `threads` workers wait on a condition variable and wake only for a job or
/// for the earliest `Task.sleep` deadline; nothing runs on a timer of its own. Jobs run in order of
/// arrival (priorities are not kept); like the pool it replaces there are as many workers as cores
/// (at least 2), and blocking work belongs on threads of its own.
final class QuietExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    static let shared = QuietExecutor(threads: max(2, sysconf(Int32(_SC_NPROCESSORS_ONLN))))

    private let condition = Condition()
    private var ready: [UnownedJob] = []
    private var head = 0
    /// Jobs waiting for a time, soonest first: (monotonic nanoseconds, arrival, job).
    private var timers: [(at: UInt64, order: UInt64, job: UnownedJob)] = []
    private var arrivals: UInt64 = 0
    /// A worker waits for the soonest timer; the others wait for jobs only (one wake-up a timer).
    private var timerKept = false

    init(threads: Int) {
        for i in 0..<threads {
            OwnThread.start(name: "syncagent-pool\(i)", stackSize: 8 << 20) { [self] in work() }
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        add(UnownedJob(job))
    }

    /// `Task.sleep` and timeouts: the job runs once `clock` reaches `instant` (moved onto the
    /// monotonic clock; a clock whose durations are not `Duration` runs it at once).
    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        var nanoseconds: UInt64 = 0
        // A deadline already past (a negative duration: both components carry its sign) runs now.
        if let left = clock.now.duration(to: instant) as? Duration, left > .zero {
            let (seconds, attoseconds) = left.components
            nanoseconds = UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
        }
        add(UnownedJob(job), at: Self.monotonicNow() &+ nanoseconds)
    }

    func add(_ job: UnownedJob) {
        condition.lock()
        ready.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Runs `job` once the monotonic clock reaches `at` (nanoseconds).
    func add(_ job: UnownedJob, at: UInt64) {
        condition.lock()
        arrivals &+= 1
        let entry = (at: at, order: arrivals, job: job)
        var low = 0, high = timers.count
        while low < high {
            let mid = (low + high) / 2
            if timers[mid].at <= at { low = mid + 1 } else { high = mid }
        }
        timers.insert(entry, at: low)
        // A new soonest deadline: the worker keeping the timer waits for an older, later one.
        if low == 0 { condition.broadcast() } else { condition.signal() }
        condition.unlock()
    }

    private func work() {
        condition.lock()
        while true {
            let now = Self.monotonicNow()
            while let first = timers.first, first.at <= now {
                ready.append(timers.removeFirst().job)
            }
            if head < ready.count {
                let job = ready[head]
                head += 1
                if head == ready.count {
                    ready.removeAll(keepingCapacity: ready.capacity <= 1024)
                    head = 0
                } else if head >= 1024, head * 2 >= ready.count {
                    ready.removeFirst(head)
                    head = 0
                }
                if head < ready.count { condition.signal() }  // more for another worker
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
                condition.lock()
                continue
            }
            if let first = timers.first, !timerKept {
                timerKept = true
                _ = condition.wait(until: Deadline(monotonicNanoseconds: first.at))
                timerKept = false
            } else {
                condition.wait()
            }
        }
    }

    static func monotonicNow() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
    }
}

/// The main actor's executor: its jobs run in order on the thread in `loop` (the program's main thread).
final class QuietMainExecutor: MainExecutor, @unchecked Sendable {
    static let shared = QuietMainExecutor()
    private let condition = Condition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        jobs.append(UnownedJob(job))
        condition.signal()
        condition.unlock()
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    func run() throws { try runUntil { false } }

    func runUntil(_ done: () -> Bool) throws {
        while !done() {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if stopped {
                stopped = false
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
        }
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    func loop() -> Never {
        while true { try? run() }
    }
}

extension Deadline {
    /// The point `nanoseconds` on the monotonic clock.
    public init(monotonicNanoseconds nanoseconds: UInt64) {
        time = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }
}
