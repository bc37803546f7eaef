import Logging
import Synchronization
import SyncCore
import Testing

@testable import Agent

@Suite struct ProgressBoardTests {
    let board = ProgressBoard(logger: Logger(label: "test"))

    @Test func aTransferIsShownPerPeerBesideTheEngineTask() {
        board.update("merge", done: 10, total: 300)
        board.update("receive", peer: "watch", done: 5, total: nil, bytes: 5_000_000)
        #expect(board.current?.task == "merge")
        let all = board.all
        #expect(all.map(\.title) == ["merge", "receive from watch"])
        #expect(all[1].bytes == 5_000_000 && all[1].total == nil)
        #expect(all[1].line == "receive from watch: 5 objects, 5.0 MB")
    }

    @Test func finishedWorkStaysAtItsWholeForAWatcherThenGoes() {
        board.update("receive", peer: "phone", done: 250, total: nil, bytes: 1)
        board.finish("receive", peer: "phone")
        let done = board.all.first { $0.peer == "phone" }
        #expect(done?.done == 250 && done?.total == 250 && done?.complete == true)
        #expect(done?.line.contains("250 of 250 objects (100%)") == true)
        #expect(board.current == nil)
        #expect(!board.moved(within: .seconds(60)))
    }

    @Test func aFewObjectsInAMomentLeaveNothingBehind() {
        board.update("receive", peer: "phone", done: 3, total: 3, bytes: 90)
        board.finish("receive", peer: "phone")
        #expect(board.all.isEmpty)
    }

    @Test func anEngineTaskEndsAtItsTotal() {
        board.update("merge", done: 150, total: 300)
        board.update("merge", done: 300, total: 300)
        #expect(board.current == nil)
        #expect(board.all.map(\.line) == ["merge: 300 of 300 paths (100%)"])
    }

    @Test func eventsComeAtMostOnceASecondAndAtTheEnd() {
        let told = Mutex<[ProgressReport]>([])
        board.onReport { r in told.withLock { $0.append(r) } }
        for done in stride(from: 0, through: 5000, by: 50) { board.update("merge", done: done, total: 5000) }
        board.update("receive", peer: "w", done: 0, total: nil)
        board.update("receive", peer: "w", done: 150, total: nil)
        board.update("receive", peer: "w", done: 200, total: nil)
        board.finish("receive", peer: "w")
        let reports = told.withLock { $0 }
        // a big merge: its first step (its total says it is big), then its end; a transfer of
        // unknown size once it reached 100 units, then its end
        #expect(reports.map(\.done) == [0, 5000, 150, 200])
        #expect(reports.last?.total == 200)
    }

    @Test func theRateGivesATimeLeftOnceASecondHasPassed() async throws {
        board.update("merge", done: 100, total: 1000)
        #expect(board.current?.rate == nil)
        try await Task.sleep(for: .milliseconds(1100))
        board.update("merge", done: 500, total: 1000)
        let r = try #require(board.current)
        let rate = try #require(r.rate)
        #expect(rate > 0 && rate < 460)  // 500 done in at least 1.1 s
        #expect(r.secondsLeft.map { $0 >= 1 } == true)
    }
}
