import Synchronization

/// Wakes one waiting task: `ring()` ends the current (or next) `wait`, which also ends by itself
/// after its timeout. Rings while nobody waits are remembered (once).
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
        var generation = 0
    }
    private let state = Mutex(State())

    func ring() { ring(generation: nil) }

    private func ring(generation: Int?) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let generation, generation != s.generation { return nil }  // a stale timer
            guard let w = s.waiter else {
                if generation == nil { s.rung = true }
                return nil
            }
            s.waiter = nil
            s.generation += 1
            return w
        }
        waiter?.resume()
    }

    /// Returns when rung, or after `timeout`.
    func wait(upTo timeout: Duration) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let generation = state.withLock { s -> Int? in
                if s.rung {
                    s.rung = false
                    return nil
                }
                s.waiter = c
                return s.generation
            }
            guard let generation else {
                c.resume()
                return
            }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.ring(generation: generation)
            }
        }
    }
}
