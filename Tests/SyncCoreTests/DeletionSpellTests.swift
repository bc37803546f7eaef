import SyncCore
import Testing

/// Issue 43: the guard judges deletion spells as people make them. Each case is a sequence of
/// batches (seconds after the first, tracked files the batch deletes, new to the spell or not) as
/// the engine sees them, and what the spell decides for each; `committed` batches count as sent.
@Suite struct DeletionSpellTests {
    static let t0 = ContinuousClock.now
    enum Want: Equatable { case send, wait, hold }

    /// One batch: at `at` s, `deleted` files wait uncommitted (this batch's and earlier ones'),
    /// `grew`: some are new.
    struct Step {
        var at: Double
        var deleted: Int
        var grew = true
        var tracked = 20_000
        var whole = false
        var want: Want
    }

    static let cases: [(String, [Step])] = [
        ("a lone deletion goes at once", [Step(at: 0, deleted: 1, want: .send)]),
        ("19 deletions can never cross the line: they go", [Step(at: 0, deleted: 19, want: .send)]),
        ("a big deletion waits for quiet, then goes", [
            Step(at: 0, deleted: 3000, want: .wait),
            Step(at: 5.1, deleted: 3000, grew: false, want: .send),
        ]),
        // A script deleting 16,000 of 20,000 one by one: 13 batches, each under 50 % of what is left.
        ("a script's 13 batches are one spell, held whole", [
            Step(at: 0, deleted: 311, want: .wait),
            Step(at: 2, deleted: 777, want: .wait),
            Step(at: 4, deleted: 5000, want: .wait),
            Step(at: 6, deleted: 10_001, want: .hold),
            Step(at: 8, deleted: 16_000, want: .hold),
            Step(at: 30, deleted: 16_000, grew: false, want: .hold),  // held until the user answers
        ]),
        ("rm -rf cut in two by max delay: held", [
            Step(at: 0, deleted: 9575, want: .wait),
            Step(at: 2, deleted: 20_000, want: .hold),
        ]),
        ("a held spell holds later deletions too", [
            Step(at: 0, deleted: 12_000, want: .hold),
            Step(at: 100, deleted: 12_001, want: .hold),
        ]),
        ("every file back: the hold ends, the next deletion is a new spell", [
            Step(at: 0, deleted: 12_000, want: .hold),
            Step(at: 10, deleted: 0, grew: false, want: .send),
            Step(at: 11, deleted: 1, want: .send),
        ]),
        ("a pause of 5 s ends a spell: two halves under the line each go", [
            Step(at: 0, deleted: 6000, want: .wait),
            Step(at: 5, deleted: 6000, grew: false, want: .send),
            Step(at: 11, deleted: 6000, tracked: 14_000, want: .wait),
            Step(at: 16, deleted: 6000, grew: false, tracked: 14_000, want: .send),
        ]),
        // A batch every 4 s (never 5 s of quiet) for a minute.
        ("deletions keep coming: judged every 60 s, under the line they go and count",
         (0..<15).map { Step(at: Double($0 * 4), deleted: 100 * ($0 + 1), want: .wait) } + [
            Step(at: 60, deleted: 6000, want: .send),
            Step(at: 62, deleted: 1000, tracked: 14_000, want: .wait),
            Step(at: 66, deleted: 4001, tracked: 14_000, want: .hold),  // 6000 sent + 4001 > 10,000
        ]),
        ("a slow clean-up, a few files a minute, never waits", [
            Step(at: 0, deleted: 3, want: .send),
            Step(at: 20, deleted: 2, tracked: 19_997, want: .send),
            Step(at: 40, deleted: 3, tracked: 19_995, want: .send),
            Step(at: 60, deleted: 2, tracked: 19_992, want: .send),
        ]),
        ("a start-up scan sees the whole spell: judged at once", [
            Step(at: 0, deleted: 3000, whole: true, want: .send),
        ]),
        ("a start-up scan over the line: held", [
            Step(at: 0, deleted: 15_000, whole: true, want: .hold),
        ]),
        ("an emptied directory is held whatever the count", [
            Step(at: 0, deleted: 30, tracked: 30, want: .hold),
        ]),
    ]

    @Test(arguments: cases)
    func spell(_ c: (name: String, steps: [Step])) {
        var spell = DeletionSpell(rule: DeletionGuard(settings: SafetySettings(maxDeletePercent: 50, minDeleteFiles: 20)), root: "/data")
        for (i, step) in c.steps.enumerated() {
            let now = Self.t0 + .milliseconds(Int(step.at * 1000))
            let decision = spell.observe(now: now, deleted: step.deleted, grew: step.grew, tracked: step.tracked,
                                         rootIsEmpty: step.tracked == step.deleted, wholeSeen: step.whole, head: "c0")
            let got: Want
            switch decision {
            case .send: got = .send
            case .wait: got = .wait
            case .hold: got = .hold
            }
            #expect(got == step.want, "\(c.name): step \(i) (at \(step.at) s, \(step.deleted) deleted)")
            if got == .send { spell.sent(step.deleted, now: now) }
        }
    }

    @Test func waitsUntilQuietOrTheLongestSpell() {
        var spell = DeletionSpell(rule: DeletionGuard(settings: SafetySettings()), root: "/data")
        let now = Self.t0
        #expect(spell.observe(now: now, deleted: 500, grew: true, tracked: 20_000, rootIsEmpty: false, wholeSeen: false, head: "c0")
                == .wait(until: now + DeletionSpell.quiet))
        for t in stride(from: 4, through: 56, by: 4) {  // never 5 s of quiet
            _ = spell.observe(now: now + .seconds(t), deleted: 500 + t, grew: true, tracked: 20_000, rootIsEmpty: false, wholeSeen: false, head: "c\(t)")
        }
        let later = now + .seconds(58)
        #expect(spell.observe(now: later, deleted: 900, grew: true, tracked: 20_000, rootIsEmpty: false, wholeSeen: false, head: "c0")
                == .wait(until: now + DeletionSpell.longest))
        #expect(spell.current?.startCommit == "c0")
    }

    @Test func theHoldCountsWhatLeftBefore() {
        var spell = DeletionSpell(rule: DeletionGuard(settings: SafetySettings()), root: "/data")
        _ = spell.observe(now: Self.t0, deleted: 5, grew: true, tracked: 100, rootIsEmpty: false, wholeSeen: false, head: "c0")
        spell.sent(5, now: Self.t0)
        let decision = spell.observe(now: Self.t0 + .seconds(1), deleted: 50, grew: true, tracked: 95, rootIsEmpty: false,
                                     wholeSeen: false, head: "c1")
        #expect(decision == .hold(.massDelete(deleting: 55, tracked: 100, percent: 50, sent: 5)))
        #expect(spell.current?.startCommit == "c0")
    }
}
