import Foundation
@testable import SyncCore
import SystemPackage
import TestSupport
import Testing

@testable import Agent
@testable import SyncAgentKit

struct Settings: Codable, Sendable, Equatable {
    var theme: String
    var goal: Int
}

/// A config for one device on a temporary directory, with no peers.
func deviceConfig(_ dir: TempDirectory, device: String = "phone", extra: String = "") throws -> String {
    let file = dir.path("\(device).toml")
    try """
    device = "\(device)"
    data = "\(dir.path("\(device)/data"))"
    state = "\(dir.path("\(device)/state"))"

    [watch]
    debounce_ms = 20
    \(extra)
    """.write(toFile: file, atomically: true, encoding: .utf8)
    try dir.mkdir("\(device)/data")
    return file
}

/// The typed layer, piece by piece: coders, policies, which events name a key, typed conflicts.
@Suite struct TypedLayerTests {
    @Test func jsonIsSortedPrettyAndEndsInANewline() throws {
        let coder = ValueCoder<Settings>.json
        let bytes = try coder.encode(Settings(theme: "dark", goal: 30))
        #expect(String(decoding: bytes, as: UTF8.self) == "{\n  \"goal\" : 30,\n  \"theme\" : \"dark\"\n}\n")
        #expect(try coder.decode(bytes) == Settings(theme: "dark", goal: 30))
        #expect(throws: (any Error).self) { try coder.decode(Array("not json".utf8)) }
    }

    @Test func policiesBecomeRulesThatMatchOnlyTheirKeys() {
        let exact = KeyPolicy(.key("odd*name[1].json"), .manual).rule
        #expect(exact.sync == .manual)
        #expect(Glob.matches(exact.path, path: "odd*name[1].json"))
        #expect(!Glob.matches(exact.path, path: "oddXname1.json"))
        let photos = KeyPolicy(.prefix("photos/"), .automatic(maxBytes: 1000)).rule
        #expect(photos.sync == .auto && photos.maxBytes == 1000)
        #expect(Glob.matches(photos.path, path: "photos/2026/a.jpg"))
        #expect(!Glob.matches(photos.path, path: "photos.json"))
        let secret = KeyPolicy(.key("secret.json"), .never).rule
        #expect(secret.sync == .never)
        #expect(Glob.matches(secret.path, path: "secret.json"))
        #expect(!Glob.matches(secret.path, path: "a/b/secret.json"))  // a key is one path, not a name anywhere
    }

    @Test func keyMatches() {
        #expect(KeyMatch.key("a.json").matches("a.json"))
        #expect(!KeyMatch.key("a.json").matches("a.json.bak"))
        #expect(KeyMatch.prefix("workouts").matches("workouts/1.json"))
        #expect(KeyMatch.prefix("workouts/").matches("workouts/1.json"))
        #expect(!KeyMatch.prefix("workouts").matches("workouts.json"))
    }

    @Test func eventsSayWhichKeysChangedAndWhereFrom() {
        let mine = change(in: .committed(commit: "c", paths: ["a.json"], count: 1))
        #expect(mine?.paths == ["a.json"] && mine?.complete == true && mine?.origin == .thisDevice)
        let many = change(in: .committed(commit: "c", paths: ["a.json"], count: 500))
        #expect(many?.complete == false)  // only the first paths are listed: every key looks again
        #expect(change(in: .received(peer: "watch", commit: nil, paths: ["b"], count: 1))?.origin == .peer("watch"))
        #expect(change(in: .conflictOpened(id: "c-1", path: "s.json"))?.origin == .conflict(id: "c-1"))
        #expect(change(in: .conflictResolved(id: "c-1", path: "s.json", strategy: "app", by: "watch"))?.origin == .resolution(by: "watch"))
        #expect(change(in: AgentEvent(.started(message: nil))) == nil)
    }

    @Test func bytesThatAreNotTheTypeAreKeptRaw() {
        let update = state(Array("oops".utf8), ValueCoder<Settings>.json, origin: .peer("watch"))
        #expect(update.value == nil)
        #expect(update.raw == Array("oops".utf8))
        #expect(update.decodeError != nil)
        #expect(!update.isDeleted)
        #expect(state(nil, ValueCoder<Settings>.json, origin: .thisDevice).isDeleted)
    }

    /// Under a prefix, a key that changed many times while the observer was busy waits as one
    /// update, its newest; keys come in the order they first changed.
    @Test func aSlowPrefixObserverGetsEachKeyOnceAtItsNewest() {
        let pending = PendingUpdates<Settings>()
        let json = ValueCoder<Settings>.json
        for goal in 0..<30 {
            pending.put(KeyUpdate(key: "log/a.json", update: state(try? json.encode(Settings(theme: "a", goal: goal)), json, origin: .thisDevice)))
            if goal == 3 || goal == 20 {
                pending.put(KeyUpdate(key: "log/b.json", update: state(try? json.encode(Settings(theme: "b", goal: goal)), json, origin: .peer("watch"))))
            }
        }
        let first = pending.take(), second = pending.take()
        #expect(first?.key == "log/a.json" && first?.update.value?.goal == 29)
        #expect(second?.key == "log/b.json" && second?.update.value?.goal == 20 && second?.update.origin == .peer("watch"))
        #expect(pending.take() == nil)
    }

    /// A typed resolver sees the base and every version decoded, the undecodable one as raw bytes;
    /// its answer becomes the agent's decision; one that throws declines (the record stays open).
    @Test func typedResolversDecideAndAThrowingOneDeclines() throws {
        let dir = try TempDirectory("kit")
        let agent = try SyncAgent.client(configFile: try deviceConfig(dir))
        let seen = Seen()
        agent.onConflict(.key("s.json"), as: Settings.self) { conflict in
            seen.set(conflict)
            return .value(Settings(theme: "merged", goal: conflict.versions.compactMap(\.value?.goal).max() ?? 0))
        }
        agent.onConflict(.prefix("broken/"), as: Settings.self) { _ in throw CocoaError(.fileReadCorruptFile) }
        agent.onConflict(.key("both.json"), as: Settings.self) { _ in .keepBoth }

        let json = ValueCoder<Settings>.json
        let record = Self.record(path: "s.json", devices: ["phone", "watch"])
        let decision = agent.resolvers.resolve(record, base: try json.encode(Settings(theme: "base", goal: 1)),
                                               versions: ["phone": try json.encode(Settings(theme: "p", goal: 40)), "watch": Array("garbage".utf8)])
        #expect(decision == .bytes(try json.encode(Settings(theme: "merged", goal: 40))))
        let conflict = try #require(seen.value)
        #expect(conflict.base?.value == Settings(theme: "base", goal: 1))
        #expect(conflict.versions.map(\.device) == ["phone", "watch"])
        #expect(conflict.versions[1].value == nil)
        #expect(conflict.versions[1].raw == Array("garbage".utf8))
        #expect(conflict.versions[1].decodeError != nil)

        #expect(agent.resolvers.resolve(Self.record(path: "broken/x.json", devices: ["phone", "watch"]), base: nil, versions: [:]) == nil)
        #expect(agent.resolvers.resolve(Self.record(path: "both.json", devices: ["phone", "watch"]), base: nil, versions: [:]) == .both)
        #expect(agent.resolvers.resolve(Self.record(path: "other.json", devices: ["phone", "watch"]), base: nil, versions: [:]) == nil)
    }

    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var conflict: Conflict<Settings>?
        func set(_ c: Conflict<Settings>) { lock.withLock { conflict = c } }
        var value: Conflict<Settings>? { lock.withLock { conflict } }
    }

    static func record(path: String, devices: [String]) -> ConflictRecord {
        ConflictRecord(id: "c-test", path: path, pathBytes: ConflictRecord.hex(Array(path.utf8)), kind: .bothModified, status: .open,
                       detectedAt: "2026-11-26T00:00:00Z", detectedBy: "phone", base: .init(blob: String(repeating: "a", count: 40)),
                       versions: devices.map { .init(device: $0, commit: String(repeating: "b", count: 40), blob: String(repeating: "c", count: 40),
                                                     mode: 0o100644, time: "2026-11-26T00:00:0\(devices.firstIndex(of: $0)!)Z", tree: nil) },
                       current: devices.last, resolution: nil)
    }
}
