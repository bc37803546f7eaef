import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// Two devices' stores side by side, synced by real fetches over file:// URLs.
final class TwoDevices {
    let directory: TempDirectory
    var root: FilePath { directory.root }
    let phone: Device
    let watch: Device

    /// A device's directories (`TempDevice`) and its store.
    final class Device {
        let dirs: TempDevice
        var name: String { dirs.name }
        var data: FilePath { dirs.data }
        var gitDir: FilePath { dirs.gitDir }
        let store: Store
        init(_ name: String, root: FilePath) throws {
            dirs = try TempDevice(name, in: root)
            store = try Store.openOrCreate(device: name, data: dirs.data, gitDir: dirs.gitDir)
        }
        func write(_ rel: String, _ text: String, mtime: Int? = nil) throws { try dirs.write(rel, text, mtime: mtime) }
        func read(_ rel: String) -> String? {
            try? String(contentsOfFile: data.appending(rel).string, encoding: .utf8)
        }
        func commit(_ paths: FilePath...) throws { _ = try store.commit(paths: Set(paths)) }
        func pull(from other: Device) throws -> SyncOutcome {
            try Store.fetch(gitDir: gitDir, data: data, peer: other.name, url: "file://\(other.gitDir)")
            return try store.integrate(peer: other.name)
        }
    }

    init() throws {
        directory = try TempDirectory("synctests")
        phone = try Device("phone", root: directory.root)
        watch = try Device("watch", root: directory.root)
    }
}

@Suite struct SyncTests {
    @Test func fastForwardIntoAnEmptyStoreThenBack() throws {
        let t = try TwoDevices()
        try t.phone.write("a.txt", "from phone")
        try t.phone.commit("a.txt")
        #expect(try t.watch.pull(from: t.phone).action == .fastForward)
        #expect(t.watch.read("a.txt") == "from phone")
        #expect(try t.watch.store.head() == t.phone.store.head())
        try t.watch.write("a.txt", "edited on watch")
        try t.watch.commit("a.txt")
        #expect(try t.phone.pull(from: t.watch).action == .fastForward)
        #expect(t.phone.read("a.txt") == "edited on watch")
    }

    /// A big apply (many paths, on every core) replaces each old file through a temporary, and
    /// removes the old files only once every new one has landed: none is left behind.
    @Test func aBigApplyOfModifiedFilesLeavesNoTemporaries() throws {
        let t = try TwoDevices()
        let paths = (0..<300).map { FilePath("d\($0 % 7)/f\($0).txt") }
        for (i, path) in paths.enumerated() { try t.phone.write(path.string, "file \(i) version 0\n") }
        _ = try t.phone.store.commit(paths: Set(paths))
        _ = try t.watch.pull(from: t.phone)
        for (i, path) in paths.enumerated() { try t.phone.write(path.string, "file \(i) version 1, longer\n") }
        _ = try t.phone.store.commit(paths: Set(paths))
        #expect(try t.watch.pull(from: t.phone).action == .fastForward)
        for (i, path) in paths.enumerated() { #expect(t.watch.read(path.string) == "file \(i) version 1, longer\n") }
        let names = FileManager.default.enumerator(atPath: t.watch.data.string)?.compactMap { $0 as? String } ?? []
        #expect(names.filter { $0.contains(".syncagent-") }.isEmpty)
        #expect(names.count == 300 + 7)
    }

    @Test func independentStoresMergeAndConverge() throws {
        let t = try TwoDevices()
        try t.phone.write("p.txt", "p")
        try t.phone.commit("p.txt")
        try t.watch.write("w.txt", "w")
        try t.watch.commit("w.txt")
        #expect(try t.phone.pull(from: t.watch).action == .merged)
        #expect(try t.watch.pull(from: t.phone).action == .fastForward)
        #expect(t.watch.read("p.txt") == "p")
        #expect(t.phone.read("w.txt") == "w")
        #expect(try t.phone.store.head() == t.watch.store.head())
        // Idle: nothing more to do on either side.
        #expect(try t.phone.pull(from: t.watch).action == .upToDate)
        #expect(try t.watch.pull(from: t.phone).action == .upToDate)
    }

    /// A merge flushes the objects it made, not the whole file system (`mergeWrites`): every
    /// object the merge commit reaches that neither side's tip reaches must be among them, text
    /// that libgit2 merged from both sides' edits of one file included.
    @Test func aMergeFlushesEveryObjectItMade() throws {
        let t = try TwoDevices()
        let lines = (1...12).map { "line \($0)\n" }
        try t.phone.write("notes/a.txt", lines.joined())
        try t.phone.write("deep/er/b.txt", "b\n")
        try t.phone.commit("notes/a.txt", "deep/er/b.txt")
        _ = try t.watch.pull(from: t.phone)
        var mine = lines, theirs = lines
        mine[0] = "line 1, phone\n"
        theirs[11] = "line 12, watch\n"
        try t.phone.write("notes/a.txt", mine.joined())
        try t.phone.write("deep/er/p.txt", "p\n")
        try t.phone.commit("notes/a.txt", "deep/er/p.txt")
        try t.watch.write("notes/a.txt", theirs.joined())
        try t.watch.write("deep/w.txt", "w\n")
        try t.watch.commit("notes/a.txt", "deep/w.txt")
        let ours = try #require(try t.phone.store.head())
        let theirTip = try #require(try t.watch.store.head())
        #expect(try t.phone.pull(from: t.watch).action == .merged)
        let merged = try #require(try t.phone.store.head())
        let store = t.phone.store
        let changes = try store.repo.diffTrees(try store.commitInfo(ours).tree, try store.commitInfo(merged).tree)
        let flushed = try #require(store.mergeWrites(ours: try store.commitInfo(ours).tree, theirs: try store.commitInfo(theirTip).tree,
                                                     result: try store.commitInfo(merged).tree, changes: changes, commit: merged))
        let made = try git(t.phone.gitDir, ["rev-list", "--objects", merged.hex, "^" + ours.hex, "^" + theirTip.hex])
        let madeIDs = made.split(separator: "\n").map { String($0.prefix(40)) }
        #expect(madeIDs.count >= 4, "the commit, the root, deep and the merged notes/a.txt at least: \(madeIDs)")
        // Exactly those: what either side holds at the same path (deep/w.txt, deep/er) is durable already.
        #expect(Set(madeIDs) == Set(flushed.map(\.hex)), "made \(madeIDs), flushed \(flushed.map(\.hex))")
        #expect(t.phone.read("notes/a.txt") == ([mine[0]] + lines[1..<11] + [theirs[11]]).joined())
    }

    @Test func crossedCleanMergesAreOneJoinCommit() throws {
        let t = try TwoDevices()
        try t.phone.write("p", "1")
        try t.phone.commit("p")
        try t.watch.write("w", "2")
        try t.watch.commit("w")
        let phoneTip = try t.phone.store.head()!, watchTip = try t.watch.store.head()!
        try Store.fetch(gitDir: t.phone.gitDir, data: t.phone.data, peer: "watch", url: "file://\(t.watch.gitDir)")
        try Store.fetch(gitDir: t.watch.gitDir, data: t.watch.data, peer: "phone", url: "file://\(t.phone.gitDir)")
        // Both merge at once, nothing to decide: the very same join commit, whose parents are the two tips.
        #expect(try t.phone.store.integrate(peer: "watch").action == .merged)
        #expect(try t.watch.store.integrate(peer: "phone").action == .merged)
        #expect(try t.phone.store.head() == t.watch.store.head())
        let join = try t.phone.store.commitInfo(try t.phone.store.head()!)
        #expect(Set(join.parents) == [phoneTip, watchTip])
        #expect(join.author.email == Store.joinEmail)
        // Nothing more to do on either side.
        #expect(try t.phone.pull(from: t.watch).action == .upToDate)
        #expect(try t.watch.pull(from: t.phone).action == .upToDate)
    }

    @Test func aJoinOfTipsMainHoldsIsNothingNew() throws {
        // Three devices: the watch joins phone + tablet, the phone then joins all three. The watch's
        // partial join is no ancestor of the phone's, but brings nothing: up to date, no new merge.
        let t = try TwoDevices()
        let tablet = try TwoDevices.Device("tablet", root: t.root)
        try t.phone.write("p", "1"); try t.phone.commit("p")
        try t.watch.write("w", "2"); try t.watch.commit("w")
        try tablet.write("t", "3"); try tablet.commit("t")
        #expect(try t.watch.pull(from: tablet).action == .merged)
        #expect(try t.phone.pull(from: t.watch).action == .merged)
        #expect(try t.phone.pull(from: tablet).action == .upToDate)
        let watchJoin = try t.watch.store.head()!
        try t.watch.write("w2", "4"); try t.watch.commit("w2")
        #expect(try t.phone.pull(from: t.watch).action == .merged)
        let head = try t.phone.store.head()!
        #expect(try !t.phone.store.commitInfo(head).parents.contains(watchJoin))
        #expect(try t.phone.store.covers(head, watchJoin))
        #expect(t.phone.read("t") == "3" && t.phone.read("w2") == "4" && t.phone.read("p") == "1")
    }

    @Test func sameFileChangedOnBothIsOneRecordWithTheSameIdAndNewerBytes() throws {
        let t = try TwoDevices()
        try t.phone.write("notes.txt", "base\n")
        try t.phone.commit("notes.txt")
        _ = try t.watch.pull(from: t.phone)
        try t.phone.write("notes.txt", "phone's version\n", mtime: 1_800_000_000)
        try t.phone.commit("notes.txt")
        try t.watch.write("notes.txt", "watch's newer version\n", mtime: 1_800_000_100)
        try t.watch.commit("notes.txt")

        let fromWatch = try t.phone.pull(from: t.watch)
        #expect(fromWatch.action == .merged)
        let record = try #require(fromWatch.newConflicts.first)
        #expect(record.kind == .bothModified)
        #expect(record.current == "watch")
        #expect(t.phone.read("notes.txt") == "watch's newer version\n")
        #expect(!t.phone.read("notes.txt")!.contains("<<<<"))

        let fromPhone = try t.watch.pull(from: t.phone)
        #expect(t.watch.read("notes.txt") == "watch's newer version\n")
        let watchRecords = try t.watch.store.conflicts()
        #expect(watchRecords.map(\.id) == [record.id])
        #expect(fromPhone.newConflicts.allSatisfy { $0.id == record.id })
        // Every version stays retrievable.
        let phoneBlob = try #require(record.versions.first { $0.device == "phone" }?.blob)
        #expect(try t.watch.store.blob(#require(Oid(hex: phoneBlob))) == Array("phone's version\n".utf8))
    }

    /// The idle safety poll of a peer on this machine skips its round only when nothing could
    /// come of it: the peer's main is ours and its conflict records are the ones fetched last.
    @Test func inStepOnlyWhenThePeersMainAndRecordsAreOurs() throws {
        let t = try TwoDevices()
        // The watch's refs as the agent's safety poll reads them (once, for its unseen-move check too).
        func inStep() -> Bool {
            let theirs = RefSnapshot.readPeer(gitDir: t.watch.gitDir, hub: false)
            return theirs.whole && Store.inStep(gitDir: t.phone.gitDir, withPeer: "watch", peerRefs: theirs.snapshot)
        }
        #expect(!inStep(), "the watch has no main yet")
        try t.phone.write("notes.txt", "base\n")
        try t.phone.commit("notes.txt")
        #expect(!inStep(), "the watch has no main yet")
        _ = try t.watch.pull(from: t.phone)
        #expect(!inStep(), "the phone never fetched the watch's conflict records")
        _ = try t.phone.pull(from: t.watch)
        #expect(inStep())
        // The watch commits: its main moves.
        try t.watch.write("notes.txt", "watch's version\n", mtime: 1_800_000_100)
        try t.watch.commit("notes.txt")
        #expect(!inStep(), "the watch's main moved")
        _ = try t.phone.pull(from: t.watch)
        #expect(inStep())
        // Ours moves: a round would not fetch anything, but the stores differ: a round.
        try t.phone.write("other.txt", "phone\n")
        try t.phone.commit("other.txt")
        #expect(!inStep(), "the phone's main moved")
        _ = try t.watch.pull(from: t.phone)
        #expect(inStep())
        // The watch's conflict records move (a record made or settled there) while the mains
        // stay equal: a round would fetch them.
        let records = try #require(try git(t.watch.gitDir, ["rev-parse", "refs/syncagent/conflicts"]).split(separator: "\n").first)
        let root = try #require(try git(t.watch.gitDir, ["rev-list", "--max-parents=0", "refs/heads/main"]).split(separator: "\n").first)
        _ = try git(t.watch.gitDir, ["update-ref", "refs/syncagent/conflicts", String(root)])
        #expect(!inStep(), "the watch's records moved after the phone's last fetch")
        _ = try git(t.watch.gitDir, ["update-ref", "refs/syncagent/conflicts", String(records)])
        #expect(inStep())
        // A peer whose store went away is never in step.
        try FileManager.default.removeItem(atPath: t.watch.gitDir.appending("refs").string)
        #expect(!inStep())
    }

    @Test func modificationBeatsDeletion() throws {
        let t = try TwoDevices()
        try t.phone.write("f", "v1")
        try t.phone.commit("f")
        _ = try t.watch.pull(from: t.phone)
        try FileManager.default.removeItem(atPath: t.phone.data.appending("f").string)
        try t.phone.commit("f")
        try t.watch.write("f", "v2", mtime: 1_000)  // older than the deletion, still wins
        try t.watch.commit("f")
        let out = try t.phone.pull(from: t.watch)
        #expect(out.newConflicts.map(\.kind) == [.modifiedDeleted])
        #expect(t.phone.read("f") == "v2")
    }

    /// Seed 103 of the power-cut suite, cut 6: the phone committed a new file and the watch
    /// fetched it; the cut took back the phone's ref move and emptied the file, which the phone
    /// then held (a new file a power cut may have broken). Taking the watch's `main` meets it: the
    /// empty file stays on the phone's disk, held, and never goes into `main`.
    @Test func aFileAPowerCutLeftEmptyIsNotSharedByAMergeThatMeetsIt() throws {
        let t = try TwoDevices()
        try t.phone.write("base.txt", "base")
        try t.phone.commit("base.txt")
        _ = try t.watch.pull(from: t.phone)
        try t.watch.write("p.txt", "the phone's words, as the watch fetched them")
        try t.watch.commit("p.txt")
        try t.phone.write("p.txt", "", mtime: 1_700_000_000)  // what the cut left
        t.phone.store.holdPowerCutLeft(["p.txt"])
        let out = try t.phone.pull(from: t.watch)
        #expect(out.applied.keptLocal.isEmpty)
        #expect(out.newConflicts.isEmpty)
        #expect(t.phone.read("p.txt") == "")
        let main = try #require(try t.phone.store.head())
        let entry = try #require(try t.phone.store.repo.entry(at: "p.txt", inTree: t.phone.store.repo.commit(main).tree))
        #expect(try t.phone.store.repo.blobData(entry.oid) == Array("the phone's words, as the watch fetched them".utf8))
        #expect(t.phone.store.powerCutLeft() == ["p.txt"])
        // Then the watch's version goes on disk (the agent does this after every merge), and the
        // empty file the cut left is kept in the store.
        let taken = try #require(try t.phone.store.takeIncomingOverPowerCutLeft(out.applied.localChanges))
        #expect(taken.paths == ["p.txt"])
        #expect(t.phone.read("p.txt") == "the phone's words, as the watch fetched them")
        #expect(t.phone.store.powerCutLeft().isEmpty)
        let kept = try #require(taken.kept)
        // The kept commit lists each version it keeps: the empty blob, at p.txt.
        #expect(try git(t.phone.store.gitDir, ["log", "-1", "--format=%b", kept.hex]) == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 p.txt")
        #expect(try t.phone.store.takeIncomingOverPowerCutLeft(["p.txt"]) == nil)
    }

    @Test func uncommittedLocalEditIsNeverOverwritten() throws {
        let t = try TwoDevices()
        try t.phone.write("f.txt", "v1")
        try t.phone.write("other.txt", "o1")
        try t.phone.commit("f.txt", "other.txt")
        _ = try t.watch.pull(from: t.phone)
        try t.watch.write("f.txt", "watch v2")
        try t.watch.write("other.txt", "watch o2")
        try t.watch.commit("f.txt", "other.txt")
        // The phone's user edits f.txt; the agent has not committed it yet.
        try t.phone.write("f.txt", "phone's unsaved work")
        let out = try t.phone.pull(from: t.watch)
        // Checked right before it is replaced: the unsaved work stays, the rest is applied.
        #expect(out.applied.keptLocal == ["f.txt"])
        #expect(t.phone.read("f.txt") == "phone's unsaved work")
        #expect(t.phone.read("other.txt") == "watch o2")
        // The unsaved work joined the merge as a conflict with the watch's version; both are kept.
        #expect(out.newConflicts.map(\.path) == ["f.txt"])
        #expect(out.newConflicts.first?.current == "phone")
        #expect(Set(out.newConflicts.first?.versions.map(\.device) ?? []) == ["phone", "watch"])
        #expect(try git(t.phone.store.gitDir, ["show", "HEAD:f.txt"]) == "phone's unsaved work")
    }

    @Test func winnerRule() {
        let a = Oid.hashing([1]), b = Oid.hashing([2])
        #expect(ConflictRecord.winner([("phone", a, 10), ("watch", b, 5)]) == "phone")
        #expect(ConflictRecord.winner([("phone", a, 5), ("watch", b, 5)]) == "watch")
        #expect(ConflictRecord.winner([("phone", nil, 50), ("watch", b, 5)]) == "watch")
    }

    @Test func recordIdNamesThePathAndItsGeneration() {
        let first = ConflictRecord.id(path: "x", generation: 0)
        #expect(first == ConflictRecord.id(path: "x", generation: 0))
        #expect(first.hasPrefix("c-") && first.count == 14)
        #expect(first != ConflictRecord.id(path: "y", generation: 0))
        #expect(first != ConflictRecord.id(path: "x", generation: 1))
    }

    /// Runs git on a store and returns its trimmed stdout.
    func git(_ gitDir: FilePath, _ args: [String], input: String = "") throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        p.arguments = ["--git-dir=\(gitDir)"] + args
        p.environment = ["GIT_AUTHOR_NAME": "watch", "GIT_AUTHOR_EMAIL": "w@x", "GIT_COMMITTER_NAME": "watch",
                         "GIT_COMMITTER_EMAIL": "w@x", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"]
        let inPipe = Pipe(), outPipe = Pipe()
        p.standardInput = inPipe
        p.standardOutput = outPipe
        try p.run()
        inPipe.fileHandleForWriting.write(Data(input.utf8))
        try inPipe.fileHandleForWriting.close()
        let out = outPipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The device commits `fine.txt`, then `main` moves (by the git CLI) to a commit on top whose
    /// root tree holds `fine.txt` and the entries `entries` returns (mktree lines), given the id of
    /// a blob holding "owned\n".
    func craftHistory(on device: TwoDevices.Device, _ entries: (String) throws -> String) throws {
        try device.write("fine.txt", "fine")
        try device.commit("fine.txt")
        let blob = try git(device.gitDir, ["hash-object", "-w", "--stdin"], input: "owned\n")
        let root = try git(device.gitDir, ["mktree"], input: try entries(blob) + "100644 blob \(blob)\tfine.txt\n")
        let head = try git(device.gitDir, ["rev-parse", "HEAD"])
        let commit = try git(device.gitDir, ["commit-tree", root, "-p", head, "-m", "evil"])
        _ = try git(device.gitDir, ["update-ref", "refs/heads/main", commit])
    }

    @Test(arguments: ["..", ".git", ".GIT"])
    func hostileTreesAreRefused(_ evilName: String) throws {
        let t = try TwoDevices()
        // A crafted history: a directory entry named `..` (or `.git`) holding a file. Checked out
        // naively it would write outside the data directory.
        try craftHistory(on: t.watch) { blob in
            let inner = try git(t.watch.gitDir, ["mktree"], input: "100644 blob \(blob)\tescape\n")
            return "040000 tree \(inner)\t\(evilName)\n"
        }

        do {
            _ = try t.phone.pull(from: t.watch)
            Issue.record("a history with a '\(evilName)' entry must be refused")
        } catch let refusal as SyncRefusal {
            #expect(refusal.peer == "watch")
            #expect(refusal.description.contains(evilName))
        }
        #expect(!FileManager.default.fileExists(atPath: t.phone.data.appending("escape").string))
        #expect(!FileManager.default.fileExists(atPath: t.root.appending("phone/escape").string))
        #expect(try t.phone.store.head() == nil)
    }

    /// A first sync walks the peer's tree in chunks (never its whole list of paths): every chunk
    /// lands, and the index, `main` and the data directory end as one.
    @Test func aFirstSyncInChunksWritesEveryPath() throws {
        let t = try TwoDevices()
        t.phone.store.firstSyncChunk = 16
        for i in 0..<100 { try t.watch.write("d\(i % 7)/f\(i).txt", "file \(i)\n") }
        try t.watch.write("top.txt", "top\n")
        _ = try t.watch.store.commit(paths: Set((0..<100).map { FilePath("d\($0 % 7)/f\($0).txt") } + [FilePath("top.txt")]))
        let outcome = try t.phone.pull(from: t.watch)
        #expect(outcome.action == .fastForward)
        #expect(outcome.applied.written == 101)
        #expect(outcome.applied.touchedCount == 101)
        for i in 0..<100 { #expect(t.phone.read("d\(i % 7)/f\(i).txt") == "file \(i)\n") }
        #expect(try t.phone.store.head() == t.watch.store.head())
        let index = try git(t.phone.gitDir, ["ls-files", "--stage"]).split(separator: "\n")
        #expect(index.count == 101)
        #expect(try git(t.phone.gitDir, ["--work-tree=\(t.phone.data)", "status", "--porcelain"]).isEmpty)
    }

    /// A first sync a kill interrupted (its journal left) is finished at the next start, walked
    /// in chunks like the first sync itself.
    @Test func anInterruptedFirstSyncIsFinishedInChunks() throws {
        let t = try TwoDevices()
        t.phone.store.firstSyncChunk = 8
        let paths = (0..<30).map { FilePath("d\($0 % 4)/f\($0).txt") }
        for (i, path) in paths.enumerated() { try t.watch.write(path.string, "file \(i)\n") }
        _ = try t.watch.store.commit(paths: Set(paths))
        try Store.fetch(gitDir: t.phone.gitDir, data: t.phone.data, peer: "watch", url: "file://\(t.watch.gitDir)")
        let target = try #require(try t.watch.store.head())
        t.phone.store.beginApply(target: target, expected: nil, peer: "watch")  // then killed
        let report = try #require(try t.phone.store.finishInterruptedApply())
        #expect(report.written == 30)
        #expect(try t.phone.store.head() == target)
        for (i, path) in paths.enumerated() { #expect(t.phone.read(path.string) == "file \(i)\n") }
    }

    /// A first sync is checked whole before its first chunk is written: a bad path at the end of
    /// the walk leaves the data directory as it was.
    @Test func aRefusedFirstSyncWritesNothing() throws {
        let t = try TwoDevices()
        t.phone.store.firstSyncChunk = 4
        try craftHistory(on: t.watch) { blob in
            let inner = try git(t.watch.gitDir, ["mktree"], input: "100644 blob \(blob)\tescape\n")
            let good = (0..<40).map { "100644 blob \(blob)\ta\(10 + $0).txt\n" }.joined()
            let dotGit = try git(t.watch.gitDir, ["mktree"], input: "040000 tree \(inner)\t.git\n")
            return good + "040000 tree \(dotGit)\tzz\n"  // zz/.git/escape: the walk's last path
        }
        #expect(throws: SyncRefusal.self) { try t.phone.pull(from: t.watch) }
        let left = try FileManager.default.contentsOfDirectory(atPath: t.phone.data.string)
        #expect(left.isEmpty, "written before the refusal: \(left.sorted())")
        #expect(try t.phone.store.head() == nil)
    }

    /// A crafted tree holding a link and a directory of the same name: the directory's files would
    /// be written through the link (outside the data directory). Refused, every such path named
    /// (the directories above each are looked at once per directory).
    @Test func pathsThroughALinkOfTheSameNameAreRefused() throws {
        let t = try TwoDevices()
        try craftHistory(on: t.watch) { blob in
            let target = try git(t.watch.gitDir, ["hash-object", "-w", "--stdin"], input: "..")
            let inner = try git(t.watch.gitDir, ["mktree"], input: "100644 blob \(blob)\tescape\n100644 blob \(blob)\tescape2\n")
            return "120000 blob \(target)\tlnk\n040000 tree \(inner)\tlnk\n"
        }
        do {
            _ = try t.phone.pull(from: t.watch)
            Issue.record("a history writing through a link must be refused")
        } catch let refusal as SyncRefusal {
            #expect(refusal.description.contains("lnk/escape: would be written through the symbolic link lnk"))
            #expect(refusal.description.contains("lnk/escape2: would be written through the symbolic link lnk"))
        }
        #expect(!FileManager.default.fileExists(atPath: t.root.appending("phone/escape").string))
        #expect(try t.phone.store.head() == nil)
    }

    /// The same two and three directories down, among 70 harmless directories (more than the
    /// trees `checkSafe` keeps open at once): each directory is looked up in its parent's tree, and
    /// only the paths under a link are named.
    @Test func pathsThroughANestedLinkAreRefusedAndOnlyThose() throws {
        let t = try TwoDevices()
        try craftHistory(on: t.watch) { blob in
            let target = try git(t.watch.gitDir, ["hash-object", "-w", "--stdin"], input: "..")
            let inner = try git(t.watch.gitDir, ["mktree"], input: "100644 blob \(blob)\tescape\n")
            let linked = try git(t.watch.gitDir, ["mktree"], input: "120000 blob \(target)\tlnk\n040000 tree \(inner)\tlnk\n100644 blob \(blob)\tok.txt\n")
            let deeper = try git(t.watch.gitDir, ["mktree"], input: "040000 tree \(linked)\tc\n")
            let plain = try git(t.watch.gitDir, ["mktree"], input: "040000 tree \(inner)\tsafe\n100644 blob \(blob)\tf.txt\n")
            let many = (0..<70).map { "040000 tree \(plain)\td\($0)\n" }.joined()
            return many + "040000 tree \(linked)\ta\n040000 tree \(deeper)\tb\n"
        }
        do {
            _ = try t.phone.pull(from: t.watch)
            Issue.record("a history writing through a link must be refused")
        } catch let refusal as SyncRefusal {
            let text = refusal.description
            #expect(text.contains("a/lnk/escape: would be written through the symbolic link a/lnk"))
            #expect(text.contains("b/c/lnk/escape: would be written through the symbolic link b/c/lnk"))
            #expect(!text.contains("ok.txt") && !text.contains("safe/escape"), "\(text)")
        }
        #expect(try t.phone.store.head() == nil)
    }
}
