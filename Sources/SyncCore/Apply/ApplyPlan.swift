import FileSystem
internal import Git
internal import ObjectStorage
import SystemPackage

/// What applying a merge's changes to the data directory decides, apart from the writing. The
/// writing itself must check each path right before it touches it (a person may save a file at
/// any moment), so the check and the write stay together in `DataDirectory`; everything around
/// them is decided here, from values only: the order of the work, and what each path's outcome
/// means for the index, the list of paths still to write (`unapplied`) and the report. `Store`'s
/// apply reads, asks, and carries out (`Store+Apply.swift`); `ApplyPlanTests` is the table.
enum ApplyPlan {
    /// The order: removals first, deepest first (so a directory can become a file and a file a
    /// directory), then the directory markers, then the additions in byte order (positions in
    /// `changes`).
    struct Order {
        var removals: [TreeChange]
        var markers: [TreeChange]
        var additions: [Int]
    }

    static func order(_ changes: [TreeChange]) -> Order {
        let markers = changes.filter { DirectoryMarker.isMarker($0.path) }
        let removals = Array(changes.filter { $0.new == nil && !DirectoryMarker.isMarker($0.path) }.sortedInBytes { $0.path }.reversed())
        var additions = changes.indices.filter { changes[$0].new != nil && !DirectoryMarker.isMarker(changes[$0].path) }
        // A diff's list is in byte order already: sorted only when it is not.
        if !zip(additions, additions.dropFirst()).allSatisfy({ changes[$0].path.precedesInBytes(changes[$1].path) }) {
            additions = additions.sortedInBytes { changes[$0].path }
        }
        return Order(removals: removals, markers: markers, additions: additions)
    }

    /// What the index gets for a path.
    enum IndexChange: Equatable {
        /// The new version, with the stat data of the file just written (`landing`).
        case stage(DataDirectory.Landing)
        /// The new version, without stat data: the file on disk is not it (yet).
        case add
        case remove
    }

    /// What the list of paths still to write gets.
    enum Unapplied: Equatable {
        /// The path is done: off the list.
        case clear
        /// On the list, with the version the disk was last known to hold (`Store.absent`: none),
        /// unless it is there already (the first failure's baseline stays).
        case keepOrAdd(ConflictSide)
        /// As it was.
        case unchanged
    }

    /// What the report gets.
    enum Reported: Equatable {
        case nothing
        case written
        case removed
        /// Changed on disk after the plan's baseline: left as it is, committed as a local change.
        case localChange
        case failure(Errno, Obstacle?)
    }

    struct Step: Equatable {
        var index: IndexChange
        var unapplied: Unapplied
        var reported: Reported
        /// A receive-only device's local file the new version displaced: its bytes are kept.
        var keepDisplaced: FilePath? = nil
        /// Empty parent directories are pruned after a removal.
        var pruneParents = false
    }

    /// After an addition or modification was placed (`DataDirectory.placeChecked`); `old` is the
    /// version the change started from.
    static func afterPlacing(_ outcome: DataDirectory.Placement, old: ConflictSide?) -> Step {
        switch outcome {
        case .alreadyThere:
            return Step(index: .stage(.link), unapplied: .clear, reported: .nothing)
        case .obstacle(let obstacle):
            // Never removed or replaced: the peer's version waits (the store has it) and lands
            // when the obstacle goes away (`retryUnapplied`).
            return Step(index: .add, unapplied: .keepOrAdd(Store.absent), reported: .failure(.fileExists, obstacle))
        case .localChange:
            return Step(index: .add, unapplied: .unchanged, reported: .localChange)
        case .failed(let errno):
            return Step(index: .add, unapplied: .keepOrAdd(old ?? Store.absent), reported: .failure(errno, nil))
        case .written(let displaced, let landing):
            return Step(index: .stage(landing), unapplied: .clear, reported: .written, keepDisplaced: displaced)
        }
    }

    /// Whether a removal is attempted: an obstacle standing there was never ours (the path only
    /// leaves the store); a file that holds neither the old version nor nothing was changed here
    /// since the baseline (unless a receive-only device replaces it) and stays.
    enum RemovalCheck: Equatable {
        case forgetObstacle
        case keepLocal
        case remove
    }

    /// `diskHoldsOldOrNothing` is asked only when it matters (a stat, and a hash at worst).
    static func removal(obstacle: Bool, replacing: Bool, diskHoldsOldOrNothing: @autoclosure () -> Bool) -> RemovalCheck {
        if obstacle { return .forgetObstacle }
        if !replacing && !diskHoldsOldOrNothing() { return .keepLocal }
        return .remove
    }

    /// What removing a path came to.
    enum Removed: Equatable {
        case removed
        /// Written after the check, right before the removal: kept.
        case changedMeanwhile
        case failed(Errno)
    }

    static func afterRemoval(_ check: RemovalCheck, result: Removed?, old: ConflictSide?) -> Step {
        switch (check, result) {
        case (.forgetObstacle, _):
            return Step(index: .remove, unapplied: .clear, reported: .nothing)
        case (.keepLocal, _), (.remove, .changedMeanwhile?):
            return Step(index: .remove, unapplied: .unchanged, reported: .localChange)
        case (.remove, .removed?):
            return Step(index: .remove, unapplied: .clear, reported: .removed, pruneParents: true)
        case (.remove, .failed(let errno)?):
            return Step(index: .remove, unapplied: .keepOrAdd(old ?? Store.absent), reported: .failure(errno, nil))
        case (.remove, nil):
            return Step(index: .remove, unapplied: .unchanged, reported: .nothing)
        }
    }
}
