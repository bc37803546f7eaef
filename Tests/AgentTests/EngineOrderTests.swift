import Foundation
import Logging
import SyncCore
import SystemPackage
import TestSupport
import Testing

@testable import Agent

/// The engine's ordering, with its inputs given directly (no watcher, no peer thread, no sleeps):
/// a merge commits what changed on disk first, so an edit the engine was never told about becomes
/// a conflict with the peer's version, never a loss; a resolution arriving after a merge settles
/// the record that merge opened.
@Suite struct EngineOrderTests {
    struct Device {
        let dir: TempDevice
        let config: Config
        let session: Startup.Session

        init(_ name: String, in root: FilePath, peer: String) throws {
            dir = try TempDevice(name, in: root)
            let file = root.appending("\(name).toml")
            try """
            device = "\(name)"
            data = "\(dir.data)"
            state = "\(dir.root.appending("state"))"

            [[peer]]
            name = "\(peer)"
            url = "\(root.appending(peer).appending("state/store.git"))"
            """.write(toFile: file.string, atomically: true, encoding: .utf8)
            config = try Config.load(file: file)
            session = try Startup.openUnderLock(config: config, logger: Logger(label: "test"))
        }

        var engine: SyncEngine { session.engine }

        /// Fetches `peer` into this store on the test's thread (the agent does it on a fetch thread).
        func fetch(_ peer: Device) throws {
            try Store.fetch(gitDir: config.storePath, data: config.data, peer: peer.config.device,
                            url: "file://\(peer.config.storePath)")
        }
    }

    @Test func aMergeCommitsWhatChangedOnDiskFirst() async throws {
        let root = try TempDirectory("engine-order")
        let phone = try Device("phone", in: root.root, peer: "watch")
        let watch = try Device("watch", in: root.root, peer: "phone")

        try phone.dir.write("notes.txt", "base\n")
        await phone.engine.commit(.init(paths: ["notes.txt"]))
        try watch.fetch(phone)
        guard case .done = await watch.engine.integrate(peer: "phone") else { Issue.record("the first merge failed"); return }
        #expect(watch.dir.read("notes.txt") == "base\n")

        // The phone edits and commits; the watch edits too, and its engine is never told.
        try phone.dir.write("notes.txt", "phone's edit\n")
        await phone.engine.commit(.init(paths: ["notes.txt"]))
        try watch.dir.write("notes.txt", "watch's edit\n")
        try watch.fetch(phone)
        guard case .done(let outcome) = await watch.engine.integrate(peer: "phone") else { Issue.record("the merge failed"); return }

        // The watch's edit was committed before the merge (not found on disk during its apply): a
        // conflict with both versions, nothing lost.
        #expect(outcome.applied.keptLocal.isEmpty)
        #expect(outcome.newConflicts.count == 1)
        let record = try #require(outcome.newConflicts.first)
        #expect(record.path == "notes.txt")
        #expect(Set(record.versions.map(\.device)) == ["phone", "watch"])
        let store = try Store.open(device: "watch", data: watch.config.data, gitDir: watch.config.storePath)
        #expect(try store.versionBytes(record, version: "watch") == Array("watch's edit\n".utf8))
        #expect(try store.versionBytes(record, version: "phone") == Array("phone's edit\n".utf8))

        // A resolution after the merge settles the record it opened, and the disk follows it.
        let results = await watch.engine.resolve(targets: [RecordTarget(text: record.id)], all: false,
                                                 choice: ResolveChoiceArgument(keep: "phone", withFile: nil, delete: false))
        #expect(results.map(\.error) == [nil])
        #expect(watch.dir.read("notes.txt") == "phone's edit\n")
        #expect(try store.conflicts().isEmpty)
    }
}
