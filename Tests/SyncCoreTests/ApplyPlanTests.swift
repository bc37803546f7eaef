import FileSystem
import Git
@testable import ObjectStorage
@testable import SyncCore
import SystemPackage
import Testing

/// What applying a merge decides apart from the writing (`ApplyPlan`), as a table: the order of the
/// work, and what each path's outcome means for the index, the unapplied list and the report. The
/// e2e tests (obstacles, ENOSPC, receive-only, reconcile table) check that the disk agrees.
@Suite struct ApplyPlanTests {
    static func file(_ name: String) -> ConflictSide { ConflictPolicyTests.file(name) }
    static let old = file("base"), new = file("p")
    static let fifo = Obstacle(path: "a.txt", what: "a FIFO")

    @Test func removalsDeepestFirstThenMarkersThenAdditionsInByteOrder() {
        let changes = [
            TreeChange(path: "z.txt", old: nil, new: Self.new),
            TreeChange(path: "d", old: Self.old, new: nil),
            TreeChange(path: "d/e/f.txt", old: Self.old, new: nil),
            TreeChange(path: "a.txt", old: Self.old, new: Self.new),
            TreeChange(path: FilePath("empty/\(DirectoryMarker.name)"), old: nil, new: Self.new),
            TreeChange(path: "d/g.txt", old: Self.old, new: nil),
        ]
        let order = ApplyPlan.order(changes)
        #expect(order.removals.map(\.path) == ["d/g.txt", "d/e/f.txt", "d"])
        #expect(order.markers.map(\.path) == [FilePath("empty/\(DirectoryMarker.name)")])
        #expect(order.additions.map { changes[$0].path } == ["a.txt", "z.txt"])
    }

    struct Placed: Sendable, CustomStringConvertible {
        var description: String
        var outcome: DataDirectory.Placement
        var old: ConflictSide?
        var step: ApplyPlan.Step
    }

    static let placed: [Placed] = [
        Placed(description: "already there: staged, off the list", outcome: .alreadyThere, old: old,
               step: .init(index: .stage(.link), unapplied: .clear, reported: .nothing)),
        Placed(description: "written: staged with its stamp, reported", outcome: .written(displaced: nil, landing: .unconfirmed), old: old,
               step: .init(index: .stage(.unconfirmed), unapplied: .clear, reported: .written)),
        Placed(description: "written over a receive-only edit: the edit is kept",
               outcome: .written(displaced: "tmp/x", landing: .link), old: old,
               step: .init(index: .stage(.link), unapplied: .clear, reported: .written, keepDisplaced: "tmp/x")),
        Placed(description: "changed here since the baseline: left, a local change", outcome: .localChange, old: old,
               step: .init(index: .add, unapplied: .unchanged, reported: .localChange)),
        Placed(description: "a FIFO in the way: never removed, waits", outcome: .obstacle(fifo), old: old,
               step: .init(index: .add, unapplied: .keepOrAdd(Store.absent), reported: .failure(.fileExists, fifo))),
        Placed(description: "disk full: waits with the old version as its baseline", outcome: .failed(.noSpace), old: old,
               step: .init(index: .add, unapplied: .keepOrAdd(old), reported: .failure(.noSpace, nil))),
        Placed(description: "a new path that could not be written: waits, nothing was there", outcome: .failed(.permissionDenied), old: nil,
               step: .init(index: .add, unapplied: .keepOrAdd(Store.absent), reported: .failure(.permissionDenied, nil))),
    ]

    @Test(arguments: placed.indices) func afterPlacing(_ i: Int) {
        let row = Self.placed[i]
        #expect(ApplyPlan.afterPlacing(row.outcome, old: row.old) == row.step, "\(row)")
    }

    struct Removal: Sendable, CustomStringConvertible {
        var description: String
        var obstacle = false, replacing = false, holdsOldOrNothing = true
        var check: ApplyPlan.RemovalCheck
        var result: ApplyPlan.Removed?
        var step: ApplyPlan.Step
    }

    static let removals: [Removal] = [
        Removal(description: "removed: off the list, parents pruned", check: .remove, result: .removed,
                step: .init(index: .remove, unapplied: .clear, reported: .removed, pruneParents: true)),
        Removal(description: "an obstacle there: the path only leaves the store", obstacle: true, check: .forgetObstacle,
                step: .init(index: .remove, unapplied: .clear, reported: .nothing)),
        Removal(description: "edited here: kept, a local change", holdsOldOrNothing: false, check: .keepLocal,
                step: .init(index: .remove, unapplied: .unchanged, reported: .localChange)),
        Removal(description: "a receive-only edit goes (it was kept first)", replacing: true, holdsOldOrNothing: false, check: .remove,
                result: .removed, step: .init(index: .remove, unapplied: .clear, reported: .removed, pruneParents: true)),
        Removal(description: "written right before the removal: kept", check: .remove, result: .changedMeanwhile,
                step: .init(index: .remove, unapplied: .unchanged, reported: .localChange)),
        Removal(description: "cannot remove: waits with the old version", check: .remove, result: .failed(.permissionDenied),
                step: .init(index: .remove, unapplied: .keepOrAdd(old), reported: .failure(.permissionDenied, nil))),
    ]

    @Test(arguments: removals.indices) func removal(_ i: Int) {
        let row = Self.removals[i]
        let check = ApplyPlan.removal(obstacle: row.obstacle, replacing: row.replacing, diskHoldsOldOrNothing: row.holdsOldOrNothing)
        #expect(check == row.check, "\(row)")
        #expect(ApplyPlan.afterRemoval(check, result: row.result, old: Self.old) == row.step, "\(row)")
    }

    @Test func theDiskIsNotLookedAtWhenItCannotMatter() {
        var asked = 0
        func look() -> Bool { asked += 1; return true }
        _ = ApplyPlan.removal(obstacle: true, replacing: false, diskHoldsOldOrNothing: look())
        _ = ApplyPlan.removal(obstacle: false, replacing: true, diskHoldsOldOrNothing: look())
        #expect(asked == 0)
        _ = ApplyPlan.removal(obstacle: false, replacing: false, diskHoldsOldOrNothing: look())
        #expect(asked == 1)
    }
}
