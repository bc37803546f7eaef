import Git
@testable import ObjectStorage
@testable import SyncCore
import Foundation
import SystemPackage
import Testing

/// The merge plan is pure: these tables drive `ConflictPolicy.plan` with versions in, decisions out.
@Suite struct ConflictPolicyTests {
    static let blobs: [String: [UInt8]] = [
        "base": Array("base\n".utf8), "p": Array("phone\n".utf8), "w": Array("watch\n".utf8),
        "t": Array("tablet\n".utf8), "jp": Array(#"{"a":1,"b":0}"#.utf8), "jw": Array(#"{"a":0,"b":2}"#.utf8),
        "jt": Array(#"{"a":0,"b":0,"c":3}"#.utf8), "jb": Array(#"{"a":0,"b":0}"#.utf8),
    ]
    static func oid(_ name: String) -> Oid { Oid.hashing(blobs[name]!) }
    static func file(_ name: String) -> ConflictSide { ConflictSide(oid: oid(name), mode: 0o100644) }
    static let directory = ConflictSide(oid: Oid.hashing(Array("tree".utf8)), mode: 0o040000)
    static func side(_ device: String, _ entry: ConflictSide?, at time: Int64) -> SideVersion {
        SideVersion(device: device, commit: Oid.hashing(Array("\(device)\(time)".utf8)), time: time, entry: entry)
    }
    static func content(_ id: Oid) -> [UInt8]? { blobs.values.first { Oid.hashing($0) == id } }

    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var rules: [ResolverRule] = []
        var base: ConflictSide? = file("base")
        var ours: SideVersion
        var theirs: SideVersion
        var existing: [SideVersion] = []
        // expected
        var take: PathPlan.Take
        var status: ConflictRecord.Status
        var current: String?
        var versions: [String]
        var copies: [String] = []
        var kind: ConflictRecord.Kind = .bothModified
    }

    static let cases: [Case] = [
        Case(description: "newer edit holds the path, record open",
             ours: side("phone", file("p"), at: 20), theirs: side("watch", file("w"), at: 10),
             take: .entry(file("p")), status: .open, current: "phone", versions: ["phone", "watch"]),
        Case(description: "same time: the device name that sorts last",
             ours: side("watch", file("w"), at: 10), theirs: side("phone", file("p"), at: 10),
             take: .entry(file("w")), status: .open, current: "watch", versions: ["phone", "watch"]),
        Case(description: "a modification beats a newer deletion",
             ours: side("phone", nil, at: 50), theirs: side("watch", file("w"), at: 10),
             take: .entry(file("w")), status: .open, current: "watch", versions: ["phone", "watch"], kind: .modifiedDeleted),
        Case(description: "a third device joins the open record (N-way)",
             ours: side("phone", file("p"), at: 20), theirs: side("watch", file("w"), at: 10),
             existing: [side("tablet", file("t"), at: 30), side("phone", file("p"), at: 20)],
             take: .entry(file("t")), status: .open, current: "tablet", versions: ["phone", "tablet", "watch"]),
        Case(description: "file against directory: the directory keeps the path, the file goes beside it",
             ours: side("phone", file("p"), at: 99), theirs: side("watch", directory, at: 10),
             take: .directory, status: .open, current: "watch", versions: ["phone", "watch"],
             copies: ["d/x.conflict-phone-19700101-000139"], kind: .typeChanged),
        Case(description: "newest strategy settles it",
             rules: [ResolverRule(path: "*", strategy: .newest)],
             ours: side("phone", file("p"), at: 5), theirs: side("watch", file("w"), at: 10),
             take: .entry(file("w")), status: .resolved, current: "watch", versions: ["phone", "watch"]),
        Case(description: "keep:phone even when older",
             rules: [ResolverRule(path: "*", strategy: .keep(device: "phone"))],
             ours: side("phone", file("p"), at: 5), theirs: side("watch", file("w"), at: 10),
             take: .entry(file("p")), status: .resolved, current: "phone", versions: ["phone", "watch"]),
        Case(description: "keep:tablet with no tablet version stays open",
             rules: [ResolverRule(path: "*", strategy: .keep(device: "tablet"))],
             ours: side("phone", file("p"), at: 5), theirs: side("watch", file("w"), at: 10),
             take: .entry(file("w")), status: .open, current: "watch", versions: ["phone", "watch"]),
        Case(description: "both: the newer at the path, the other beside it",
             rules: [ResolverRule(path: "*", strategy: .both)],
             ours: side("phone", file("p"), at: 5), theirs: side("watch", file("w"), at: 10),
             take: .entry(file("w")), status: .resolved, current: "watch", versions: ["phone", "watch"],
             copies: ["d/x.conflict-phone-19700101-000005"]),
        Case(description: "json merges three devices' keys",
             rules: [ResolverRule(path: "*", strategy: .json)], base: file("jb"),
             ours: side("phone", file("jp"), at: 5), theirs: side("watch", file("jw"), at: 10),
             existing: [side("tablet", file("jt"), at: 7)],
             take: .bytes(Array("{\n  \"a\" : 1,\n  \"b\" : 2,\n  \"c\" : 3\n}\n".utf8), mode: 0o100644),
             status: .resolved, current: "watch", versions: ["phone", "tablet", "watch"]),
    ]

    @Test(arguments: cases) func plan(_ c: Case) throws {
        let policy = ConflictPolicy(device: "phone", rules: c.rules, resolvers: [])
        let path: FilePath = "d/x"
        var existing: ConflictRecord?
        if !c.existing.isEmpty {
            var first = policy.plan(PathConflict(path: path, base: c.base, ours: c.existing[0], theirs: c.existing.last!),
                                    existing: nil, generation: 0, now: 1, content: Self.content).record
            first.versions = first.versions.filter { v in c.existing.contains { $0.device == v.device } }
            existing = first
        }
        let plan = policy.plan(PathConflict(path: path, base: c.base, ours: c.ours, theirs: c.theirs),
                               existing: existing, generation: 0, now: 100, content: Self.content)
        #expect(plan.take == c.take)
        #expect(plan.record.status == c.status)
        #expect(plan.record.current == c.current)
        #expect(plan.record.versions.map(\.device) == c.versions)
        #expect(plan.copies.map(\.path.string) == c.copies)
        #expect(plan.record.kind == c.kind)
        #expect(plan.record.id == ConflictRecord.id(path: path, generation: 0))
    }

    /// Every device must reach the same plan whichever side is "ours".
    @Test(arguments: cases) func sameFromEitherSide(_ c: Case) {
        let policy = ConflictPolicy(device: "watch", rules: c.rules, resolvers: [])
        let a = policy.plan(PathConflict(path: "d/x", base: c.base, ours: c.ours, theirs: c.theirs),
                            existing: nil, generation: 3, now: 100, content: Self.content)
        let b = policy.plan(PathConflict(path: "d/x", base: c.base, ours: c.theirs, theirs: c.ours),
                            existing: nil, generation: 3, now: 100, content: Self.content)
        #expect(a.take == b.take)
        #expect(a.record.id == b.record.id)
        #expect(a.record.versions == b.record.versions)
        #expect(a.record.current == b.record.current)
    }

    /// The `command` strategy is planned, never run, by the policy: the plan names the program and
    /// the versions in device order; the store's result completes it (bytes resolve, a failure
    /// leaves it open with the reason).
    @Test func commandStrategyIsARequestNotASpawn() throws {
        let marker = "/tmp/syncagent-policy-spawned-\(getpid())"
        let rules = [ResolverRule(path: "*", strategy: .command, command: ["touch", marker])]
        let policy = ConflictPolicy(device: "phone", rules: rules, resolvers: [])
        let plan = policy.plan(PathConflict(path: "d/x", base: Self.file("base"), ours: Self.side("watch", Self.file("w"), at: 10),
                                            theirs: Self.side("phone", Self.file("p"), at: 5)),
                               existing: nil, generation: 0, now: 100, content: Self.content)
        #expect(!FileManager.default.fileExists(atPath: marker))
        let request = try #require(plan.external)
        #expect(request.command == ["touch", marker])
        #expect(request.first == Self.content(Self.file("p").oid))   // phone sorts first
        #expect(request.second == Self.content(Self.file("w").oid))
        #expect(plan.record.status == .open)

        let merged = policy.completing(plan, with: .success(.bytes(Array("m".utf8))), now: 101)
        #expect(merged.external == nil)
        #expect(merged.take == .bytes(Array("m".utf8), mode: 0o100644))
        #expect(merged.record.status == .resolved)
        #expect(merged.record.resolution?.strategy == "command")

        let failed = policy.completing(plan, with: .failure(.init(description: "merge exited 3")), now: 101)
        #expect(failed.record.status == .open)
        #expect(failed.take == plan.take)
        #expect(failed.note?.contains("merge exited 3") == true)
    }

    /// Two open copies of one record settle to the same record in either order.
    @Test func settleIsOrderFree() {
        let policy = ConflictPolicy(device: "phone", rules: [], resolvers: [])
        let x = policy.plan(PathConflict(path: "p", base: nil, ours: Self.side("phone", Self.file("p"), at: 1),
                                         theirs: Self.side("watch", Self.file("w"), at: 2)),
                            existing: nil, generation: 0, now: 5, content: Self.content).record
        var y = ConflictPolicy(device: "tablet", rules: [], resolvers: []).plan(
            PathConflict(path: "p", base: nil, ours: Self.side("tablet", Self.file("t"), at: 3),
                         theirs: Self.side("watch", Self.file("w"), at: 2)),
            existing: nil, generation: 0, now: 6, content: Self.content).record
        y.detectedAt = "1970-01-01T00:00:06Z"
        let ab = ConflictRecord.settle(x, y), ba = ConflictRecord.settle(y, x)
        #expect(ab == ba)
        #expect(ab.versions.map(\.device) == ["phone", "tablet", "watch"])
        #expect(ab.current == "tablet")
    }
}

@Suite struct DeletionGuardTests {
    let rule = DeletionGuard(settings: SafetySettings(maxDeletePercent: 50, minDeleteFiles: 20))

    @Test(arguments: [
        (deleting: 30, tracked: 40, empty: false, held: true),    // 75% and >= 20
        (deleting: 5, tracked: 40, empty: false, held: false),    // few
        (deleting: 100, tracked: 300, empty: false, held: false), // a third
        (deleting: 19, tracked: 20, empty: false, held: false),   // below min_delete_files
        (deleting: 3, tracked: 3, empty: true, held: true),       // the directory emptied
        (deleting: 0, tracked: 3, empty: true, held: false),
    ])
    func holds(_ c: (deleting: Int, tracked: Int, empty: Bool, held: Bool)) {
        let hold = rule.check(root: "/data", deleting: c.deleting, tracked: c.tracked, rootIsEmpty: c.empty)
        #expect((hold != nil) == c.held)
    }
}

@Suite struct RecordPathTests {
    /// A record is a peer's input: only a safe relative path may reach `resolve`.
    @Test(arguments: [
        ("notes/a.txt", true), ("bad-\u{00ff}", true), ("", false), ("/etc/passwd", false),
        ("../x", false), ("a/../../x", false), (".git/config", false), ("a/.GIT/x", false), ("a//b", false),
    ])
    func safePaths(_ c: (path: String, safe: Bool)) {
        let hex = c.path.utf8.map { String(format: "%02x", $0) }.joined()
        let record = ConflictRecord(id: "c-1", path: c.path, pathBytes: hex, kind: .bothModified, status: .open,
                                    detectedAt: "", detectedBy: "x", base: nil, versions: [], current: nil, resolution: nil)
        #expect(record.hasSafePath == c.safe)
    }
}

/// Issue 18.3: a resolution never closes versions it did not see.
@Suite struct FollowUpTests {
    func v(_ device: String, _ blob: String, _ time: String) -> ConflictRecord.Version {
        .init(device: device, commit: String(repeating: blob, count: 40), blob: String(repeating: blob, count: 40),
              mode: 0o100644, time: time)
    }
    func record(_ versions: [ConflictRecord.Version], resolved: Bool) -> ConflictRecord {
        var r = ConflictRecord(id: "c-1", path: "p", pathBytes: "70", kind: .bothModified, status: .open,
                               detectedAt: "2026-01-01T00:00:00Z", detectedBy: "phone", base: nil,
                               versions: versions, current: "watch", resolution: nil)
        if resolved { r.markResolved(strategy: "keep:phone", by: "phone", at: 1_800_000_000) }
        return r
    }

    @Test func unseenVersionsOpenAFollowUpInEitherOrder() {
        let seen = [v("phone", "a", "2026-01-01T00:00:01Z"), v("watch", "b", "2026-01-01T00:00:02Z")]
        let done = record(seen, resolved: true)
        // the watch edited again and the tablet joined, unaware of the resolution
        let open = record([seen[0], v("watch", "c", "2026-01-01T00:01:00Z"), v("tablet", "d", "2026-01-01T00:01:01Z")], resolved: false)
        for (x, y) in [(done, open), (open, done)] {
            let book = ConflictBook.union(["c-1": x], ["c-1": y])
            #expect(book["c-1"]?.status == .resolved)
            let next = book[ConflictRecord.followUpID("c-1")]
            #expect(next?.status == .open)
            #expect(next?.versions.map(\.device).sorted() == ["tablet", "watch"])
        }
        // nothing unseen (the same versions, or older ones): no follow-up
        #expect(ConflictBook.union(["c-1": done], ["c-1": record(seen, resolved: false)]).count == 1)
        #expect(ConflictBook.union(["c-1": done], ["c-1": record([seen[0]], resolved: false)]).count == 1)
    }

    /// A device's second version in the same second as the one the resolution saw cannot be
    /// ordered by time: it is kept in the follow-up, whichever commit id is larger.
    @Test func aVersionOfTheSameSecondIsNeverDropped() {
        for (old, new) in [("b", "c"), ("c", "b")] {  // both orders of the commit ids
            let seen = [v("phone", "a", "2026-01-01T00:00:01Z"), v("watch", old, "2026-01-01T00:00:02Z")]
            let open = record([seen[0], v("watch", new, "2026-01-01T00:00:02Z"), v("tablet", "d", "2026-01-01T00:00:02Z")], resolved: false)
            let next = ConflictBook.union(["c-1": record(seen, resolved: true)], ["c-1": open])[ConflictRecord.followUpID("c-1")]
            #expect(next?.versions.map(\.device).sorted() == ["tablet", "watch"], "watch \(old) seen, watch \(new) open")
        }
        // an older version of a device (an open copy that missed its later edit) opens nothing
        let seen = [v("phone", "a", "2026-01-01T00:00:01Z"), v("watch", "b", "2026-01-01T00:00:09Z")]
        let stale = record([seen[0], v("watch", "c", "2026-01-01T00:00:02Z")], resolved: false)
        #expect(ConflictBook.union(["c-1": record(seen, resolved: true)], ["c-1": stale]).count == 1)
    }
}
