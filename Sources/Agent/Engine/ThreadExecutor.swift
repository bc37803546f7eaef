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
    /// The thread, until `finish` has waited for it.
    private var thread: pthread_t?

    init(name: String) {
        let started = OwnThread.startJoinable(name: name, stackSize: 8 << 20) { self.loop() }
        condition.lock()
        thread = started
        condition.unlock()
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
    /// Waits for the thread to end (unless called on it): a one-shot command then exits with no
    /// thread of its own still letting go of its state (thread-local destructors) while `exit`
    /// cleans up. (A one-shot sync crashed once with a double free on this thread after it had
    /// printed its result; that race is the likely cause, not a proven one.)
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        let ending = thread
        thread = nil
        condition.unlock()
        if let ending {
            if pthread_equal(ending, pthread_self()) != 0 {
                pthread_detach(ending)
            } else {
                pthread_join(ending, nil)
            }
        }
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
