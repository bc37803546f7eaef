import SystemPackage

/// What the watcher hands on: the paths that changed since the last batch (relative to the watched
/// root), and whether everything must be rescanned because events may have been lost.
public struct WatchBatch: Sendable, Equatable {
    public var paths: Set<FilePath>
    public var rescan: Bool

    public init(paths: Set<FilePath> = [], rescan: Bool = false) {
        self.paths = paths
        self.rescan = rescan
    }

    public var isEmpty: Bool { paths.isEmpty && !rescan }

    public mutating func merge(_ other: WatchBatch) {
        paths.formUnion(other.paths)
        rescan = rescan || other.rescan
    }
}

/// Collects changes until the tree has been quiet for `quiet`, or until `maxDelay` has passed since
/// the first change of the batch, whichever comes first; a batch of only new and changed files is
/// also due once it holds `maxPaths` paths, so a long copy reaches the peers while it runs (one
/// slice committed and sent while the next is written). Such a batch is also due `slice` after
/// its first change with the files written and closed so far (`IN_CLOSE_WRITE`, or moved in
/// whole): a folder of photos, a few hundred files of megabytes each, is committed and sent while
/// the rest is copied; a file still open for writing waits for its close (or for quiet), so no
/// half-written file is taken for a slice. A batch in which something that may be tracked went
/// away waits for quiet as before: the deletion guard must see a mass deletion whole, never in
/// slices that each look small.
/// A save after a quiet spell is due sooner (`settle`): when the tree had been quiet for `quiet`
/// before the batch's first event and every file of the batch is whole (closed after writing, or
/// moved in), with nothing tracked gone, the batch is due `settle` after its last event instead
/// of `quiet`: one save reaches the peers in milliseconds, not a debounce later, and the files of
/// the same save written one after the other still go together. Any file still open for writing,
/// a removal or a rescan puts the batch back on `quiet`; a batch that starts within `quiet` of the
/// one before waits for `quiet` too, so a writer that does not pause makes at most one commit
/// more than before (its first files). A file written through two opens (created, closed, then
/// appended to) may so be committed as it was at its first close, and an app's temporary not
/// among the ignored names may be committed if the app pauses over 5 ms between closing it and
/// renaming it: the next commit has the final state.
/// A file written to (`IN_MODIFY`, a truncation too) and not closed since is not taken when quiet
/// passes: `cp` over a file truncates it, and on a busy machine the quiet may pass before its
/// first write, which would commit (and send) an empty version. Such a file waits for its close,
/// or for `maxDelay` after its own first write since it was last closed (a log or a database kept
/// open still goes out that often; one kept open beside it does not cut its wait short); the
/// other files of the batch go at quiet without it. A file only
/// made (`IN_CREATE`: a symbolic link, a hard link, a new empty file) or found by a walk is not
/// held past quiet.
/// A pure state machine: time is passed in.
public struct Debouncer: Sendable {
    public typealias Instant = ContinuousClock.Instant

    /// What an event says happened at a path.
    public enum Change: Sendable {
        /// Made (not moved in): a removal of it within the same batch deletes nothing tracked.
        case created
        case changed
        /// Deleted or moved out.
        case removed
    }

    /// The size at which a batch without removals is due (the commit's pre-hash chunk).
    public static let defaultMaxPaths = 4096
    /// How long a batch of new and changed files gathers before its closed files are due.
    public static let defaultSlice: Duration = .milliseconds(250)
    /// How long a save after a quiet spell gathers (several files written one after the other).
    public static let defaultSettle: Duration = .milliseconds(5)

    public let quiet: Duration
    public let maxDelay: Duration
    public let maxPaths: Int
    /// nil: no slices by time.
    public let slice: Duration?
    /// nil: every batch waits for `quiet`.
    public let settle: Duration?
    private var batch = WatchBatch()
    /// Paths of the batch written (or made) and not closed since: a slice leaves them pending.
    private var writing: Set<FilePath> = []
    /// Paths of `writing` written to (not only made), each with its first write since its last
    /// close: quiet leaves them pending, each until `maxDelay` after that write.
    private var open: [FilePath: Instant] = [:]
    private var firstChange: Instant?
    private var lastChange: Instant?
    /// Paths made within this batch (kept only while `removes` is false).
    private var made: Set<FilePath> = []
    /// Something this batch did not make went away: the batch waits for quiet or `maxDelay`.
    private var removes = false
    /// The last event of any batch (kept across batches).
    private var lastEvent: Instant?
    /// The batch's first event came after `quiet` without any.
    private var afterQuiet = false

    public init(quiet: Duration, maxDelay: Duration, maxPaths: Int = Debouncer.defaultMaxPaths, slice: Duration? = nil,
                settle: Duration? = nil) {
        self.quiet = quiet
        self.maxDelay = max(maxDelay, quiet)
        self.maxPaths = max(1, maxPaths)
        self.slice = slice
        self.settle = settle.map { min($0, quiet) }
    }

    public var pendingCount: Int { batch.paths.count }
    public var isEmpty: Bool { batch.isEmpty }

    /// - Parameters:
    ///   - writing: true when the event says the file is being written (`IN_CREATE`,
    ///     `IN_MODIFY`), false when it is whole (`IN_CLOSE_WRITE`, moved in), nil when it says
    ///     neither (`IN_ATTRIB`).
    ///   - wrote: the event says bytes were written or cut (`IN_MODIFY`): the file is held past
    ///     quiet until its close (or `maxDelay`).
    public mutating func add(_ path: FilePath, at now: Instant, change: Change = .changed, writing: Bool? = nil,
                             wrote: Bool = false) {
        batch.paths.insert(path)
        if change == .removed || writing == false {
            self.writing.remove(path)
            open[path] = nil
        } else if writing == true || wrote {
            self.writing.insert(path)
            if wrote, open[path] == nil { open[path] = now }
        }
        switch change {
        case .created:
            if !removes { made.insert(path) }
        case .removed:
            // An editor's or rsync's temporary renamed over its target was made in this batch:
            // nothing tracked went away with it.
            if !removes, !made.contains(path) {
                removes = true
                made = []
            }
        case .changed:
            break
        }
        touch(now)
    }

    public mutating func requestRescan(at now: Instant) {
        batch.rescan = true
        touch(now)
    }

    private mutating func touch(_ now: Instant) {
        if firstChange == nil {
            firstChange = now
            afterQuiet = lastEvent.map { $0 + quiet <= now } ?? true
        }
        lastChange = now
        lastEvent = max(lastEvent ?? now, now)
    }

    /// Only files written and still open are pending, and the batch may wait for them.
    private var onlyOpenFiles: Bool { !batch.rescan && !open.isEmpty && batch.paths.count == open.count }

    /// The open files that may still wait at `now` (their first write less than `maxDelay` ago).
    private func held(at now: Instant) -> Set<FilePath> {
        batch.rescan ? [] : Set(open.lazy.filter { now < $0.value + maxDelay }.map(\.key))
    }

    /// When the pending batch (or a slice of it) becomes due; nil when nothing is pending.
    public var deadline: Instant? {
        guard let firstChange, let lastChange else { return nil }
        if onlyOpenFiles { return open.values.min()! + maxDelay }
        if !removes, !batch.rescan, batch.paths.count >= maxPaths { return lastChange }
        let due = min(lastChange + quiet, firstChange + maxDelay)
        if let settle, afterQuiet, !removes, !batch.rescan, writing.isEmpty {
            // (whole files that keep coming still go as a slice)
            return min(due, lastChange + settle, slice.map { firstChange + $0 } ?? due)
        }
        if let slice, !removes, !batch.rescan, batch.paths.count > writing.count { return min(due, firstChange + slice) }
        return due
    }

    /// The pending batch if it is due at `now`, emptying the debouncer; or, due as a slice only,
    /// its closed files, the files still being written left pending.
    public mutating func takeIfDue(at now: Instant) -> WatchBatch? {
        guard let deadline, now >= deadline, let firstChange, let lastChange else { return nil }
        // Before quiet (and the batch's `maxDelay`): a slice leaves every file being written;
        // after it, those written to and not closed, each until `maxDelay` after its first write
        // (never in a rescan).
        let held = held(at: now)
        let left = now < lastChange + quiet && now < firstChange + maxDelay && batch.paths.count < maxPaths
            ? writing.subtracting(open.keys.filter { !held.contains($0) }) : held
        if !left.isEmpty {
            if left.count == batch.paths.count { return nil }  // (only open files: the deadline is the first one's wait)
            return takeAll(but: left, restartingAt: now)
        }
        return flush()
    }

    /// Hands out every pending path but `left`, which stays pending as a batch begun at `start`.
    private mutating func takeAll(but left: Set<FilePath>, restartingAt start: Instant?) -> WatchBatch {
        let taken = batch.paths.subtracting(left)
        batch.paths = left
        writing.formIntersection(left)
        open = open.filter { left.contains($0.key) }
        made.formIntersection(left)  // the others are committed: their removal is a deletion
        removes = false  // any removal went with the others
        firstChange = start
        afterQuiet = false  // a writer that does not stop: the rest waits for quiet
        return WatchBatch(paths: taken)
    }

    /// The pending batch whether due or not, except files written to and still open (a merge's
    /// drain: a truncated file is not committed because a peer's change came); nil when only those
    /// (or nothing) are pending.
    public mutating func flush(keepingOpen: Bool) -> WatchBatch? {
        guard keepingOpen, !batch.rescan, !open.isEmpty else { return flush() }
        if batch.paths.count == open.count { return nil }
        return takeAll(but: Set(open.keys), restartingAt: open.values.min())
    }

    /// The pending batch whether due or not (shutdown, "sync now"); nil when empty.
    public mutating func flush() -> WatchBatch? {
        guard !batch.isEmpty else { return nil }
        defer {
            batch = WatchBatch()
            firstChange = nil
            lastChange = nil
            made = []
            writing = []
            open = [:]
            removes = false
            afterQuiet = false
        }
        return batch
    }
}
