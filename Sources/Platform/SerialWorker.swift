/// Work run in order on one thread of its own (file I/O off Swift's pool), without libdispatch: a
/// `DispatchQueue` starts libdispatch's pool, which then wakes every second for ever (see
/// `QuietExecutor`). The thread starts with the first work and waits on a condition variable.
public final class SerialWorker: @unchecked Sendable {
    private let condition = Condition()
    private var work: [() -> Void] = []
    private var started = false
    /// Work handed over and work finished, to let `sync` wait for what came before it.
    private var queued = 0
    private var done = 0
    private let name: String

    public init(name: String) { self.name = name }

    /// Runs `body` on the worker's thread after everything handed over before it.
    public func async(_ body: @escaping @Sendable () -> Void) {
        condition.lock()
        work.append(body)
        queued += 1
        if !started {
            started = true
            OwnThread.start(name: name) { [self] in loop() }
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Returns once everything handed over before this call has run.
    public func sync() {
        condition.lock()
        let mine = queued
        while done < mine { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        condition.lock()
        while true {
            while work.isEmpty { condition.wait() }
            let batch = work
            work.removeAll(keepingCapacity: true)
            condition.unlock()
            for body in batch { body() }
            condition.lock()
            done += batch.count
            condition.broadcast()
        }
    }
}
