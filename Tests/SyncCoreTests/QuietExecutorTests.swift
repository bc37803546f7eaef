@testable import Platform
import Testing

/// The agent's own executor (QuietExecutors, installed by `syncagent`'s main) and the parallel
/// helper that replaced `concurrentPerform`: jobs run, sleeps end in deadline order and not before
/// their time, and every worker runs once.
@Suite struct QuietExecutorTests {
    /// A list several threads append to.
    final class Seen: @unchecked Sendable {
        private let lock = Condition()
        private var items: [Int] = []
        func add(_ i: Int) { lock.withLock { items.append(i) } }
        var all: [Int] { lock.withLock { items } }
    }

    @Test func tasksAndSleepsRunOnItsThreads() async throws {
        // One worker: jobs due together then run one after the other, in deadline order (with two,
        // the second may finish its append first on a loaded machine).
        let executor = QuietExecutor(threads: 1)
        let order = Seen()
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for (i, ms) in [(3, 150), (1, 50), (2, 100)] {
                group.addTask(executorPreference: executor) {
                    try? await Task.sleep(for: .milliseconds(ms))
                    order.add(i)
                }
            }
        }
        #expect(order.all == [1, 2, 3])
        // A deadline already past (half a second ago: a negative duration under a second) runs now.
        let late = Seen()
        await withTaskGroup(of: Void.self) { group in
            group.addTask(executorPreference: executor) {
                try? await Task.sleep(until: .now - .milliseconds(500), clock: .continuous)
                late.add(1)
            }
        }
        #expect(late.all == [1])
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        // Many short jobs: each runs once.
        let ran = Seen()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<2000 { group.addTask(executorPreference: executor) { ran.add(i) } }
        }
        #expect(ran.all.sorted() == Array(0..<2000))
    }

    @Test func inParallelRunsEveryWorkerOnceAndWaits() {
        for workers in [0, 1, 2, 5] {
            let seen = Seen()
            inParallel(workers: workers) { w in seen.add(w) }
            #expect(seen.all.sorted() == Array(0..<workers))
        }
        // The body may borrow what the caller holds (as concurrentPerform's did).
        var local = [Int](repeating: 0, count: 4)
        local.withUnsafeMutableBufferPointer { buffer in
            let base = buffer
            inParallel(workers: 4) { w in base[w] = w + 1 }
        }
        #expect(local == [1, 2, 3, 4])
    }
}

/// Timers that can be taken back (`Timers`): a cancelled one never runs, the others run in
/// deadline order and not before their time, whichever was cancelled.
@Suite struct TimersTests {
    @Test func aCancelledTimerNeverRunsAndTheOthersRunOnTime() async throws {
        let seen = QuietExecutorTests.Seen()
        let start = ContinuousClock.now
        let soonest = Timers.after(.milliseconds(50)) { seen.add(0) }
        Timers.after(.milliseconds(150)) { seen.add(2) }
        let middle = Timers.after(.milliseconds(100)) { seen.add(9) }
        Timers.after(.milliseconds(120)) { seen.add(1) }
        soonest.cancel()
        middle.cancel()
        let deadline = ContinuousClock.now + .seconds(30)
        while seen.all.count < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        try await Task.sleep(for: .milliseconds(100))
        #expect(seen.all == [1, 2])
    }
}
