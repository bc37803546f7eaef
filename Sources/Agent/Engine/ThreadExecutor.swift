import FoundationEssentials
import Glibc
import Platform

/// A serial executor that runs its jobs on one dedicated thread, so the sync engine's blocking work
/// (libgit2, file I/O, external merge programs) never occupies Swift's cooperative pool, which has
/// only as many threads as there are cores.
final class ThreadExecutor: SerialExecutor, @unchecked Sendable {
    private let condition = Condition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init(name: String) {
        OwnThread.start(name: name, stackSize: 8 << 20) { self.loop() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Ends the thread once the jobs in hand are run (a one-shot command's engine, done).
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedSerialExecutor())
        }
    }
}

/// Runs blocking `body` (file I/O, libgit2) on a new thread of its own, never on the cooperative
/// pool, and returns its result. For rare work; steady work belongs on an executor like the above.
public func onOwnThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
        OwnThread.start(name: name) { c.resume(returning: body()) }
    }
}
