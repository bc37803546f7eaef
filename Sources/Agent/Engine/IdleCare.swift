/// The engine's timed work, as deadlines instead of a 1 s tick: what is due at an instant and
/// when the next thing will be. Pure: the engine passes what it knows and the clock's reading, and
/// tests pass a fake clock.
struct IdleCare: Sendable, Equatable {
    typealias Instant = ContinuousClock.Instant

    enum Job: Sendable, Equatable, CaseIterable {
        /// The data directory is gone: look again every second (it may come back).
        case checkRoot
        /// A commit failed (disk full...): try the batch again a second later.
        case retryCommit
        /// The in-memory index is saved once the store is quiet, and at least every 30 s.
        case saveIndex
        /// One slice of loose objects into a pack, once the store is quiet (or every 500 commits).
        case pack
        /// Paths that could not be written are tried again every 5 s.
        case retryUnapplied
        /// Deletions waiting for their spell to end are judged again (`DeletionSpell`).
        case deletionSpell
    }

    static let rootEvery: Duration = .seconds(1)
    static let commitRetry: Duration = .seconds(1)
    static let indexIdle: Duration = .seconds(1)
    static let indexEvery: Duration = .seconds(30)
    static let packIdle: Duration = .seconds(2)
    static let packEveryCommits = 500
    static let unappliedEvery: Duration = .seconds(5)

    var rootMissing = false
    var lastRootCheck: Instant
    var commitFailedAt: Instant?
    var indexDirty = false
    var lastIndexSave: Instant
    /// The last commit or merge.
    var lastActivity: Instant
    var packPending = true
    var packing = false
    var commitsSincePack = 0
    var unappliedWaiting = false
    var lastUnappliedTry: Instant
    /// When the deletions that wait for their spell to end are judged again.
    var spellEnds: Instant?

    init(now: Instant) {
        lastRootCheck = now
        lastIndexSave = now
        lastActivity = now
        lastUnappliedTry = now
    }

    /// When each job becomes due, for the jobs that have anything to do.
    func deadlines() -> [(job: Job, at: Instant)] {
        var out: [(Job, Instant)] = []
        if rootMissing { out.append((.checkRoot, lastRootCheck + Self.rootEvery)) }
        if let failed = commitFailedAt { out.append((.retryCommit, failed + Self.commitRetry)) }
        if indexDirty { out.append((.saveIndex, min(lastActivity + Self.indexIdle, lastIndexSave + Self.indexEvery))) }
        if packPending, !packing {
            out.append((.pack, commitsSincePack >= Self.packEveryCommits ? lastActivity : lastActivity + Self.packIdle))
        }
        if unappliedWaiting { out.append((.retryUnapplied, lastUnappliedTry + Self.unappliedEvery)) }
        if let spellEnds { out.append((.deletionSpell, spellEnds)) }
        // While the directory is gone nothing else is done: only the look for it is.
        return rootMissing ? out.filter { $0.0 == .checkRoot } : out
    }

    /// The jobs due at `now`, in the order they run (a retried commit before the index is saved).
    func due(at now: Instant) -> [Job] {
        let ready = Set(deadlines().filter { $0.at <= now }.map(\.job))
        return Job.allCases.filter(ready.contains)
    }

    /// When the engine must next be asked; nil when nothing waits for time, only for an event.
    func next() -> Instant? { deadlines().map(\.at).min() }
}
