import Foundation
import Git
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// An incoming version must never replace (or remove) bytes written after the apply checked the
/// path: the swap itself says what it replaced (seed 101 of the hub convergence suite lost a
/// program's write that landed between the check and the rename).
@Suite struct ApplyRaceTests {
    let t: TwoDevices
    let disk: DataDirectory
    let repo: Repository
    let old: ConflictSide
    let incoming: ConflictSide

    init() throws {
        t = try TwoDevices()
        disk = DataDirectory(root: t.phone.data)
        repo = t.phone.store.repo
        old = ConflictSide(oid: try repo.createBlob(Array("the version the merge planned to replace\n".utf8)), mode: EntryMode.file)
        incoming = ConflictSide(oid: try repo.createBlob(Array("the peer's version\n".utf8)), mode: EntryMode.file)
    }

    private func leftovers() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: t.phone.data.string).filter { $0.hasPrefix(".syncagent-") }
    }

    /// Writes `text` at `path` as the app would, then places the incoming version there, checked
    /// against `planned` (what the merge's check saw: nil, nothing there).
    private func placeAfterWrite(_ text: String, at path: FilePath, planned: ConflictSide?) throws -> DataDirectory.PlaceOutcome {
        try t.phone.write(path.string, text)
        var counter: UInt64 = 0
        return try disk.place(incoming, at: path, repo: repo, counter: &counter, displace: false) { displaced in
            disk.fileHolds(displaced, planned, entry: nil)
        }
    }

    @Test func aWriteAfterTheCheckIsNotReplaced() throws {
        let outcome = try placeAfterWrite("written by the app after the check\n", at: "notes.txt", planned: old)
        guard case .keptNewer = outcome else { Issue.record("replaced: \(outcome)"); return }
        #expect(t.phone.read("notes.txt") == "written by the app after the check\n")
        #expect(try leftovers().isEmpty)
    }

    @Test func theVersionTheCheckSawIsReplaced() throws {
        let outcome = try placeAfterWrite("the version the merge planned to replace\n", at: "notes.txt", planned: old)
        guard case .placed = outcome else { Issue.record("not placed: \(outcome)"); return }
        #expect(t.phone.read("notes.txt") == "the peer's version\n")
        #expect(try leftovers().isEmpty)
    }

    @Test func aFileCreatedAfterTheCheckIsNotReplaced() throws {
        let outcome = try placeAfterWrite("created by the app after the check\n", at: "new.txt", planned: nil)
        guard case .keptNewer = outcome else { Issue.record("replaced: \(outcome)"); return }
        #expect(t.phone.read("new.txt") == "created by the app after the check\n")
    }

    @Test func aRemovalKeepsAWriteAfterTheCheck() throws {
        try t.phone.write("gone.txt", "written by the app after the check\n")
        var counter: UInt64 = 1 << 60
        #expect(try !disk.remove("gone.txt", expected: [old], entry: nil, counter: &counter))
        #expect(t.phone.read("gone.txt") == "written by the app after the check\n")
        try t.phone.write("gone.txt", "the version the merge planned to replace\n")
        #expect(try disk.remove("gone.txt", expected: [old], entry: nil, counter: &counter))
        #expect(t.phone.read("gone.txt") == nil)
        #expect(try leftovers().isEmpty)
    }
}
