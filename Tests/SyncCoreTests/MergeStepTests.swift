@testable import SyncCore
import Testing

/// The first step of the merge plan, as a table: what integrating a peer's `main` takes, and which
/// questions it asks to decide (an idle round must ask one, never walk for a fast-forward).
@Suite struct MergeStepTests {
    struct Row: Sendable, CustomStringConvertible {
        var description: String
        var ours = true, theirs = true, covered = false, fastForward = false, sameTree = false
        var step: MergeStep
        var asked: [String]
    }

    static let rows: [Row] = [
        Row(description: "the peer has no main", theirs: false, step: .upToDate, asked: []),
        Row(description: "no commit here yet", ours: false, step: .fastForward, asked: []),
        Row(description: "main holds the peer's", covered: true, fastForward: true, step: .upToDate, asked: ["covered"]),
        Row(description: "the peer's history holds ours", fastForward: true, step: .fastForward, asked: ["covered", "fastForward"]),
        Row(description: "same files, histories apart", sameTree: true, step: .join, asked: ["covered", "fastForward", "sameTree"]),
        Row(description: "both changed", step: .merge, asked: ["covered", "fastForward", "sameTree"]),
    ]

    @Test(arguments: rows) func decide(_ row: Row) {
        var asked: [String] = []
        let step = MergeStep.decide(hasOurs: row.ours, hasTheirs: row.theirs,
                                    covered: { asked.append("covered"); return row.covered },
                                    fastForward: { asked.append("fastForward"); return row.fastForward },
                                    sameTree: { asked.append("sameTree"); return row.sameTree })
        #expect(step == row.step)
        #expect(asked == row.asked)
    }
}
