import FileSystem
import Foundation
import Glibc
import Git
@testable import ObjectStorage
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
            disk.fileHolds(displaced, planned, entry: nil) ? .remove : .putBack
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

    /// A new path is written without a look first (`assumeFree`): whatever stands there, a
    /// file, a directory or a FIFO, stays as it is, and nothing is left behind.
    @Test func aNewPathAssumedFreeNeverReplacesWhatStandsThere() throws {
        var counter: UInt64 = 0
        func place(_ path: FilePath) throws -> DataDirectory.PlaceOutcome {
            try disk.place(incoming, at: path, repo: repo, counter: &counter, displace: false, assumeFree: true) { _ in .putBack }
        }
        try t.phone.write("taken.txt", "the app's own file\n")
        guard case .occupied = try place("taken.txt") else { Issue.record("not refused: a file"); return }
        #expect(t.phone.read("taken.txt") == "the app's own file\n")
        try t.phone.write("dir/inside.txt", "kept\n")
        guard case .occupied = try place("dir") else { Issue.record("not refused: a directory"); return }
        #expect(t.phone.read("dir/inside.txt") == "kept\n")
        #expect(mkfifo(t.phone.data.appending("fifo").string, 0o644) == 0)
        guard case .occupied = try place("fifo") else { Issue.record("not refused: a FIFO"); return }
        #expect(((try FileStat.of(t.phone.data.appending("fifo"))) ?? nil)?.kind == .fifo)
        guard case .placed = try place("sub/free.txt") else { Issue.record("a free path not placed"); return }
        #expect(t.phone.read("sub/free.txt") == "the peer's version\n")
        #expect(try leftovers().isEmpty)
    }

    /// Through `placeChecked`, a new path already holding the incoming bytes is `alreadyThere`
    /// (left as it is, nothing written), and one holding other bytes is a local change, whether the
    /// path is written without a look first or (an apply that resumes) looked at first.
    @Test func aNewPathHoldingBytesAlreadyIsJudgedAsBefore() throws {
        for optimistic in [true, false] {
            var disk = DataDirectory(root: t.phone.data)
            disk.optimistic = optimistic
            var counter: UInt64 = 0
            var leftovers: [DataDirectory.Leftover] = []
            func placed(_ path: FilePath) -> DataDirectory.Placement {
                disk.placeChecked(DataDirectory.PlaceItem(change: TreeChange(path: path, old: nil, new: incoming), entry: nil,
                                                          replacing: false, unappliedOld: nil),
                                  repo: repo, counter: &counter, leftovers: &leftovers)
            }
            try t.phone.write("same-\(optimistic).txt", "the peer's version\n")
            let before = try #require(try FileStat.of(t.phone.data.appending("same-\(optimistic).txt")))
            guard case .alreadyThere = placed(FilePath("same-\(optimistic).txt")) else { Issue.record("not alreadyThere"); continue }
            #expect(try FileStat.of(t.phone.data.appending("same-\(optimistic).txt"))?.inode == before.inode)
            try t.phone.write("other-\(optimistic).txt", "the app's own\n")
            guard case .localChange = placed(FilePath("other-\(optimistic).txt")) else { Issue.record("not a local change"); continue }
            #expect(t.phone.read("other-\(optimistic).txt") == "the app's own\n")
            guard case .written = placed(FilePath("free-\(optimistic).txt")) else { Issue.record("a free path not written"); continue }
            #expect(t.phone.read("free-\(optimistic).txt") == "the peer's version\n")
        }
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

    /// A file written a while ago, seen by the check (its stat data and the clock read before).
    private func sighting(of path: FilePath, _ text: String) throws -> DataDirectory.Sighting {
        try t.phone.write(path.string, text)
        let abs = t.phone.data.pushing(path)
        let written = try #require(try FileStat.of(abs))
        // A check sees a file whose time is behind the clock (the file was written before).
        while !WriteStamp.modified(written, before: WriteStamp.coarseNow()) { sched_yield() }
        let clock = WriteStamp.coarseNow()
        return DataDirectory.Sighting(stat: try #require(try FileStat.of(abs)), clock: clock)
    }

    /// Places the incoming version checked by stat data alone against `seen`, as a modified path's
    /// apply does; `between` runs between the check and the swap.
    private func placeBySight(_ seen: DataDirectory.Sighting, at path: FilePath, between: () throws -> Void) throws -> DataDirectory.PlaceOutcome {
        try between()
        var counter: UInt64 = 0
        return try disk.place(incoming, at: path, repo: repo, counter: &counter, displace: false, seen: seen.stat) { displaced in
            guard let stat = (try? FileStat.of(displaced)) ?? nil, DataDirectory.untouched(stat, since: seen) else {
                return disk.fileHolds(displaced, old, entry: nil) ? .remove : .putBack
            }
            return .remove
        }
    }

    @Test func aSameSizeWriteAfterTheCheckShowsInTheStatDataAlone() throws {
        let seen = try sighting(of: "notes.txt", "the version the merge planned to replace\n")
        let rewrite = "written by the app right after the check\n"
        #expect(rewrite.utf8.count == "the version the merge planned to replace\n".utf8.count)
        let outcome = try placeBySight(seen, at: "notes.txt") {
            // In place: same inode, same size; only the modification time can tell.
            let handle = try #require(FileHandle(forWritingAtPath: t.phone.data.appending("notes.txt").string))
            try handle.write(contentsOf: Data(rewrite.utf8))
            try handle.close()
            let now = try #require(try FileStat.of(t.phone.data.appending("notes.txt")))
            #expect(now.inode == seen.stat.inode && now.size == seen.stat.size)
            #expect(!DataDirectory.untouched(now, since: seen))
        }
        guard case .keptNewer = outcome else { Issue.record("replaced: \(outcome)"); return }
        #expect(t.phone.read("notes.txt") == rewrite)
        #expect(try leftovers().isEmpty)
    }

    @Test func anUntouchedFileIsReplacedThoughTheSwapMovedItsChangeTime() throws {
        let seen = try sighting(of: "notes.txt", "the version the merge planned to replace\n")
        var displacedStat: FileStat?
        var counter: UInt64 = 0
        let outcome = try disk.place(incoming, at: "notes.txt", repo: repo, counter: &counter, displace: false, seen: seen.stat) { displaced in
            displacedStat = (try? FileStat.of(displaced)) ?? nil
            return .remove
        }
        guard case .placed = outcome else { Issue.record("not placed: \(outcome)"); return }
        let stat = try #require(displacedStat)
        #expect(DataDirectory.untouched(stat, since: seen))
        #expect(t.phone.read("notes.txt") == "the peer's version\n")
    }

    @Test func aFileWrittenInTheSameClockTickAsTheCheckIsNotTrustedByItsTime() throws {
        try t.phone.write("notes.txt", "the version the merge planned to replace\n")
        let stat = try #require(try FileStat.of(t.phone.data.appending("notes.txt")))
        // The clock read before the look is not past the file's time: a write right after the
        // look could carry the very same time.
        let clock = timespec(tv_sec: Int(stat.mtimeSeconds), tv_nsec: Int(stat.mtimeNanoseconds))
        #expect(!DataDirectory.untouched(stat, since: DataDirectory.Sighting(stat: stat, clock: clock)))
    }

    @Test func aFileRemovedAfterTheCheckTakesTheNewVersionOnlyIfStillAbsent() throws {
        let seen = try sighting(of: "notes.txt", "the version the merge planned to replace\n")
        let outcome = try placeBySight(seen, at: "notes.txt") { try FileManager.default.removeItem(atPath: t.phone.data.appending("notes.txt").string) }
        guard case .placed = outcome else { Issue.record("not placed: \(outcome)"); return }
        #expect(t.phone.read("notes.txt") == "the peer's version\n")
        #expect(try leftovers().isEmpty)
    }

    /// A commit keeps a file's stat data only when the file last changed before the clock read
    /// before its look: one changed in that very tick could be written again in it, same size,
    /// with identical stat data (racily clean), and the swap's check trusts the stat data.
    @Test func statDataOfAFileChangedInTheTickOfTheLookAreNotKept() throws {
        try t.phone.write("notes.txt", "the version the merge planned to replace\n")
        let stat = try #require(try FileStat.of(t.phone.data.appending("notes.txt")))
        let sameTick = timespec(tv_sec: Int(stat.mtimeSeconds), tv_nsec: Int(stat.mtimeNanoseconds))
        #expect(Store.settledStat(stat, lookedAt: sameTick) == nil)
        let later = timespec(tv_sec: Int(stat.ctimeSeconds) + 1, tv_nsec: 0)
        #expect(Store.settledStat(stat, lookedAt: later) == IndexStat(stat))
        // A file system that rounds times (FAT: 2 s) gives a later write the time an earlier one
        // in the same step got: its times must be 2 s older than the look.
        var raw = Glibc.stat()
        raw.st_mode = S_IFREG | 0o644
        raw.st_size = 41
        raw.st_mtim = timespec(tv_sec: 1_700_000_000, tv_nsec: 0)
        raw.st_ctim = raw.st_mtim
        let fat = FileStat(raw)
        #expect(Store.settledStat(fat, lookedAt: timespec(tv_sec: 1_700_000_001, tv_nsec: 500_000_000)) == nil)
        #expect(Store.settledStat(fat, lookedAt: timespec(tv_sec: 1_700_000_003, tv_nsec: 0)) != nil)
        let seen = DataDirectory.Sighting(stat: fat, clock: timespec(tv_sec: 1_700_000_001, tv_nsec: 0))
        #expect(!DataDirectory.untouched(fat, since: seen))
    }
}
