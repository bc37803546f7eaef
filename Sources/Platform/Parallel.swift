/// `body(0)` ... `body(workers - 1)` at once, worker 0 on the calling thread and each other on a
/// thread of its own, returning when all have: `DispatchQueue.concurrentPerform`'s contract (the
/// body may borrow what the caller holds), without starting libdispatch's pool, which then wakes
/// every second for ever (see `QuietExecutor`). For big batches: a thread costs some tens of
/// microseconds to start.
public func inParallel(workers: Int, name: String = "syncagent-work", _ body: (Int) -> Void) {
    guard workers > 1 else {
        if workers == 1 { body(0) }
        return
    }
    withoutActuallyEscaping(body) { body in
        let shared = Shared(body: body, running: workers - 1)
        for worker in 1..<workers {
            OwnThread.start(name: "\(name.prefix(12))\(worker)", stackSize: 8 << 20) {
                shared.body!(worker)
                shared.condition.lock()
                shared.running -= 1
                shared.condition.signal()
                shared.condition.unlock()
            }
        }
        body(0)
        shared.condition.lock()
        while shared.running > 0 { shared.condition.wait() }
        // A worker's thread may not have let go of `shared` yet: `body` must not outlive this block.
        shared.body = nil
        shared.condition.unlock()
    }
}

/// What the workers share; `body` is dropped once all have run it (the caller waits for all).
private final class Shared: @unchecked Sendable {
    var body: ((Int) -> Void)?
    let condition = Condition()
    var running: Int
    init(body: @escaping (Int) -> Void, running: Int) {
        self.body = body
        self.running = running
    }
}
