import Synchronization

/// Wakes one waiting task: `ring()` ends the current (or next) `wait`, which also ends by itself
/// after its timeout. Rings while nobody waits are remembered (once).
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Bool, Never>?
        var generation = 0
        /// The running wait's timeout; cancelled when the bell rings first, so frequent rings do
        /// not leave one sleeping task per wait behind.
        var timer: Task<Void, Never>?
    }
    private let state = Mutex(State())

    func ring() { ring(generation: nil) }

    private func ring(generation: Int?) {
        let (waiter, timer) = state.withLock { s -> (CheckedContinuation<Bool, Never>?, Task<Void, Never>?) in
            if let generation, generation != s.generation { return (nil, nil) }  // a stale timer
            guard let w = s.waiter else {
                if generation == nil { s.rung = true }
                return (nil, nil)
            }
            s.waiter = nil
            s.generation += 1
            defer { s.timer = nil }
            return (w, s.timer)
        }
        if generation == nil { timer?.cancel() }
        waiter?.resume(returning: generation == nil)
    }

    /// A ring is waiting: the next `wait` returns at once.
    var isRung: Bool { state.withLock { $0.rung } }

    /// Returns when rung (true), or after `timeout` (false).
    @discardableResult
    func wait(upTo timeout: Duration) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let generation = state.withLock { s -> Int? in
                if s.rung {
                    s.rung = false
                    return nil
                }
                s.waiter = c
                return s.generation
            }
            guard let generation else {
                c.resume(returning: true)
                return
            }
            let timer = Task { [weak self] in
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                self?.ring(generation: generation)
            }
            state.withLock { s in
                if s.generation == generation { s.timer = timer } else { timer.cancel() }
            }
        }
    }
}
