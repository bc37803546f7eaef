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

    /// A copy of big files goes out in slices while it runs: `slice` after the batch's first change,
    /// the files written and closed so far are due; one still being written stays pending until
    /// its close, then goes with the next slice.
    @Test func aSliceTakesClosedFilesAndLeavesOpenOnes() {
        var d = Debouncer(quiet: .seconds(1), maxDelay: .seconds(60), slice: .milliseconds(250))
        d.add("p1.jpg", at: t0, change: .created, writing: true)
        d.add("p1.jpg", at: t0 + .milliseconds(5), writing: true)
        d.add("p1.jpg", at: t0 + .milliseconds(10), writing: false)
        d.add("p2.jpg", at: t0 + .milliseconds(200), change: .created, writing: true)
        #expect(d.takeIfDue(at: t0 + .milliseconds(240)) == nil)
        #expect(d.takeIfDue(at: t0 + .milliseconds(250)) == WatchBatch(paths: ["p1.jpg"]))
        #expect(d.pendingCount == 1, "p2.jpg is still being written")
        // Only an open file pending: no slice is due, whatever the time; its close makes it due.
        #expect(d.takeIfDue(at: t0 + .milliseconds(600)) == nil)
        d.add("p2.jpg", at: t0 + .milliseconds(700), writing: false)
        #expect(d.takeIfDue(at: t0 + .milliseconds(700)) == WatchBatch(paths: ["p2.jpg"]), "its slice began at 250 ms")
        #expect(d.isEmpty)
    }

    /// A file that never closes (a log kept open) still goes out with quiet, as without slices; a
    /// batch with a removal takes no slice.
    @Test func slicesNeverCutAnOpenFileOrARemoval() {
        var d = Debouncer(quiet: .milliseconds(100), maxDelay: .seconds(60), slice: .milliseconds(250))
        d.add("log", at: t0, change: .created, writing: true)
        #expect(d.takeIfDue(at: t0 + .milliseconds(100)) == WatchBatch(paths: ["log"]), "quiet takes everything")
        var r = Debouncer(quiet: .seconds(1), maxDelay: .seconds(60), slice: .milliseconds(250))
        r.add("a", at: t0, change: .created, writing: false)
        r.add("tracked", at: t0 + .milliseconds(10), change: .removed)
        #expect(r.takeIfDue(at: t0 + .milliseconds(500)) == nil, "a removal waits for quiet")
        #expect(r.takeIfDue(at: t0 + .milliseconds(1010))?.paths == ["a", "tracked"])
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
