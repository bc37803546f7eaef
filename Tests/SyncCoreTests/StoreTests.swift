import FileSystem
import Foundation
import Git
@testable import ObjectStorage
import Glibc
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// One device's store on a real temporary directory (`TempDevice`), for the store's own tests.
final class StoreFixture {
    let device: TempDevice
    var root: FilePath { device.root }
    var data: FilePath { device.data }
    var gitDir: FilePath { device.gitDir }
    let store: Store

    init() throws {
        device = try TempDevice("phone")
        store = try Store.openOrCreate(device: "phone", data: device.data, gitDir: device.gitDir)
    }

    func write(_ rel: String, _ text: String, mtime: Int? = nil) throws { try device.write(rel, text, mtime: mtime) }
    func remove(_ rel: String) throws { try device.remove(rel) }

    /// Until the coarse clock is past the last change of these files: a commit from then on keeps
    /// their stat data (`Store.settledStat`), so a scan trusts them.
    func settle(_ rels: String...) throws { try settle(rels) }

    func settle(_ rels: [String]) throws {
        for rel in rels {
            let stat = try #require(try FileStat.of(data.appending(rel)))
            while Store.settledStat(stat, lookedAt: WriteStamp.coarseNow()) == nil { sched_yield() }
        }
    }

    /// path -> content of the files in HEAD.
    func headContents() throws -> [String: String] {
        guard let head = try store.head() else { return [:] }
        var out: [String: String] = [:]
        for f in try store.files(at: head) { out[f.path.string] = String(decoding: try store.blob(f.oid), as: UTF8.self) }
        return out
    }
}

@Suite struct StoreTests {
    @Test func commitsExactlyTheReportedPaths() throws {
        let f = try StoreFixture()
        try f.write("a.txt", "A")
        try f.write("b.txt", "B")
        let out = try f.store.commit(paths: ["a.txt"])
        #expect(out.commit != nil)
        // b.txt was not reported: the commit path does not scan.
        #expect(try f.headContents() == ["a.txt": "A"])
        #expect(out.summary.added == ["a.txt"])
    }

    @Test func emptyBatchesMakeNoCommit() throws {
        let f = try StoreFixture()
        #expect(try f.store.commit(paths: ["nothing-here"]).commit == nil)
        #expect(try f.store.head() == nil)
        try f.write("a", "1")
        let first = try #require(try f.store.commit(paths: ["a"]).commit)
        // Touching the file without changing it, or reporting it again, commits nothing.
        try f.write("a", "1")
        #expect(try f.store.commit(paths: ["a"]).commit == nil)
        #expect(try f.store.headID() == first)
    }

    @Test func authorIsDeviceAndTimeIsNewestMtime() throws {
        let f = try StoreFixture()
        try f.write("old", "1", mtime: 1_600_000_000)
        try f.write("new", "2", mtime: 1_700_000_000)
        let id = try #require(try f.store.commit(paths: ["old", "new"]).commit)
        let info = try f.store.commitInfo(id.oid)
        #expect(info.author.name == "phone")
        #expect(info.author.time == 1_700_000_000)
        #expect(info.message.hasPrefix("phone: 2 added\n\n"))
    }

    @Test func messageListsRenamesDeletesAndCountsThePastLimit() throws {
        let f = try StoreFixture()
        try f.write("keep", "k")
        try f.write("from", "moving content")
        try f.write("doomed", "d")
        _ = try f.store.commit(paths: ["keep", "from", "doomed"])
        try FileManager.default.moveItem(atPath: f.data.appending("from").string, toPath: f.data.appending("to").string)
        try f.remove("doomed")
        try f.write("keep", "changed")
        let id = try #require(try f.store.commit(paths: ["from", "to", "doomed", "keep"]).commit)
        let message = try f.store.commitInfo(id.oid).message
        #expect(message.hasPrefix("phone: 1 modified, 1 deleted, 1 renamed\n"))
        #expect(message.contains("renamed: from -> to"))
        #expect(message.contains("deleted: doomed"))
        #expect(message.contains("modified: keep"))

        for i in 0..<30 { try f.write("many/\(i)", "\(i)") }
        let bulk = try #require(try f.store.commit(paths: Set((0..<30).map { FilePath("many/\($0)") })).commit)
        let bulkMessage = try f.store.commitInfo(bulk.oid).message
        #expect(bulkMessage.hasPrefix("phone: 30 added"))
        #expect(bulkMessage.contains("... and 10 more"))
    }

    @Test func directoryReplacedByFileAndBack() throws {
        let f = try StoreFixture()
        try f.write("d/x", "1")
        try f.write("d/y/z", "2")
        _ = try f.store.commit(paths: ["d/x", "d/y/z"])
        try f.remove("d")
        try f.write("d", "file now")
        _ = try f.store.commit(paths: ["d/x", "d/y/z", "d"])
        #expect(try f.headContents() == ["d": "file now"])
        try f.remove("d")
        try f.write("d/again", "dir again")
        _ = try f.store.commit(paths: ["d", "d/again"])
        #expect(try f.headContents() == ["d/again": "dir again"])
    }

    @Test func deletedDirectoryReportedAloneRemovesEverythingUnderIt() throws {
        let f = try StoreFixture()
        try f.write("dir/a", "1")
        try f.write("dir/sub/b", "2")
        try f.write("other", "3")
        _ = try f.store.commit(paths: ["dir/a", "dir/sub/b", "other"])
        try f.remove("dir")
        let out = try f.store.commit(paths: ["dir"])
        #expect(try f.headContents() == ["other": "3"])
        #expect(Set(out.summary.deleted) == ["dir/a", "dir/sub/b"])
    }

    @Test func specialFilesAreSkippedOnceAndIgnoredNamesNeverStored() throws {
        let f = try StoreFixture()
        #expect(mkfifo(f.data.appending("pipe").string, 0o644) == 0)
        try f.write(".notes.txt.swp", "swap")
        try f.write("notes.txt~", "backup")
        try f.write("4913", "")
        try f.write("real.txt", "real")
        let out = try f.store.commit(paths: ["pipe", ".notes.txt.swp", "notes.txt~", "4913", "real.txt"])
        #expect(out.skipped.map(\.path) == ["pipe"])
        #expect(out.skipped.first?.what == "a FIFO")
        #expect(try f.headContents() == ["real.txt": "real"])
        // Reported again: no second warning.
        #expect(try f.store.commit(paths: ["pipe"]).skipped.isEmpty)
    }

    /// Issue 18.1: a FIFO where a tracked file was is not its deletion; the file waits to be
    /// written back (unapplied) and nothing else is committed.
    @Test func obstacleAtATrackedPathIsNoDeletion() throws {
        let f = try StoreFixture()
        try f.write("x", "tracked")
        _ = try f.store.commit(paths: ["x"])
        try FileManager.default.removeItem(atPath: f.data.appending("x").string)
        #expect(mkfifo(f.data.appending("x").string, 0o644) == 0)
        let out = try f.store.commit(paths: ["x"])
        #expect(out.commit == nil)
        #expect(out.skipped.map(\.path) == ["x"])
        #expect(try f.headContents() == ["x": "tracked"])
        #expect(f.store.unappliedPaths == ["x"])
        #expect(try f.store.changedSinceLastCommit().filter { f.store.stuckPaths().map(\.path).contains($0) == false }.isEmpty)
        // The FIFO goes: the store's version is written back, nothing is deleted.
        try FileManager.default.removeItem(atPath: f.data.appending("x").string)
        #expect(try f.store.commit(paths: ["x"]).commit == nil)
        let report = try f.store.retryUnapplied()
        #expect(report.written == 1)
        #expect(try String(contentsOfFile: f.data.appending("x").string, encoding: .utf8) == "tracked")
        #expect(f.store.unappliedPaths.isEmpty)
    }

    /// Issue 18.2: an empty directory is a `.syncagent-keep` marker in the tree, never on disk; it
    /// goes when a file comes in and comes back when the directory is emptied; a full scan agrees.
    @Test func emptyDirectoriesAreMarkers() throws {
        let f = try StoreFixture()
        try FileManager.default.createDirectory(atPath: f.data.appending("inbox/deep").string, withIntermediateDirectories: true)
        _ = try f.store.commit(paths: ["inbox", "inbox/deep"])
        #expect(try f.headContents() == ["inbox/deep/.syncagent-keep": ""])
        #expect(try f.store.changedSinceLastCommit().isEmpty)
        try f.write("inbox/deep/a.txt", "a")
        _ = try f.store.commit(paths: ["inbox/deep/a.txt"])
        #expect(try f.headContents() == ["inbox/deep/a.txt": "a"])
        try FileManager.default.removeItem(atPath: f.data.appending("inbox/deep/a.txt").string)
        _ = try f.store.commit(paths: ["inbox/deep/a.txt"])
        #expect(try f.headContents() == ["inbox/deep/.syncagent-keep": ""])
        #expect(!FileManager.default.fileExists(atPath: f.data.appending("inbox/deep/.syncagent-keep").string))
        // made while stopped: the scan reports it, and its commit adds the marker
        try FileManager.default.createDirectory(atPath: f.data.appending("later").string, withIntermediateDirectories: true)
        let changed = try f.store.changedSinceLastCommit()
        #expect(changed == ["later"])
        _ = try f.store.commit(paths: changed)
        #expect(try f.headContents()["later/.syncagent-keep"] == "")
        try FileManager.default.removeItem(atPath: f.data.appending("inbox").string)
        _ = try f.store.commit(paths: try f.store.changedSinceLastCommit())
        #expect(try f.headContents() == ["later/.syncagent-keep": ""])
    }

    @Test func fullScanFindsWhatChangedWhileStopped() throws {
        let f = try StoreFixture()
        try f.write("same", "1")
        try f.write("edited", "1")
        try f.write("deleted", "1")
        _ = try f.store.commit(paths: ["same", "edited", "deleted"])
        let reopened = try Store.open(device: "phone", data: f.data, gitDir: f.gitDir)
        try f.write("edited", "22")
        try f.remove("deleted")
        try f.write("sub/new", "n")
        let changed = try reopened.changedSinceLastCommit()
        #expect(changed.isSuperset(of: ["edited", "deleted", "sub/new"]))
        _ = try reopened.commit(paths: changed)
        #expect(try f.headContents() == ["same": "1", "edited": "22", "sub/new": "n"])
    }

    @Test func staleLocksAreCleared() throws {
        let f = try StoreFixture()
        let lockA = f.gitDir.appending("index.lock")
        let lockB = f.gitDir.appending("refs/heads/main.lock")
        #expect(FileManager.default.createFile(atPath: lockA.string, contents: Data()))
        #expect(FileManager.default.createFile(atPath: lockB.string, contents: Data()))
        try f.write("a", "1")
        // libgit2 refuses to write while index.lock exists...
        #expect(throws: GitError.self) { try f.store.commit(paths: ["a"]) }
        let removed = Store.clearStaleLocks(gitDir: f.gitDir)
        #expect(Set(removed) == [lockA, lockB])
        // ...and works again once it is gone.
        #expect(try f.store.commit(paths: ["a"]).commit != nil)
    }

    /// What a killed fetch, pack batch or uncompressed object write left goes at start-up; on a
    /// hub, only once it is an hour old (another device may be writing it). Finished packs and
    /// objects stay.
    @Test func temporariesOfKilledWritesAreRemoved() throws {
        let f = try StoreFixture()
        try f.write("a", "1")
        _ = try f.store.commit(paths: ["a"])
        let objects = f.gitDir.appending("objects"), packs = objects.appending("pack")
        try FileManager.default.createDirectory(atPath: packs.string, withIntermediateDirectories: true)
        let left = [packs.appending("tmp_pack_x1"), packs.appending("tmp_idx_x1"), packs.appending("pack_git2_x1"),
                    objects.appending("tmp_obj_x1")]
        let kept = [packs.appending("pack-0123.keep"), objects.appending("obj_tmp_x1")]
        for path in left + kept { #expect(FileManager.default.createFile(atPath: path.string, contents: Data("x".utf8))) }
        // A peer's pack being checked in a folder of its own, when the agent was killed.
        let adopting = packs.appending("tmp_pack_adopt_x1")
        try FileManager.default.createDirectory(atPath: adopting.string, withIntermediateDirectories: false)
        for name in ["pack-ab.pack", "pack-ab.idx"] {
            #expect(FileManager.default.createFile(atPath: adopting.appending(name).string, contents: Data("x".utf8)))
        }
        // A hub: fresh temporaries are someone's writes in progress.
        #expect(Store.removeTemporaries(of: f.gitDir, modifiedBefore: Int64(Date().timeIntervalSince1970) - 3600).isEmpty)
        #expect(Set(Store.clearStaleLocks(gitDir: f.gitDir)) == Set(left + [adopting]))
        for path in left + [adopting] { #expect(!FileManager.default.fileExists(atPath: path.string)) }
        for path in kept { #expect(FileManager.default.fileExists(atPath: path.string)) }
        #expect(try f.headContents() == ["a": "1"])
    }

    /// A pack left without its index by a write killed between the two (an hour ago) goes at
    /// start-up; a younger one (a write in progress) and every pack with its index stay.
    @Test func aPackWithoutItsIndexGoesOnceItIsAnHourOld() throws {
        let f = try StoreFixture()
        try f.write("a", "1")
        _ = try f.store.commit(paths: ["a"])
        #expect(try git(f.gitDir, ["repack", "-a", "-d", "-q"]).status == 0)
        let packs = f.gitDir.appending("objects/pack")
        let whole = try FileManager.default.contentsOfDirectory(atPath: packs.string).filter { $0.hasSuffix(".pack") }
        #expect(whole.count == 1)
        let old = packs.appending("pack-0000000000000000000000000000000000000001.pack")
        let fresh = packs.appending("pack-0000000000000000000000000000000000000002.pack")
        for path in [old, fresh] { #expect(FileManager.default.createFile(atPath: path.string, contents: Data("PACK".utf8))) }
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: old.string)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)],
                                              ofItemAtPath: packs.appending(whole[0]).string)
        #expect(Store.clearStaleLocks(gitDir: f.gitDir).contains(old))
        #expect(!FileManager.default.fileExists(atPath: old.string))
        #expect(FileManager.default.fileExists(atPath: fresh.string), "a write in progress")
        #expect(FileManager.default.fileExists(atPath: packs.appending(whole[0]).string), "a pack with its index")
        #expect(try f.headContents() == ["a": "1"])
    }
}

@Suite struct PathRulesTests {
    @Test(arguments: [".a.txt.swp", ".a.swo", ".a.swx", ".a.swpx", "a.txt~", ".#a.txt", "4913", "a.tmp", ".git", ".syncagent-keep"])
    func editorTemporariesAreIgnored(_ name: String) {
        #expect(PathRules.isIgnored(FilePath.Component(name)!))
    }

    @Test(arguments: ["a.txt", "swp", "a.swp.txt", "4914", "tmp", "git", ".gitignore"])
    func ordinaryNamesAreKept(_ name: String) {
        #expect(!PathRules.isIgnored(FilePath.Component(name)!))
    }

    @Test func displayQuotesOnlyWhatNeedsIt() {
        #expect(FilePath("notes/today.txt").display == "notes/today.txt")
        #expect(FilePath("café").display == "café")
        #expect(FilePath(bytes: Array("a\nb".utf8)).display == "\"a\\nb\"")
        #expect(FilePath(bytes: [0xff, 0x41]).display == "\"\\377A\"")
    }
}

/// What a killed agent left is removed at start-up; what this process is writing now is not.
@Suite struct LeftoverTests {
    @Test func onlyOtherProcessesTemporariesAreRemoved() throws {
        let dir = try TempDirectory("leftovers")
        var counter: UInt64 = 0
        let mine = AgentTemporary.path(in: "a", counter: &counter).lastComponent!.string
        let landing = AgentTemporary.path(in: "a", counter: &counter, landing: true).lastComponent!.string
        let theirs = AgentTemporary.prefix + String(getpid() + 1, radix: 16) + "-7.tmp"
        // A killed earlier process with this very pid (PID 1 in a container): its names lack our nonce.
        let samePid = AgentTemporary.prefix + String(getpid(), radix: 16) + "-7.tmp"
        let samePidNewer = AgentTemporary.prefix + String(getpid(), radix: 16) + ".1234abcd-a7.tmp"
        try dir.write("a/" + mine, "in flight")
        try dir.write("a/" + landing, "in flight")
        for name in [theirs, samePid, samePidNewer] { try dir.write("a/" + name, "left by a killed agent") }
        let removed = AgentTemporary.removeLeftovers(under: dir.root)
        #expect(Set(removed.map(\.string)) == Set([theirs, samePid, samePidNewer].map { "a/" + $0 }))
        #expect(FileManager.default.fileExists(atPath: dir.path("a/" + mine)))
        #expect(FileManager.default.fileExists(atPath: dir.path("a/" + landing)))
    }
}

@Suite struct AgentLockTests {
    /// A program that embeds the agent (or links SyncAgentKit) asks who holds the lock and may try
    /// to take it again: neither drops the lock it holds, and the second take is refused as if from
    /// another process (an open-file-description lock, not a per-process POSIX one).
    @Test func theLockHoldsWithinItsOwnProcess() throws {
        let dir = try TempDirectory("locktest")
        let path = dir.root.appending("agent.lock")
        let lock = try AgentLock.acquire(path, role: "sync")
        #expect(AgentLock.holder(of: path) == getpid())  // asking opens and closes the file...
        #expect(AgentLock.holder(of: path) == getpid())  // ...and the lock is still held
        #expect(throws: LockError.self) { try AgentLock.acquire(path, role: "run") }
        #expect(AgentLock.holder(of: path) == getpid())
        _ = lock
    }

    @Test func lockHeldByAnotherProcessNamesItsPid() throws {
        let dir = try TempDirectory("locktest")
        let path = dir.root.appending("agent.lock")
        #expect(AgentLock.holder(of: path) == nil)
        // Another process takes the same POSIX lock the agent uses, then waits.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        child.arguments = ["-c", "import fcntl,sys,time; f=open(sys.argv[1],'a+'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)", path.string]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        defer { kill(child.processIdentifier, SIGKILL); child.waitUntilExit() }
        _ = out.fileHandleForReading.availableData  // "locked"
        #expect(AgentLock.holder(of: path) == child.processIdentifier)
        do {
            _ = try AgentLock.acquire(path)
            Issue.record("a second lock must be refused")
        } catch {
            #expect(error.holder == child.processIdentifier)
            #expect(error.description.contains("pid \(child.processIdentifier)"))
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        // The holder died: the lock is free at once, no stale file can block.
        let lock = try AgentLock.acquire(path)
        #expect(try String(contentsOfFile: path.string, encoding: .utf8) == "\(getpid()) run\n")
        _ = lock
    }

    /// `syncagent run &` then `syncagent sync`: the agent waits for a one-shot command that holds
    /// the lock (told who it waits for), never for another agent.
    @Test(arguments: ["sync", "run"])
    func anAgentWaitsForACommandButNotForAnotherAgent(holderRole: String) throws {
        let dir = try TempDirectory("locktest")
        let path = dir.root.appending("agent.lock")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        child.arguments = ["-c", "import fcntl,os,sys,time; f=open(sys.argv[1],'a+'); fcntl.lockf(f, fcntl.LOCK_EX); "
                           + "f.truncate(0); f.write('%d %s\\n' % (os.getpid(), sys.argv[2])); f.flush(); print('locked', flush=True); time.sleep(30)",
                           path.string, holderRole]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        defer { kill(child.processIdentifier, SIGKILL); child.waitUntilExit() }
        _ = out.fileHandleForReading.availableData  // "locked"
        var waitedFor: (Int32, String)?
        do {
            let lock = try AgentLock.acquire(path, waitForCommands: true) { pid, command in
                waitedFor = (pid, command)
                kill(child.processIdentifier, SIGKILL)  // the command ends: the lock is let go
            }
            #expect(holderRole == "sync", "an agent must not wait for another agent")
            #expect(waitedFor?.0 == child.processIdentifier && waitedFor?.1 == "sync")
            #expect(try String(contentsOfFile: path.string, encoding: .utf8) == "\(getpid()) run\n")
            _ = lock
        } catch {
            #expect(holderRole == "run", "an agent waits for a one-shot command: \(error)")
            #expect(waitedFor == nil)
            #expect((error as? LockError)?.holder == child.processIdentifier)
        }
    }

    /// The role read when the lock was found taken may be a former holder's: an agent that has
    /// just taken the lock writes its own a moment later. A wait for a command then ends with the
    /// agent named (it answers on its socket), never with a wait for as long as the agent runs.
    @Test func aWaitForACommandEndsWhenTheHolderTurnsOutToBeAnAgent() throws {
        let dir = try TempDirectory("locktest")
        let path = dir.root.appending("agent.lock")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        child.arguments = ["-c", "import fcntl,os,sys,time; f=open(sys.argv[1],'a+'); fcntl.lockf(f, fcntl.LOCK_EX); "
                           + "f.truncate(0); f.write('%d send\\n' % os.getpid()); f.flush(); print('locked', flush=True); time.sleep(60)",
                           path.string]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        defer { kill(child.processIdentifier, SIGKILL); child.waitUntilExit() }
        _ = out.fileHandleForReading.availableData  // "locked"
        do {
            _ = try AgentLock.acquire(path, role: "send", waitForCommands: true) { _, _ in
                // the holder's own role, written now
                try? Array("\(child.processIdentifier) run\n".utf8).withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: path.string)) }
            }
            Issue.record("the lock was taken only when the agent let it go")
        } catch {
            #expect(error.holder == child.processIdentifier)
        }
    }
}

@Suite struct DeletionCountTests {
    /// A deleted directory and its files arrive as separate paths: each file counts once.
    @Test func aDeletedDirectoryCountsEachFileOnce() throws {
        let f = try StoreFixture()
        var paths: Set<FilePath> = []
        for d in ["a", "b", "c"] {
            for i in 0..<10 {
                try f.write("\(d)/f\(i)", "x\(i)")
                paths.insert(FilePath("\(d)/f\(i)"))
            }
        }
        _ = try f.store.commit(paths: paths)
        try f.remove("b")
        var batch: Set<FilePath> = ["b"]
        for i in 0..<10 { batch.insert(FilePath("b/f\(i)")) }
        let gone = try f.store.deletions(among: batch)
        #expect(gone.files == 10)
        #expect(try f.store.trackedCount() == 30)
        #expect(DeletionGuard(settings: SafetySettings()).check(root: f.data, deleting: gone.files, tracked: 30, rootIsEmpty: false) == nil)
    }
}
