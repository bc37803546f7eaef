import FileSystem
@testable import SyncCore
import Testing

/// What a commit does with one path, as a table: what was looked at in, the decision out
/// (`CommitDecision`, pure). The store's commit tests and the e2e suite check that doing it holds.
@Suite struct CommitDecisionTests {
    typealias D = CommitDecision
    struct Row: Sendable, CustomStringConvertible {
        var description: String
        var look: D.Look
        var action: D.Action
        var releasesHold = true
        var overridesUnapplied = false
    }

    static let rows: [Row] = [
        Row(description: "a new or edited file is staged", look: .init(kind: .regular), action: .stage),
        Row(description: "a link is staged like a file", look: .init(kind: .symlink, tracked: true), action: .stage),
        Row(description: "a tracked file gone is removed with everything under it", look: .init(kind: nil, tracked: true), action: .remove),
        Row(description: "a path never tracked and not there: removing is a no-op, still asked", look: .init(kind: nil), action: .remove),
        Row(description: "a file that became a directory loses its entry", look: .init(kind: .directory, tracked: true), action: .removeFile),
        Row(description: "a merge's stamped write, stat unchanged, is not read again",
            look: .init(kind: .regular, tracked: true, stampedUnchanged: true), action: .keepStamped),
        Row(description: "an obstacle (a FIFO, an unreadable directory above) keeps what the store holds",
            look: .init(obstacle: true, kind: nil, tracked: true), action: .obstruct, releasesHold: false),
        Row(description: "an obstacle wins over a hold", look: .init(obstacle: true, kind: .regular, holdReason: .manual),
            action: .obstruct, releasesHold: false),
        Row(description: "a FIFO that came after the obstacle look is an obstacle too", look: .init(kind: .fifo), action: .obstruct),
        Row(description: "a manual path's edit is held", look: .init(kind: .regular, tracked: true, holdReason: .manual),
            action: .hold(.manual), releasesHold: false),
        Row(description: "a receive-only device's deletion of a tracked file is held",
            look: .init(kind: nil, tracked: true, holdReason: .localChange), action: .hold(.localChange), releasesHold: false),
        Row(description: "the rules hold files, not directories: a new directory is not held",
            look: .init(kind: .directory, tracked: false, holdReason: .manual), action: .removeFile),
        Row(description: "an untracked path gone is not held (nothing to hold)",
            look: .init(kind: nil, tracked: false, holdReason: .manual), action: .remove),
        Row(description: "what a merge could not write, untouched: not this device's change",
            look: .init(kind: nil, tracked: true, unappliedUntouched: true), action: .leave),
        Row(description: "what a merge could not write, written over by the user: that is the change",
            look: .init(kind: .regular, tracked: true, unappliedUntouched: false), action: .stage, overridesUnapplied: true),
    ]

    @Test(arguments: rows) func table(_ row: Row) {
        let decision = D.decide(row.look)
        #expect(decision.action == row.action)
        #expect(decision.releasesHold == row.releasesHold)
        #expect(decision.overridesUnapplied == row.overridesUnapplied)
    }

    @Test func passedOverBeforeLooking() {
        #expect(D.passesOver(ignored: true, materializes: true, ownWrite: false))
        #expect(D.passesOver(ignored: false, materializes: false, ownWrite: false))
        #expect(D.passesOver(ignored: false, materializes: true, ownWrite: true))
        #expect(!D.passesOver(ignored: false, materializes: true, ownWrite: false))
    }
}
