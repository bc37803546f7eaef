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
/// the first change of the batch, whichever comes first. A pure state machine: time is passed in.
public struct Debouncer: Sendable {
    public typealias Instant = ContinuousClock.Instant

    public let quiet: Duration
    public let maxDelay: Duration
    private var batch = WatchBatch()
    private var firstChange: Instant?
    private var lastChange: Instant?

    public init(quiet: Duration, maxDelay: Duration) {
        self.quiet = quiet
        self.maxDelay = max(maxDelay, quiet)
    }

    public var pendingCount: Int { batch.paths.count }
    public var isEmpty: Bool { batch.isEmpty }

    public mutating func add(_ path: FilePath, at now: Instant) {
        batch.paths.insert(path)
        touch(now)
    }

    public mutating func requestRescan(at now: Instant) {
        batch.rescan = true
        touch(now)
    }

    private mutating func touch(_ now: Instant) {
        if firstChange == nil { firstChange = now }
        lastChange = now
    }

    /// When the pending batch becomes due; nil when nothing is pending.
    public var deadline: Instant? {
        guard let firstChange, let lastChange else { return nil }
        return min(lastChange + quiet, firstChange + maxDelay)
    }

    /// The pending batch if it is due at `now`, emptying the debouncer.
    public mutating func takeIfDue(at now: Instant) -> WatchBatch? {
        guard let deadline, now >= deadline else { return nil }
        return flush()
    }

    /// The pending batch whether due or not (shutdown, "sync now"); nil when empty.
    public mutating func flush() -> WatchBatch? {
        guard !batch.isEmpty else { return nil }
        defer {
            batch = WatchBatch()
            firstChange = nil
            lastChange = nil
        }
        return batch
    }
}
