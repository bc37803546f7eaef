import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

@Suite struct MergeStrategyTests {
    func text(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    @Test func jsonMergesKeysChangedOnDifferentSides() throws {
        let base = Array(#"{"theme":"light","volume":3,"nested":{"a":1,"b":1}}"#.utf8)
        let phone = Array(#"{"theme":"dark","volume":3,"nested":{"a":2,"b":1}}"#.utf8)
        let watch = Array(#"{"theme":"light","volume":5,"nested":{"a":1,"b":2},"new":true}"#.utf8)
        let merged = try #require(Merges.json(base: base, phone, watch))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(merged)) as? [String: Any])
        #expect(object["theme"] as? String == "dark")
        #expect(object["volume"] as? Int == 5)
        #expect(object["new"] as? Bool == true)
        #expect((object["nested"] as? [String: Int]) == ["a": 2, "b": 2])
        // Same bytes whichever side is passed first.
        #expect(Merges.json(base: base, watch, phone) == merged)
    }

    @Test func jsonKeyChangedDifferentlyOnBothLeavesItOpen() {
        let base = Array(#"{"theme":"light"}"#.utf8)
        #expect(Merges.json(base: base, Array(#"{"theme":"dark"}"#.utf8), Array(#"{"theme":"blue"}"#.utf8)) == nil)
        #expect(Merges.json(base: nil, Array("[1,2]".utf8), Array("{}".utf8)) == nil)
    }

    @Test func jsonDeletionOnOneSideIsKept() throws {
        let base = Array(#"{"a":1,"b":2}"#.utf8)
        let merged = try #require(Merges.json(base: base, Array(#"{"a":1}"#.utf8), Array(#"{"a":1,"b":2,"c":3}"#.utf8)))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(merged)) as? [String: Int])
        #expect(object == ["a": 1, "c": 3])
    }

    @Test func unionKeepsEveryLineOnce() {
        let base = Array("one\ntwo\n".utf8)
        let merged = Merges.lineUnion(base: base, versions: [Array("one\ntwo\nphone\n".utf8), Array("one\ntwo\nwatch\n".utf8)])
        #expect(text(merged) == "one\ntwo\nphone\nwatch\n")
    }

    @Test func globsMatchNamesAtAnyDepthOrWholePaths() {
        #expect(Glob.matches("*.json", path: "settings/app.json"))
        #expect(Glob.matches("*.json", path: "app.json"))
        #expect(!Glob.matches("*.json", path: "app.json.bak"))
        #expect(Glob.matches("logs/*.log", path: "logs/a.log"))
        #expect(!Glob.matches("logs/*.log", path: "other/logs/a.log"))
        // Names are bytes: a name that is not UTF-8 still matches by its bytes.
        #expect(Glob.matches("*.json", pathBytes: Array("d/bad-".utf8) + [0xff, 0xfe] + Array(".json".utf8)))
        #expect(!Glob.matches("*.txt", pathBytes: Array("d/bad-".utf8) + [0xff] + Array(".json".utf8)))
    }
}

@Suite struct AutoResolveTests {
    func conflicted(_ rules: [ResolverRule], base: String, phone: String, watch: String, name: String = "s.json") throws -> TwoDevices {
        let t = try TwoDevices()
        t.phone.store.rules = rules
        t.watch.store.rules = rules
        try t.phone.write(name, base)
        try t.phone.commit(FilePath(name))
        _ = try t.watch.pull(from: t.phone)
        try t.phone.write(name, phone, mtime: 1_800_000_000)
        try t.phone.commit(FilePath(name))
        try t.watch.write(name, watch, mtime: 1_800_000_100)
        try t.watch.commit(FilePath(name))
        return t
    }

    @Test func jsonStrategyGivesIdenticalBytesOnBothDevicesAndKeepsAResolvedRecord() throws {
        let t = try conflicted([ResolverRule(path: "*.json", strategy: .json)],
                               base: #"{"a":1,"b":1}"#, phone: #"{"a":2,"b":1}"#, watch: #"{"a":1,"b":2}"#)
        // Both fetch before either merges: each settles the conflict on its own.
        try Store.fetch(gitDir: t.phone.gitDir, data: t.phone.data, peer: "watch", url: "file://\(t.watch.gitDir)")
        try Store.fetch(gitDir: t.watch.gitDir, data: t.watch.data, peer: "phone", url: "file://\(t.phone.gitDir)")
        let out = try t.phone.store.integrate(peer: "watch")
        let other = try t.watch.store.integrate(peer: "phone")
        #expect(out.newConflicts.first?.status == .resolved)
        #expect(out.newConflicts.first?.resolution?.strategy == "json")
        #expect(other.newConflicts.first?.id == out.newConflicts.first?.id)
        #expect(t.phone.read("s.json") == t.watch.read("s.json"))
        _ = try t.phone.pull(from: t.watch)
        _ = try t.watch.pull(from: t.phone)
        #expect(try t.phone.store.head() == t.watch.store.head())
        #expect(t.phone.read("s.json")?.contains("\"a\" : 2") == true)
        #expect(t.phone.read("s.json")?.contains("\"b\" : 2") == true)
        #expect(try t.phone.store.conflicts().isEmpty)
        #expect(try t.phone.store.conflicts(includeResolved: true).count == 1)
    }

    @Test func keepDeviceStrategy() throws {
        let t = try conflicted([ResolverRule(path: "*", strategy: .keep(device: "phone"))], base: "b", phone: "phone wins", watch: "newer but watch", name: "x.txt")
        _ = try t.phone.pull(from: t.watch)
        #expect(t.phone.read("x.txt") == "phone wins")
    }

    @Test func bothStrategyWritesAConflictCopy() throws {
        let t = try conflicted([ResolverRule(path: "*.txt", strategy: .both)], base: "b", phone: "P", watch: "W", name: "n.txt")
        _ = try t.phone.pull(from: t.watch)
        #expect(t.phone.read("n.txt") == "W")
        let copy = ConflictPolicy.copyPath("n.txt", device: "phone", time: 1_800_000_000)
        #expect(copy == "n.conflict-phone-20270115-080000.txt")
        #expect(t.phone.read(copy.string) == "P")
    }

    @Test func commandStrategyRunsTheProgramAndFailureLeavesItOpen() throws {
        let ok = try conflicted([ResolverRule(path: "*", strategy: .command, command: ["sh", "-c", "cat \"$1\" \"$2\" > \"$3\"", "merge", "{ours}", "{theirs}", "{out}"])],
                                base: "b", phone: "P\n", watch: "W\n", name: "c.txt")
        let out = try ok.phone.pull(from: ok.watch)
        #expect(out.newConflicts.first?.status == .resolved)
        #expect(ok.phone.read("c.txt") == "P\nW\n")

        let bad = try conflicted([ResolverRule(path: "*", strategy: .command, command: ["sh", "-c", "echo cannot merge >&2; exit 3"])],
                                 base: "b", phone: "P", watch: "W", name: "c.txt")
        let failed = try bad.phone.pull(from: bad.watch)
        #expect(failed.newConflicts.first?.status == .open)
        #expect(failed.notes.first?.contains("cannot merge") == true)
        #expect(bad.phone.read("c.txt") == "W")
    }

    struct UpperCaseResolver: ConflictResolver {
        var name: String { "upper" }
        func resolve(_ record: ConflictRecord, base: [UInt8]?, versions: [String: [UInt8]?]) -> ResolverDecision? {
            .bytes(Array(versions.keys.sorted().compactMap { versions[$0] ?? nil }.map { String(decoding: $0, as: UTF8.self).uppercased() }.joined().utf8))
        }
    }

    @Test func registeredResolverComesFirst() throws {
        let t = try conflicted([ResolverRule(path: "*", strategy: .keep(device: "watch"))], base: "b", phone: "p", watch: "w", name: "u.txt")
        t.phone.store.resolvers = [UpperCaseResolver()]
        let out = try t.phone.pull(from: t.watch)
        #expect(out.newConflicts.first?.resolution?.strategy == "upper")
        #expect(t.phone.read("u.txt") == "PW")
    }
}
