import Foundation
import SyncCore
import SystemPackage
import TestSupport
import Testing

@testable import SyncAgentKit

/// An embedded agent on real temporary directories: a value set is committed when `set` returns,
/// read back, followed (current first, then each change with where it came from), and its status
/// says synced; a policy from code holds a key back until `send`.
@Suite struct EmbeddedTests {
    @Test func setGetFollowAndStatus() async throws {
        let dir = try TempDirectory("kit-embedded")
        let agent = try await SyncAgent.embedding(configFile: try deviceConfig(dir), policies: [KeyPolicy(.prefix("drafts/"), .manual)])
        let settings = agent.value("settings.json", as: Settings.self)
        #expect(try settings.get() == nil)

        // Before the agent runs: committed all the same.
        let first = try await settings.set(Settings(theme: "dark", goal: 30))
        #expect(first?.count == 40)
        #expect(try settings.get() == Settings(theme: "dark", goal: 30))
        #expect(try await settings.status().state == .synced)

        let running = Task { try await agent.run() }
        defer { running.cancel() }
        var updates = settings.updates().makeAsyncIterator()
        let current = await updates.next()
        #expect(current?.value == Settings(theme: "dark", goal: 30) && current?.origin == .current)

        try await settings.set(Settings(theme: "light", goal: 30))
        let next = await updates.next()
        #expect(next?.value == Settings(theme: "light", goal: 30))
        #expect(next?.origin == .thisDevice)

        // A file the app did not write through the kit is no value of the type: kept raw.
        try "not json".write(toFile: dir.path("phone/data/settings.json"), atomically: true, encoding: .utf8)
        let raw = await updates.next()
        #expect(raw?.value == nil && raw?.raw == Array("not json".utf8) && raw?.origin == .thisDevice)
        #expect(throws: SyncAgentError.self) { try settings.get() }

        // The manual policy from code: held, not committed, until sent.
        let draft = agent.value("drafts/note.json", as: Settings.self)
        #expect(try await draft.set(Settings(theme: "draft", goal: 1)) == nil)
        #expect(try await draft.status().state == .held(reason: "manual"))
        try await agent.send(["drafts/note.json"])
        #expect(try await draft.status().state == .synced)

        try await settings.delete()
        let gone = await updates.next()
        #expect(gone?.isDeleted == true)
    }

    /// "Sync now" waits for a round with every peer and says how each went; a peer that is not
    /// there answers with its code, and a timeout is an error of its own.
    @Test func syncNowSaysHowEachPeerWent() async throws {
        let dir = try TempDirectory("kit-sync-now")
        let ghost = dir.path("nowhere/store.git")
        let agent = try await SyncAgent.embedding(configFile: try deviceConfig(dir, extra: """

            [[peer]]
            name = "ghost"
            url = "\(ghost)"
            """))
        let running = Task { try await agent.run() }
        defer { running.cancel() }
        let results = try await agent.syncNow(timeout: .seconds(600))
        #expect(results.map(\.peer) == ["ghost"])
        #expect(results.first?.errorCode == "not-found", "\(results)")
        #expect(results.first?.error?.contains(ghost) == true)
    }

    /// Sets from many tasks at once, in one directory: every one lands and is committed (temporary
    /// names are unique across the process).
    @Test func concurrentSetsAllLand() async throws {
        let dir = try TempDirectory("kit-concurrent")
        let agent = try await SyncAgent.embedding(configFile: try deviceConfig(dir))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<16 {
                group.addTask { try await agent.value("many/\(i).json", as: Settings.self).set(Settings(theme: "t\(i)", goal: i)) }
            }
            try await group.waitForAll()
        }
        for i in 0..<16 {
            #expect(try agent.value("many/\(i).json", as: Settings.self).get() == Settings(theme: "t\(i)", goal: i))
            #expect(try await agent.value("many/\(i).json", as: Settings.self).status().state == .synced)
        }
    }

    /// A prefix observer that only starts reading after many changes still ends on every key's
    /// last value, and the observation ends when dropped.
    @Test func aPrefixObserverEndsOnTheLastValues() async throws {
        let dir = try TempDirectory("kit-prefix")
        let agent = try await SyncAgent.embedding(configFile: try deviceConfig(dir))
        let running = Task { try await agent.run() }
        defer { running.cancel() }
        let updates = agent.updates(under: "log/", as: Settings.self)
        for goal in 0..<20 { try await agent.value("log/a.json", as: Settings.self).set(Settings(theme: "a", goal: goal)) }
        try await agent.value("log/b.json", as: Settings.self).set(Settings(theme: "b", goal: 1))
        var last: [String: Int] = [:]
        var told = 0
        for await change in updates {
            told += 1
            last[change.key] = change.update.value?.goal
            if last["log/a.json"] == 19 && last["log/b.json"] == 1 { break }
        }
        #expect(last == ["log/a.json": 19, "log/b.json": 1])
        #expect(told <= 22)
    }

    /// A client with no agent running commits each set under the agent's lock; sets from many
    /// tasks at once take turns for it, and all land.
    @Test func concurrentClientSetsWithNoAgentAllLand() async throws {
        let dir = try TempDirectory("kit-client")
        let config = try deviceConfig(dir)
        let agent = try SyncAgent.client(configFile: config)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<6 {
                group.addTask { try await agent.value("c/\(i).json", as: Settings.self).set(Settings(theme: "c", goal: i)) }
            }
            try await group.waitForAll()
        }
        for i in 0..<6 {
            #expect(try await agent.value("c/\(i).json", as: Settings.self).status().state == .synced)
        }
    }
}
