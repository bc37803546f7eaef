import FileSystem
import Foundation
import Git
@testable import ObjectStorage
import Glibc
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// Issue 43: what a power cut leaves in a store (names whose bytes never reached the disk) is
/// repaired before libgit2 opens it, and the files it emptied or sent back in time are told apart
/// from edits.
@Suite struct PowerCutRepairTests {
    @Test func emptyRefsAGarbledIndexAndZeroedObjectsAreCleared() throws {
        let f = try StoreFixture()
        try f.write("a.txt", "A")
        let head = try #require(try f.store.commit(paths: ["a.txt"]).commit)
        try f.store.flushIndex()
        // What the issue found after a cut: a zero-length ref, an index without its bytes, a loose
        // object full of zeros.
        let refs = f.gitDir.appending("refs/syncagent")
        try Files.makeDirectories(refs)
        try Files.create(refs.appending("conflicts"), bytes: [], executable: false)
        let index = f.gitDir.appending("index")
        let good = try Files.read(index)
        try Files.remove(index)
        try Files.create(index, bytes: good.prefix(good.count - 3) + [0, 0, 0], executable: false)
        let fan = f.gitDir.appending("objects/ab")
        try Files.makeDirectories(fan)
        try Files.create(fan.appending(String(repeating: "c", count: 38)), bytes: [UInt8](repeating: 0, count: 64), executable: false)

        // main too: its name reached the disk, its bytes did not; its reflog has the value.
        let main = f.gitDir.appending("refs/heads/main")
        try Files.remove(main)
        try Files.create(main, bytes: [UInt8](repeating: 0, count: 41), executable: false)

        let report = StoreRepair.repair(gitDir: f.gitDir, checkObjects: true)
        #expect(report.removedRefs.count == 1 && report.removedRefs[0].hasPrefix("refs/syncagent/conflicts"))
        #expect(report.restoredRefs.count == 1 && report.restoredRefs[0].hasPrefix("refs/heads/main"))
        #expect(report.indexRemoved == "its checksum does not match its content")
        #expect(report.removedObjects == ["ab" + String(repeating: "c", count: 38)])
        #expect(!report.lines.joined().contains(".syncagent-keep"))
        #expect(try gitFsck(f.gitDir) == 0)
        // The store opens and goes on: main is intact, the index is rebuilt from it.
        let store = try Store.openOrCreate(device: "phone", data: f.data, gitDir: f.gitDir)
        #expect(try store.headID() == head)
        try store.reconcileIndexWithHead()
        try f.write("b.txt", "B")
        #expect(try store.commit(paths: ["b.txt"]).commit != nil)
        // A store with nothing wrong is left alone.
        #expect(StoreRepair.repair(gitDir: f.gitDir, checkObjects: true).isEmpty)
    }

    /// Soak seed 5002, cut 53 (ext4's journal): a fetch's pack and index whose names and sizes
    /// reached the disk and whose bytes did not. `git fsck`: "wrong index v1 file size". Both go
    /// aside; an intact pack stays; the store opens.
    @Test func aPackWhoseBytesNeverReachedTheDiskIsSetAside() throws {
        let f = try StoreFixture()
        try f.write("a.txt", "A")
        let head = try #require(try f.store.commit(paths: ["a.txt"]).commit)
        // Two packs of blobs nothing names yet (what a fetch brings before its ref moves).
        func pack(_ text: String) throws -> String {
            let blob = String(decoding: try git(f.gitDir, ["hash-object", "-w", "--stdin"], input: Array(text.utf8)).out, as: UTF8.self)
            let name = String(decoding: try git(f.gitDir, ["pack-objects", f.gitDir.appending("objects/pack/pack").string],
                                              input: Array(blob.utf8)).out, as: UTF8.self)
            return name.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let damaged = try pack("fetched, never flushed\n")
        let intact = try pack("fetched and flushed\n")
        // The fetch's commit lives in the damaged pack only, and the peer's ref names it.
        let tree = String(decoding: try git(f.gitDir, ["rev-parse", "HEAD^{tree}"]).out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let fetched = String(decoding: try git(f.gitDir, ["commit-tree", tree, "-m", "the watch's"]).out, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let dir = f.gitDir.appending("objects/pack")
        for ext in ["pack", "idx"] { try Files.remove(dir.appending("pack-\(damaged).\(ext)")) }
        let repacked = String(decoding: try git(f.gitDir, ["pack-objects", dir.appending("pack").string], input: Array((fetched + "\n").utf8)).out,
                              as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try git(f.gitDir, ["prune-packed"]).status == 0)
        #expect(try git(f.gitDir, ["update-ref", "refs/remotes/watch/main", fetched]).status == 0)
        let damagedName = repacked
        for ext in ["pack", "idx"] {
            let file = dir.appending("pack-\(damagedName).\(ext)")
            let size = try Files.read(file).count
            try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.string)
            try Files.remove(file)
            try Files.create(file, bytes: [UInt8](repeating: 0, count: size), executable: false)
        }
        #expect(try gitFsck(f.gitDir) != 0)
        let report = StoreRepair.repair(gitDir: f.gitDir, checkObjects: true)
        #expect(report.removedPacks.count == 1 && report.removedPacks[0].hasPrefix("pack-\(damagedName)"))
        #expect(report.lines.contains { $0.contains("damaged pack") })
        #expect(FileManager.default.fileExists(atPath: dir.appending("pack-\(intact).idx").string))
        #expect(!FileManager.default.fileExists(atPath: dir.appending("pack-\(damagedName).idx").string))
        let store = try Store.openOrCreate(device: "phone", data: f.data, gitDir: f.gitDir)
        // The peer's ref names a commit that is gone with the pack: removed; the next fetch sets it.
        #expect(try store.dropMirrorRefsToMissingObjects() == ["refs/remotes/watch/main"])
        #expect(try gitFsck(f.gitDir) == 0)
        #expect(try store.headID() == head)
        #expect(StoreRepair.repair(gitDir: f.gitDir, checkObjects: true).isEmpty)
    }

    @Test func emptiedAndOlderFilesAreDamageNewerOnesAreEdits() throws {
        let f = try StoreFixture()
        try f.write("emptied.txt", "was here", mtime: 1_700_000_000)
        try f.write("older.txt", "version two", mtime: 1_700_000_100)
        try f.write("edited.txt", "before", mtime: 1_700_000_000)
        try f.write("copied.txt", "before", mtime: 1_700_000_000)
        try f.write("gone/never-flushed.txt", "made, never flushed", mtime: 1_700_000_000)
        try f.settle("emptied.txt", "older.txt", "edited.txt", "copied.txt", "gone/never-flushed.txt")
        _ = try f.store.commit(paths: ["emptied.txt", "older.txt", "edited.txt", "copied.txt", "gone/never-flushed.txt"])
        try f.store.flushIndex()
        // The cut: a file comes back empty, one zero-filled; one was edited before it, one copied
        // over with an old time (`cp -p`): edits, whatever their modification time.
        try f.write("emptied.txt", "", mtime: 1_700_000_000)
        try f.write("older.txt", "\0\0\0\0\0", mtime: 1_700_000_100)
        try f.write("copied.txt", "an old file copied over with its time", mtime: 1_600_000_000)
        try f.write("edited.txt", "after, made durable by its program", mtime: 1_700_000_200)
        try f.remove("gone")
        let damaged = try f.store.powerCutDamage(among: ["emptied.txt", "older.txt", "edited.txt", "copied.txt", "gone"])
        #expect(Set(damaged) == ["emptied.txt", "older.txt", "gone/never-flushed.txt"])
        let (report, kept) = try f.store.putBackCommitted(damaged)
        #expect(report.written == 3)
        #expect(f.device.read("gone/never-flushed.txt") == "made, never flushed")
        #expect(f.device.read("emptied.txt") == "was here")
        #expect(f.device.read("older.txt") == "version two")
        #expect(f.device.read("edited.txt") == "after, made durable by its program")
        #expect(f.device.read("copied.txt") == "an old file copied over with its time")
        // What the disk held is kept in the store.
        let keptCommit = try #require(kept)
        let shown = try git(f.gitDir, ["show", "--stat", keptCommit.hex])
        #expect(shown.status == 0)
    }

    /// Seed 7001, cut 15: a 4 MB photo written and committed, never flushed by its program; the cut
    /// kept its first 768 KiB. A prefix of the committed version is damage (the version comes back);
    /// a shorter file that is not its prefix, or a prefix of something never committed, is an edit.
    @Test func aFileCutShortToAPrefixOfItsCommittedVersionIsDamage() throws {
        let f = try StoreFixture()
        let photo = String((0..<200_000).map { _ in "0123456789abcdef".randomElement()! })
        try f.write("photo.jpg", photo, mtime: 1_700_000_000)
        try f.write("notes.txt", "a long note of many words", mtime: 1_700_000_000)
        try f.write("list.txt", "one\ntwo\nthree\n", mtime: 1_700_000_000)
        _ = try f.store.commit(paths: ["photo.jpg", "notes.txt", "list.txt"])
        try f.store.flushIndex()
        try f.write("photo.jpg", String(photo.prefix(65_536)), mtime: 1_700_000_100)
        try f.write("notes.txt", "a shorter note", mtime: 1_700_000_100)
        try f.write("list.txt", "one\ntwo\nthree\nfour\n", mtime: 1_700_000_100)
        let damaged = try f.store.powerCutDamage(among: ["photo.jpg", "notes.txt", "list.txt"])
        #expect(damaged == ["photo.jpg"])
        _ = try f.store.putBackCommitted(damaged)
        #expect(f.device.read("photo.jpg") == photo)
        #expect(f.device.read("notes.txt") == "a shorter note")
    }

    /// Seed 8000, cut 86 of a replay: a 3 MB photo the program was writing when the power went,
    /// never committed; the cut kept its first 768 KiB and it went to the watch as a new file. A
    /// new file that is empty, zero-filled or a whole number of 4 KiB pages is held (a torn
    /// write ends on a page); any other size, or a tracked file, is not. Held files stay held
    /// while they stay as they are, and leave the hold once changed or sent.
    @Test func aNewFileEndingOnAPageAfterACutIsHeldUntilItChanges() throws {
        let f = try StoreFixture()
        try f.write("tracked.bin", String(repeating: "t", count: 8192), mtime: 1_700_000_000)
        _ = try f.store.commit(paths: ["tracked.bin"])
        try f.store.flushIndex()
        try f.write("photos/torn.jpg", String(repeating: "p", count: 768 << 10), mtime: 1_700_000_100)
        try f.write("photos/whole.jpg", String(repeating: "w", count: (768 << 10) + 123), mtime: 1_700_000_100)
        try f.write("empty.txt", "", mtime: 1_700_000_100)
        try f.write("zeros.txt", "\0\0\0", mtime: 1_700_000_100)
        try f.write("tracked.bin", String(repeating: "u", count: 4096), mtime: 1_700_000_100)
        let paths: [FilePath] = ["photos", "empty.txt", "zeros.txt", "tracked.bin"]
        let held = try f.store.newFilesAPowerCutMayHaveBroken(among: paths)
        #expect(Set(held) == ["photos/torn.jpg", "empty.txt", "zeros.txt"])
        // Files changed after the machine came back are edits.
        #expect(try f.store.newFilesAPowerCutMayHaveBroken(among: paths, bootTime: 0).isEmpty)
        f.store.holdPowerCutLeft(held)
        #expect(f.store.stillAsPowerCutLeft(among: Set(held)) == Set(held))
        try f.write("photos/torn.jpg", String(repeating: "p", count: 3 << 20), mtime: 1_700_000_200)
        #expect(f.store.stillAsPowerCutLeft(among: Set(held), release: ["empty.txt"]) == ["zeros.txt"])
        #expect(f.store.powerCutLeft() == ["zeros.txt"])
    }

    /// Seed 4343's cut 32: a merge wrote version A (flushed), the user rewrote the file in place
    /// with B (never flushed), B was committed and fetched; the cut took the disk back to A with a
    /// change time the file system kept as the later one. A is an older version of `main`: damage.
    /// Writing `main`'s own version, or anything new, stays an edit.
    @Test func aFileTakenBackToAnEarlierCommittedVersionIsDamageWhateverItsTimes() throws {
        let f = try StoreFixture()
        try f.write("notes.txt", "A: what the merge wrote", mtime: 1_700_000_000)
        try f.write("other.txt", "one", mtime: 1_700_000_000)
        _ = try f.store.commit(paths: ["notes.txt", "other.txt"])
        try f.write("notes.txt", "B: the in-place rewrite", mtime: 1_700_000_100)
        try f.write("other.txt", "two", mtime: 1_700_000_100)
        _ = try f.store.commit(paths: ["notes.txt", "other.txt"])
        try f.store.flushIndex()
        // The cut: notes.txt holds A again, written now (its times say nothing); other.txt is
        // edited to something never committed.
        try f.write("notes.txt", "A: what the merge wrote", mtime: 1_700_000_200)
        try f.write("other.txt", "three", mtime: 1_700_000_200)
        let damaged = try f.store.powerCutDamage(among: ["notes.txt", "other.txt"])
        #expect(damaged == ["notes.txt"])
        _ = try f.store.putBackCommitted(damaged)
        #expect(f.device.read("notes.txt") == "B: the in-place rewrite")
        #expect(f.device.read("other.txt") == "three")
    }

    /// Seed 5000, cut 179: a file replaced (v2), committed, then renamed away, committed; the cut
    /// undid both (never flushed): the old name is back holding v1, the new name is gone. v1 at
    /// the old name is a version `main` held there before: it goes again; the new name comes back.
    @Test func aFileBackAtItsOldNameHoldingAnOlderVersionGoesAgain() throws {
        let f = try StoreFixture()
        try f.write("d/w.txt", "v1", mtime: 1_700_000_000)
        _ = try f.store.commit(paths: ["d/w.txt"])
        try f.write("d/w.txt", "v2 replaced", mtime: 1_700_000_100)
        _ = try f.store.commit(paths: ["d/w.txt"])
        try f.remove("d/w.txt")
        try f.write("d/p.txt", "v2 replaced", mtime: 1_700_000_100)
        _ = try f.store.commit(paths: ["d/w.txt", "d/p.txt"])
        try f.store.flushIndex()
        // The cut.
        try f.remove("d/p.txt")
        try f.write("d/w.txt", "v1", mtime: 1_700_000_000)
        let damaged = try f.store.powerCutDamage(among: ["d/w.txt", "d/p.txt"])
        #expect(Set(damaged) == ["d/w.txt", "d/p.txt"])
        _ = try f.store.putBackCommitted(damaged)
        #expect(f.device.read("d/w.txt") == nil)
        #expect(f.device.read("d/p.txt") == "v2 replaced")
    }

    @Test func aFileTheCutBroughtBackAfterItsDeletionGoesAgain() throws {
        let f = try StoreFixture()
        try f.write("old.txt", "deleted just before the cut")
        try f.write("new.txt", "never committed")
        _ = try f.store.commit(paths: ["old.txt"])
        try f.remove("old.txt")
        _ = try f.store.commit(paths: ["old.txt"])
        // The cut undid the unlink (never flushed); new.txt is an ordinary new file.
        try f.write("old.txt", "deleted just before the cut")
        let damaged = try f.store.powerCutDamage(among: ["old.txt", "new.txt"])
        #expect(damaged == ["old.txt"])
        _ = try f.store.putBackCommitted(damaged)
        #expect(f.device.read("old.txt") == nil)
        #expect(f.device.read("new.txt") == "never committed")
    }

    @Test func aSessionEndedByTheMachineIsToldFromOneEndedByAKill() throws {
        let dir = try TempDirectory()
        #expect(AgentSession.begin(state: dir.root, bootID: "boot-1") == false)  // first start
        #expect(AgentSession.begin(state: dir.root, bootID: "boot-1") == false)  // killed, same boot
        #expect(AgentSession.begin(state: dir.root, bootID: "boot-2") == true)   // the machine stopped under it
        AgentSession.confirm(state: dir.root, bootID: "boot-2")                  // the damage check ran
        AgentSession.end(state: dir.root, bootID: "boot-2")
        #expect(AgentSession.begin(state: dir.root, bootID: "boot-3") == false)  // a clean stop before the reboot
        // A process that stops before the check leaves it to the next one.
        AgentSession.end(state: dir.root, bootID: "boot-3")
        AgentSession.confirm(state: dir.root, bootID: "boot-3")
        #expect(AgentSession.begin(state: dir.root, bootID: "boot-4") == true)
        AgentSession.end(state: dir.root, bootID: "boot-4")
        #expect(AgentSession.begin(state: dir.root, bootID: "boot-4") == true)
    }
}
