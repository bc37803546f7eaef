import Git
@testable import ObjectStorage
@testable import SyncCore
import SystemPackage
import Testing

/// The whole merge of a path set, decided with no disk and no libgit2 (`MergePlan.decide`): each
/// row is what was read for some paths, the book before, and the steps and records expected.
/// e2e/reconcile_table.py stays the check that the plan and the disk agree.
@Suite struct MergePlanTests {
    typealias T = ConflictPolicyTests
    static func file(_ name: String) -> ConflictSide { T.file(name) }
    static func side(_ device: String, _ entry: ConflictSide?, at time: Int64) -> SideVersion { T.side(device, entry, at: time) }
    static let policy = ConflictPolicy(device: "phone", rules: [], resolvers: [])

    struct Row: Sendable, CustomStringConvertible {
        var description: String
        var inputs: [MergePlan.Input]
        var book: [ConflictRecord] = []
        var rules: [ResolverRule] = []
        /// Per input: "later DEVICE", "conflict KIND current=DEVICE [copies=N] [status]", "lost ...", "none".
        var steps: [String]
        /// The record ids the plan opened or extended, in order.
        var records: [String]
    }

    static func describe(_ step: MergePlan.Step) -> String {
        switch step {
        case .none: return "none"
        case .later(_, let take):
            switch take {
            case .entry(let e): return "later " + (e.map { e in ["p", "w", "t", "base"].first { file($0) == e } ?? "?" } ?? "deleted")
            case .directory: return "later directory"
            case .bytes: return "later bytes"
            }
        case .conflict(_, let plan, let lost):
            var out = (lost ? "lost " : "conflict ") + plan.record.kind.rawValue + " current=" + (plan.record.current ?? "-")
            if !plan.copies.isEmpty { out += " copies=\(plan.copies.count)" }
            if plan.record.status == .resolved { out += " resolved" }
            return out
        }
    }

    static func openRecord(_ path: FilePath, devices: [(String, String, Int64)]) -> ConflictRecord {
        var record = policy.plan(PathConflict(path: path, base: file("base"), ours: side(devices[0].0, file(devices[0].1), at: devices[0].2),
                                              theirs: side(devices[1].0, file(devices[1].1), at: devices[1].2)),
                                 existing: nil, generation: 0, now: 1, content: T.content).record
        record.status = .open
        return record
    }

    static func resolvedRecord(_ path: FilePath) -> ConflictRecord {
        var record = openRecord(path, devices: [("phone", "p", 1), ("watch", "w", 2)])
        record.status = .resolved
        return record
    }

    static let rows: [Row] = [
        Row(description: "one device on both sides (its edit reached us twice): the later edit, no record",
            inputs: [.init(path: "a", base: file("base"), ours: side("phone", file("p"), at: 20), theirs: side("phone", file("w"), at: 30))],
            steps: ["later w"], records: []),
        Row(description: "one device on both sides, deleted later: the deletion, no record",
            inputs: [.init(path: "a", base: file("base"), ours: side("watch", nil, at: 40), theirs: side("watch", file("w"), at: 30))],
            steps: ["later deleted"], records: []),
        Row(description: "one device on both sides, but ours came through a join: a conflict like any other",
            inputs: [.init(path: "a", base: file("base"), ours: side("phone", file("p"), at: 20), theirs: side("phone", file("w"), at: 30),
                           oursFromJoin: true)],
            steps: ["conflict both-modified current=phone"], records: [ConflictRecord.id(path: "a", generation: 0)]),
        Row(description: "two devices, two paths: two records, the newer edit holds each path",
            inputs: [.init(path: "a", base: file("base"), ours: side("phone", file("p"), at: 20), theirs: side("watch", file("w"), at: 10)),
                     .init(path: "b", base: file("base"), ours: side("phone", file("p"), at: 5), theirs: side("watch", file("w"), at: 10))],
            steps: ["conflict both-modified current=phone", "conflict both-modified current=watch"],
            records: [ConflictRecord.id(path: "a", generation: 0), ConflictRecord.id(path: "b", generation: 0)]),
        Row(description: "an open record of the path takes the third device's version (N-way)",
            inputs: [.init(path: "a", base: file("base"), ours: side("phone", file("p"), at: 20), theirs: side("tablet", file("t"), at: 30))],
            book: [openRecord("a", devices: [("phone", "p", 20), ("watch", "w", 10)])],
            steps: ["conflict both-modified current=tablet"], records: [ConflictRecord.id(path: "a", generation: 0)]),
        Row(description: "a record of the path resolved before: the new dispute is the next generation",
            inputs: [.init(path: "a", base: file("base"), ours: side("phone", file("p"), at: 20), theirs: side("watch", file("w"), at: 10))],
            book: [resolvedRecord("a")],
            steps: ["conflict both-modified current=phone"], records: [ConflictRecord.id(path: "a", generation: 1)]),
        Row(description: "a modification beats a newer deletion",
            inputs: [.init(path: "a", base: file("base"), ours: side("phone", nil, at: 50), theirs: side("watch", file("w"), at: 10))],
            steps: ["conflict modified-deleted current=watch"], records: [ConflictRecord.id(path: "a", generation: 0)]),
        Row(description: "a file libgit2 dropped for the other device's directory: the directory stays, the file goes beside it",
            inputs: [.init(path: "d", base: nil, ours: side("phone", file("p"), at: 20), theirs: side("watch", T.directory, at: 10),
                           lostToDirectory: true)],
            steps: ["lost type-changed current=watch copies=1"], records: [ConflictRecord.id(path: "d", generation: 0)]),
        Row(description: "a file dropped for a directory, both one device's doing of the same type: nothing",
            inputs: [.init(path: "d", base: nil, ours: side("phone", T.directory, at: 20), theirs: side("phone", T.directory, at: 10),
                           lostToDirectory: true)],
            steps: ["none"], records: []),
        Row(description: "the newest strategy settles every path of the set",
            inputs: [.init(path: "a", base: file("base"), ours: side("phone", file("p"), at: 5), theirs: side("watch", file("w"), at: 10)),
                     .init(path: "b", base: file("base"), ours: side("phone", file("p"), at: 50), theirs: side("watch", file("w"), at: 10))],
            rules: [ResolverRule(path: "*", strategy: .newest)],
            steps: ["conflict both-modified current=watch resolved", "conflict both-modified current=phone resolved"],
            records: [ConflictRecord.id(path: "a", generation: 0), ConflictRecord.id(path: "b", generation: 0)]),
    ]

    @Test(arguments: rows) func table(_ row: Row) {
        let policy = ConflictPolicy(device: "phone", rules: row.rules, resolvers: [])
        let book = Dictionary(uniqueKeysWithValues: row.book.map { ($0.id, $0) })
        let plan = MergePlan.decide(row.inputs, book: book, policy: policy, now: 100, content: T.content)
        #expect(plan.steps.map(Self.describe) == row.steps)
        #expect(plan.records.map(\.id) == row.records)
        for record in plan.records { #expect(plan.book[record.id] == record) }
    }

    /// Every device reaches the same records whichever side it calls its own.
    @Test(arguments: rows) func sameFromEitherSide(_ row: Row) {
        let policy = ConflictPolicy(device: "watch", rules: row.rules, resolvers: [])
        let book = Dictionary(uniqueKeysWithValues: row.book.map { ($0.id, $0) })
        let swapped = row.inputs.map { i in
            MergePlan.Input(path: i.path, base: i.base, ours: i.theirs, theirs: i.ours, oursFromJoin: i.oursFromJoin, lostToDirectory: i.lostToDirectory)
        }
        // (A join flag belongs to our side only: swapped, it no longer applies; skip those rows.)
        guard !row.inputs.contains(where: \.oursFromJoin) else { return }
        let a = MergePlan.decide(row.inputs, book: book, policy: policy, now: 100, content: T.content)
        let b = MergePlan.decide(swapped, book: book, policy: policy, now: 100, content: T.content)
        #expect(a.records.map(\.id) == b.records.map(\.id))
        #expect(a.records.map(\.current) == b.records.map(\.current))
        #expect(a.records.map(\.versions) == b.records.map(\.versions))
        let kinds: (MergePlan) -> [String] = { plan in plan.steps.map { String(Self.describe($0).split(separator: " ").first ?? "") } }
        #expect(kinds(a) == kinds(b))
    }

    /// The `command` strategy's program is run by whoever carries the plan out: `decide` hands the
    /// request to `complete` and keeps what it returns.
    @Test func externalRequestsGoThroughComplete() {
        let policy = ConflictPolicy(device: "phone", rules: [ResolverRule(path: "*", strategy: .command, command: ["merge-it"])],
                                    resolvers: [])
        let input = MergePlan.Input(path: "a", base: Self.file("base"), ours: Self.side("phone", Self.file("p"), at: 5),
                                    theirs: Self.side("watch", Self.file("w"), at: 10))
        var asked = 0
        let plan = MergePlan.decide([input], book: [:], policy: policy, now: 100, content: T.content) { p in
            asked += 1
            return policy.completing(p, with: .success(.bytes(Array("merged\n".utf8))), now: 100)
        }
        #expect(asked == 1)
        guard case .conflict(_, let pathPlan, _) = plan.steps.first else { Issue.record("no conflict step"); return }
        let wanted = PathPlan.Take.bytes(Array("merged\n".utf8), mode: 0o100644)
        #expect(pathPlan.take == wanted)
        #expect(plan.records.first?.status == .resolved)
    }
}
