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

    /// `cp` over a file truncates it (`IN_MODIFY`) before its first write; on a busy machine the
    /// quiet may pass in between. The truncated file is not taken at quiet: the rest of the batch
    /// goes, it waits for its close, so no empty version is committed.
    @Test func aFileWrittenAndStillOpenWaitsPastQuietForItsClose() {
        var d = Debouncer(quiet: .milliseconds(100), maxDelay: .seconds(2), slice: .milliseconds(250),
                          settle: .milliseconds(5))
        d.add("b.txt", at: t0, writing: true, wrote: true)  // the truncation
        d.add("other", at: t0 + .milliseconds(10), writing: false)
        d.add("gone", at: t0 + .milliseconds(20), change: .removed)
        #expect(d.takeIfDue(at: t0 + .milliseconds(119)) == nil)
        #expect(d.takeIfDue(at: t0 + .milliseconds(120)) == WatchBatch(paths: ["other", "gone"]),
                "quiet takes the closed files and the removal, not the open one")
        #expect(d.deadline == t0 + .seconds(2), "alone, the open file waits for its close or max delay")
        #expect(d.takeIfDue(at: t0 + .milliseconds(900)) == nil)
        d.add("b.txt", at: t0 + .milliseconds(1000), writing: true, wrote: true)  // the write
        d.add("b.txt", at: t0 + .milliseconds(1001), writing: false)  // the close
        // Closed, it goes at once as a slice (the rest's slice began when quiet took the others).
        #expect(d.takeIfDue(at: t0 + .milliseconds(1001)) == WatchBatch(paths: ["b.txt"]))
        #expect(d.isEmpty)
    }

    /// A file kept open (a log, a database) still goes out `maxDelay` after its first write; a file
    /// only made (a symbolic link: no close ever comes) or found by a walk is not held past quiet.
    @Test func aFileKeptOpenGoesAtMaxDelayAndOnlyMadeOnesAtQuiet() {
        var d = Debouncer(quiet: .milliseconds(100), maxDelay: .seconds(2))
        d.add("app.db", at: t0, writing: true, wrote: true)
        d.add("app.db", at: t0 + .milliseconds(500), writing: true, wrote: true)
        #expect(d.takeIfDue(at: t0 + .milliseconds(1999)) == nil)
        #expect(d.takeIfDue(at: t0 + .seconds(2)) == WatchBatch(paths: ["app.db"]))
        d.add("link", at: t0 + .seconds(3), change: .created, writing: true)
        #expect(d.takeIfDue(at: t0 + .milliseconds(3100)) == WatchBatch(paths: ["link"]))
        // A rescan takes everything at quiet, open files too (the walk reads what is there).
        d.add("app.db", at: t0 + .seconds(4), writing: true, wrote: true)
        d.requestRescan(at: t0 + .seconds(4))
        #expect(d.takeIfDue(at: t0 + .milliseconds(4100)) == WatchBatch(paths: ["app.db"], rescan: true))
    }

    /// Each open file waits `maxDelay` from its own first write: a log kept open beside a file
    /// that `cp` just truncated does not take the truncated file out with it.
    @Test func eachOpenFileWaitsFromItsOwnFirstWrite() {
        var d = Debouncer(quiet: .milliseconds(100), maxDelay: .seconds(2))
        d.add("app.log", at: t0, writing: true, wrote: true)
        d.add("photo.jpg", at: t0 + .milliseconds(1950), writing: true, wrote: true)  // truncated
        #expect(d.deadline == t0 + .seconds(2))
        #expect(d.takeIfDue(at: t0 + .seconds(2)) == WatchBatch(paths: ["app.log"]), "the log's wait is over, not the photo's")
        #expect(d.deadline == t0 + .milliseconds(3950))
        d.add("photo.jpg", at: t0 + .milliseconds(2500), writing: true, wrote: true)
        d.add("photo.jpg", at: t0 + .milliseconds(2600), writing: false)
        #expect(d.takeIfDue(at: t0 + .milliseconds(2700)) == WatchBatch(paths: ["photo.jpg"]))
        // Written again after its close: a new wait from the new first write.
        d.add("app.log", at: t0 + .seconds(5), writing: true, wrote: true)
        #expect(d.deadline == t0 + .seconds(7))
    }

    /// A merge's drain takes everything but the open files; they keep their own waits.
    @Test func aDrainKeepingOpenFilesLeavesThemPending() {
        var d = Debouncer(quiet: .milliseconds(100), maxDelay: .seconds(2))
        d.add("b.txt", at: t0, writing: true, wrote: true)
        d.add("a.txt", at: t0 + .milliseconds(10), writing: false)
        d.add("gone", at: t0 + .milliseconds(20), change: .removed)
        #expect(d.flush(keepingOpen: true) == WatchBatch(paths: ["a.txt", "gone"]))
        #expect(d.flush(keepingOpen: true) == nil, "only the open file is left")
        #expect(d.deadline == t0 + .seconds(2))
        #expect(d.flush() == WatchBatch(paths: ["b.txt"]), "a plain flush (stop) takes it too")
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

    // MARK: a save after a quiet spell (`settle`)

    func settling() -> Debouncer {
        Debouncer(quiet: .milliseconds(200), maxDelay: .seconds(2), slice: .milliseconds(250), settle: .milliseconds(5))
    }

    /// One file written and closed after a quiet spell goes 5 ms after its close, not 200.
    @Test func aWholeSaveAfterQuietIsDueAfterTheSettle() {
        var d = settling()
        d.add("notes.txt", at: t0, change: .created, writing: true)
        d.add("notes.txt", at: t0 + .milliseconds(1), writing: true)
        #expect(d.deadline == t0 + .milliseconds(201))  // still open: waits for quiet
        d.add("notes.txt", at: t0 + .milliseconds(2), writing: false)
        #expect(d.takeIfDue(at: t0 + .milliseconds(6)) == nil)
        // a second file of the same save, 3 ms later, goes with it
        d.add("index.json", at: t0 + .milliseconds(5), change: .created, writing: true)
        #expect(d.takeIfDue(at: t0 + .milliseconds(8)) == nil)  // open: back on quiet
        d.add("index.json", at: t0 + .milliseconds(6), writing: false)
        #expect(d.takeIfDue(at: t0 + .milliseconds(10)) == nil)
        #expect(d.takeIfDue(at: t0 + .milliseconds(11)) == WatchBatch(paths: ["notes.txt", "index.json"]))
        // a temporary renamed over its target after a quiet spell: also a whole save
        let later = t0 + .seconds(1)
        d.add("doc.tmp.1", at: later, change: .created, writing: true)
        d.add("doc.tmp.1", at: later, writing: false)
        d.add("doc.tmp.1", at: later, change: .removed)
        d.add("doc", at: later, writing: false)
        #expect(d.takeIfDue(at: later + .milliseconds(5)) == WatchBatch(paths: ["doc.tmp.1", "doc"]))
    }

    /// A removal of something tracked, a rename of a tracked file or a rescan waits for quiet: the
    /// deletion guard sees a deletion whole.
    @Test func aSaveWithARemovalOrARescanWaitsForQuiet() {
        var d = settling()
        d.add("a.txt", at: t0, writing: false)
        d.add("old.txt", at: t0, change: .removed)
        #expect(d.takeIfDue(at: t0 + .milliseconds(199)) == nil)
        #expect(d.takeIfDue(at: t0 + .milliseconds(200)) == WatchBatch(paths: ["a.txt", "old.txt"]))
        let later = t0 + .seconds(1)
        d.add("b.txt", at: later, writing: false)
        d.requestRescan(at: later)
        #expect(d.takeIfDue(at: later + .milliseconds(199)) == nil)
        #expect(d.takeIfDue(at: later + .milliseconds(200)) == WatchBatch(paths: ["b.txt"], rescan: true))
    }

    /// A writer that does not pause for `quiet` gets no settle: a file every 10 ms makes the commits
    /// the debounce and its slices allow, not one per file.
    @Test func changesWithinQuietOfTheLastBatchWaitForQuiet() {
        var d = settling()
        d.add("f0", at: t0, writing: false)
        #expect(d.takeIfDue(at: t0 + .milliseconds(5)) == WatchBatch(paths: ["f0"]))
        var now = t0 + .milliseconds(10)
        var taken: [WatchBatch] = []
        for i in 1...50 {
            d.add(FilePath("f\(i)"), at: now, change: .created, writing: true)
            d.add(FilePath("f\(i)"), at: now, writing: false)
            now += .milliseconds(10)
            if let b = d.takeIfDue(at: now) { taken.append(b) }
        }
        // every 250 ms a slice of the closed files, never a batch per file
        #expect(taken.count == 2)
        #expect(taken.allSatisfy { $0.paths.count >= 24 })
        // after a quiet spell the next save settles again
        _ = d.flush()
        let later = now + .milliseconds(200)
        d.add("g", at: later, writing: false)
        #expect(d.deadline == later + .milliseconds(5))
    }

    /// Whole files that keep coming after a quiet spell (a folder moved in file by file) still go
    /// as a slice 250 ms after the first, not only at `maxDelay`.
    @Test func wholeFilesThatKeepComingGoAsASlice() {
        var d = settling()
        var now = t0
        var taken: WatchBatch?
        for i in 0..<100 {
            d.add(FilePath("m\(i)"), at: now, writing: false)
            #expect(d.deadline == min(now + .milliseconds(5), t0 + .milliseconds(250)))
            now += .milliseconds(3)
            if let b = d.takeIfDue(at: now) {
                taken = b
                break
            }
        }
        #expect(now == t0 + .milliseconds(252))
        #expect(taken?.paths.count == 84)
    }

    /// What a slice leaves pending (files still being written) waits for quiet once they close.
    @Test func theRestOfASliceWaitsForQuiet() {
        var d = settling()
        d.add("done", at: t0, writing: false)
        d.add("big", at: t0, change: .created, writing: true)
        d.add("big", at: t0 + .milliseconds(240), writing: true)
        #expect(d.takeIfDue(at: t0 + .milliseconds(250)) == WatchBatch(paths: ["done"]))
        d.add("big", at: t0 + .milliseconds(260), writing: false)
        #expect(d.deadline == t0 + .milliseconds(460))
    }

    /// Without `settle`, a whole save waits for quiet as before; `settle` never exceeds `quiet`.
    @Test func noSettleMeansQuietAndSettleIsCappedByQuiet() {
        var d = Debouncer(quiet: .milliseconds(200), maxDelay: .seconds(2))
        d.add("a", at: t0, writing: false)
        #expect(d.deadline == t0 + .milliseconds(200))
        let short = Debouncer(quiet: .milliseconds(2), maxDelay: .seconds(1), settle: .milliseconds(5))
        #expect(short.settle == .milliseconds(2))
    }
}
