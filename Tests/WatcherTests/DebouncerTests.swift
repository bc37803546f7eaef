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

    /// A long copy is committed in slices while it runs: a batch of new and changed files is due
    /// at `maxPaths`, without waiting for quiet.
    @Test func aCopyIsDueEveryMaxPathsFiles() {
        var d = Debouncer(quiet: .seconds(1), maxDelay: .seconds(60), maxPaths: 100)
        for i in 0..<99 { d.add(FilePath("new\(i)"), at: t0, change: .created) }
        d.add("old", at: t0, change: .changed)
        #expect(d.takeIfDue(at: t0)?.paths.count == 100)
        d.add("next", at: t0, change: .created)
        #expect(d.takeIfDue(at: t0) == nil, "a new batch starts small")
    }

    /// An editor's temporary renamed over its file within the batch deletes nothing tracked.
    @Test func aTemporaryMadeAndRenamedInTheBatchIsNoRemoval() {
        var d = Debouncer(quiet: .seconds(1), maxDelay: .seconds(60), maxPaths: 10)
        for i in 0..<5 {
            d.add(FilePath(".f\(i).tmp"), at: t0, change: .created)
            d.add(FilePath(".f\(i).tmp"), at: t0, change: .removed)
            d.add(FilePath("f\(i)"), at: t0, change: .created)
        }
        #expect(d.takeIfDue(at: t0)?.paths.count == 10)
    }

    /// A batch in which a file it did not make went away (maybe tracked: `rm -r` of a big tree)
    /// waits for quiet, however big, so the deletion guard sees the whole deletion at once.
    @Test func aBatchWithARemovalWaitsForQuietHoweverBig() {
        var d = Debouncer(quiet: .milliseconds(200), maxDelay: .seconds(60), maxPaths: 10)
        d.add("gone", at: t0, change: .removed)
        for i in 0..<1000 { d.add(FilePath("gone/\(i)"), at: t0, change: .removed) }
        d.add("made", at: t0, change: .created)
        #expect(d.takeIfDue(at: t0 + .milliseconds(100)) == nil)
        #expect(d.takeIfDue(at: t0 + .milliseconds(200))?.paths.count == 1002)
        // The next batch is judged on its own.
        for i in 0..<10 { d.add(FilePath("again\(i)"), at: t0 + .seconds(1), change: .created) }
        #expect(d.takeIfDue(at: t0 + .seconds(1))?.paths.count == 10)
    }

    /// A file moved in over a tracked one, then deleted: that deletion counts (moved in is no
    /// temporary of the batch's own).
    @Test func aFileMovedInThenDeletedIsARemoval() {
        var d = Debouncer(quiet: .seconds(1), maxDelay: .seconds(60), maxPaths: 10)
        for i in 0..<10 {
            d.add(FilePath("tracked\(i)"), at: t0, change: .changed)  // IN_MOVED_TO
            d.add(FilePath("tracked\(i)"), at: t0, change: .removed)
        }
        #expect(d.takeIfDue(at: t0) == nil)
    }
}
