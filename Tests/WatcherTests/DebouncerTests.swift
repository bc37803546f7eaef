import SystemPackage
import Testing
import Watcher

@Suite struct DebouncerTests {
    let t0 = ContinuousClock.now

    @Test func waitsForQuietPeriodAfterLastChange() {
        var d = Debouncer(quiet: .milliseconds(200), maxDelay: .milliseconds(2000))
        d.add("a", at: t0)
        d.add("b", at: t0 + .milliseconds(150))
        #expect(d.takeIfDue(at: t0 + .milliseconds(300)) == nil)  // only 150 ms quiet
        let batch = d.takeIfDue(at: t0 + .milliseconds(350))
        #expect(batch == WatchBatch(paths: ["a", "b"]))
        #expect(d.isEmpty)
        #expect(d.deadline == nil)
    }

    @Test func maxDelayCapsNonStopChanges() {
        var d = Debouncer(quiet: .milliseconds(200), maxDelay: .milliseconds(1000))
        var now = t0
        var taken: WatchBatch?
        // A change every 100 ms never leaves 200 ms of quiet; the batch must still go out by 1 s.
        for i in 0..<30 {
            d.add("log", at: now)
            now += .milliseconds(100)
            if let b = d.takeIfDue(at: now) {
                taken = b
                #expect(i >= 9 && i <= 10)
                break
            }
        }
        #expect(taken?.paths == ["log"])
    }

    @Test func repeatedChangesToOnePathAreOneEntry() {
        var d = Debouncer(quiet: .milliseconds(10), maxDelay: .milliseconds(100))
        for _ in 0..<1000 { d.add("same", at: t0) }
        #expect(d.pendingCount == 1)
    }

    @Test func rescanAloneIsABatchAndFlushIgnoresTime() {
        var d = Debouncer(quiet: .seconds(10), maxDelay: .seconds(20))
        #expect(d.flush() == nil)
        d.requestRescan(at: t0)
        #expect(d.takeIfDue(at: t0) == nil)
        #expect(d.flush() == WatchBatch(paths: [], rescan: true))
    }

    @Test func maxDelayBelowQuietIsRaisedToQuiet() {
        let d = Debouncer(quiet: .milliseconds(500), maxDelay: .milliseconds(100))
        #expect(d.maxDelay == .milliseconds(500))
    }
}
