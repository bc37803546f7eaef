import FileSystem
import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// A big batch is hashed ahead, on other threads, and the commit takes each file's (hash, stat
/// data) pair as it is. A write after the hash must still reach `main`: through the next scan's
/// stat data (or the watcher, in a running agent), never lost.
@Suite struct PrehashTests {
    /// 300 files hashed ahead; then one is rewritten with the same size and its mtime put back
    /// (only its ctime tells), and another replaced by a new file. The commit of the batch holds
    /// what was hashed; the scan after it finds both files, and the next commit holds the bytes on
    /// disk. Every pack the hashing wrote is whole (`git fsck`).
    @Test func aWriteAfterTheHashIsCommittedByTheNextScan() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        var paths: Set<FilePath> = []
        for i in 0..<300 {
            try fixture.write("d\(i % 7)/f\(i).txt", "file \(i) version 0\n")
            paths.insert(FilePath("d\(i % 7)/f\(i).txt"))
        }
        let job = try #require(store.prehashAhead(paths))
        _ = job.result()  // every file hashed before the edits below
        let edited = fixture.data.appending("d3/f10.txt")
        let before = try #require(try FileStat.of(edited))
        try fixture.write("d3/f10.txt", "FILE 10 VERSION 1\n")  // same size as "file 10 version 0\n"
        var times = [timespec(tv_sec: Int(before.mtimeSeconds), tv_nsec: Int(before.mtimeNanoseconds)),
                     timespec(tv_sec: Int(before.mtimeSeconds), tv_nsec: Int(before.mtimeNanoseconds))]
        #expect(edited.withPlatformString { utimensat(AT_FDCWD, $0, &times, AT_SYMLINK_NOFOLLOW) } == 0)
        try fixture.remove("d4/f11.txt")
        try fixture.write("d4/f11.txt", "a new file at an old name\n")

        let first = try store.commit(paths: paths, ahead: job)
        #expect(first.commit != nil)
        let changed = try store.changedSinceLastCommit()
        #expect(changed.contains(FilePath("d3/f10.txt")), "same size, same mtime: the ctime tells")
        #expect(changed.contains(FilePath("d4/f11.txt")))
        // A file is recorded with its stat data only once its times are older than the commit's
        // look (2 s older when they look rounded: a coarse file system); a scan then finds
        // nothing only if every file had settled before that commit.
        try fixture.settle(paths.map(\.string))
        _ = try store.commit(paths: changed)
        let head = try fixture.headContents()
        #expect(head.count == 300)
        #expect(head["d3/f10.txt"] == "FILE 10 VERSION 1\n")
        #expect(head["d4/f11.txt"] == "a new file at an old name\n")
        #expect(head["d5/f12.txt"] == "file 12 version 0\n")
        #expect(try store.changedSinceLastCommit().isEmpty)
        #expect(try gitFsck(fixture.gitDir, full: true) == 0)
    }

    /// The commit makes durable exactly the packs the pre-hash names (no `syncfs`): every blob it
    /// hashed must be in one of them, across several packs per worker (big files: a pack each
    /// 32 MiB) and small files alike.
    @Test func everyBlobHashedAheadIsInAPackTheJobNames() throws {
        let fixture = try StoreFixture()
        var paths: Set<FilePath> = []
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? random.close() }
        for i in 0..<300 {
            // A few files of 6 MB of random bytes (streamed into the pack), the rest small text.
            let bytes = i % 30 == 0 ? random.readData(ofLength: 6 << 20) : Data("small file \(i)\n".utf8)
            let path = FilePath("d\(i % 5)/f\(i)")
            try FileManager.default.createDirectory(atPath: fixture.data.pushing(path).removingLastComponent().string,
                                                    withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: fixture.data.pushing(path).string))
            paths.insert(path)
        }
        let job = try #require(fixture.store.prehashAhead(paths))
        let found = job.result()
        let packs = job.packs()
        guard ProcessInfo.processInfo.activeProcessorCount > 1 else {
            // One core: nothing is hashed ahead, the commit loop reads every file itself.
            #expect(found.isEmpty && packs?.isEmpty == true)
            #expect(try fixture.store.commit(paths: paths, ahead: job).commit != nil)
            #expect(try fixture.store.files(at: try #require(try fixture.store.head())).count == 300)
            return
        }
        #expect(found.count == 300)
        #expect(packs?.count ?? 0 >= 3, "60 MB of big files (one worker's run, all in d0): more than one pack")
        let repo = try Repository.openForReading(gitDir: fixture.gitDir)
        let ids = found.values.map(\.oid)
        var held = Set<Oid>()
        for pack in packs ?? [] { held.formUnion(try repo.pack(pack, holds: ids)) }
        #expect(Set(ids).subtracting(held).count == 0, "blobs in no pack the job names")
        #expect(try fixture.store.commit(paths: paths, ahead: job).commit != nil)
        #expect(try gitFsck(fixture.gitDir, full: true) == 0)
    }

    /// Content the store already holds in a pack (a file copied under a second name, or a pack a
    /// cancelled job left) is not written again, and its pack is not the job's: the job cannot
    /// name every file to flush, so the commit flushes the file system.
    @Test func aBlobFoundInAnotherPackLeavesTheJobUnableToNameItsPacks() throws {
        let fixture = try StoreFixture()
        var first: Set<FilePath> = [], second: Set<FilePath> = []
        for i in 0..<300 {
            try fixture.write("a/f\(i)", "content \(i)\n")
            first.insert(FilePath("a/f\(i)"))
        }
        let job = try #require(fixture.store.prehashAhead(first))
        #expect(job.packs() != nil, "all new: the job's packs hold every blob")
        #expect(try fixture.store.commit(paths: first, ahead: job).commit != nil)
        for i in 0..<300 {
            try fixture.write("b/f\(i)", i == 7 ? "content 7\n" : "other \(i)\n")  // one copy of a stored file
            second.insert(FilePath("b/f\(i)"))
        }
        let again = try #require(fixture.store.prehashAhead(second))
        #expect(again.result().count == 300)
        #expect(again.packs() == nil)
        #expect(try fixture.store.commit(paths: second, ahead: again).commit != nil)
        #expect(try fixture.headContents().count == 600)
        #expect(try gitFsck(fixture.gitDir, full: true) == 0)
    }

    /// A batch hashed ahead and then not committed (a stop between chunks) leaves nothing a later
    /// commit or `git fsck` trips on.
    @Test func aJobThatIsNeverCommittedLeavesTheStoreWhole() throws {
        let fixture = try StoreFixture()
        var paths: Set<FilePath> = []
        for i in 0..<260 {
            try fixture.write("f\(i)", "content \(i)\n")
            paths.insert(FilePath("f\(i)"))
        }
        try #require(fixture.store.prehashAhead(paths)).cancel()
        let outcome = try fixture.store.commit(paths: paths)
        #expect(outcome.commit != nil)
        #expect(try fixture.headContents().count == 260)
        #expect(try gitFsck(fixture.gitDir, full: true) == 0)
    }
}
