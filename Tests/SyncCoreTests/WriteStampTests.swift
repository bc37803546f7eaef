import FileSystem
import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// Files a merge writes carry a `WriteStamp` mtime (`Index.isStamped`): the commit of the merge's
/// own writes, read back by the watcher, does not read them again, and any write after the merge,
/// however soon and whatever its size, is still committed.
@Suite struct WriteStampTests {
    /// The watch's store as a running agent keeps it (the index in memory).
    func pair() throws -> TwoDevices {
        let t = try TwoDevices()
        t.watch.store.deferIndexWrites = true
        return t
    }

    @Test func aMergedFileIsStampedAndItsEchoCommitsNothing() throws {
        let t = try pair()
        try t.phone.write("a.txt", "from phone")
        try t.phone.write("b/c.txt", "more")
        try t.phone.commit("a.txt", "b/c.txt")
        #expect(try t.watch.pull(from: t.phone).action == .fastForward)
        let stat = try #require(try FileStat.of(t.watch.data.appending("a.txt")))
        #expect(stat.mtimeSeconds <= Int64(Date().timeIntervalSince1970))
        let index = try t.watch.store.liveIndex()
        #expect(index.isStamped("a.txt") && index.isStamped("b/c.txt"))
        // The watcher's report of the merge's own writes: nothing to commit, nothing read.
        let echo = try t.watch.store.commit(paths: ["a.txt", "b/c.txt", "b"])
        #expect(echo.commit == nil)
    }

    /// The write a user makes right after the merge wrote the file (same size, same clock tick):
    /// its stat data differ from the stamped ones, so it is read and committed.
    @Test func aSameSizeWriteRightAfterTheMergeIsCommitted() throws {
        let t = try pair()
        for round in 0..<20 {
            let ours = "phone \(round % 10)", theirs = "watch \(round % 10)"  // same length
            try t.phone.write("a.txt", ours)
            try t.phone.commit("a.txt")
            _ = try t.watch.pull(from: t.phone)
            #expect(t.watch.read("a.txt") == ours)
            try Data(theirs.utf8).write(to: URL(fileURLWithPath: t.watch.data.appending("a.txt").string))  // in place: same inode
            let outcome = try t.watch.store.commit(paths: ["a.txt"])
            #expect(outcome.commit != nil, "round \(round): the watch's own edit was not committed")
            #expect(try t.watch.store.liveIndex().isStamped("a.txt") == false)
            _ = try t.phone.pull(from: t.watch)
            #expect(t.phone.read("a.txt") == theirs)
        }
    }

    /// `touch -r` of another merged file: the mtime comes back, but never one of our stamps (each
    /// file gets its own), so the copy is read.
    @Test func aCopyWithTimesKeptIsCommitted() throws {
        let t = try pair()
        try t.phone.write("x.txt", "same size 1")
        try t.phone.write("y.txt", "same size 2")
        try t.phone.commit("x.txt", "y.txt")
        _ = try t.watch.pull(from: t.phone)
        let x = t.watch.data.appending("x.txt").string, y = t.watch.data.appending("y.txt").string
        try Data("same size 1".utf8).write(to: URL(fileURLWithPath: y))
        #expect(try runProgram("/usr/bin/touch", ["-r", x, y]).status == 0)  // to the nanosecond
        #expect(try FileStat.of(t.watch.data.appending("y.txt"))?.mtimeNanoseconds == FileStat.of(t.watch.data.appending("x.txt"))?.mtimeNanoseconds)
        let outcome = try t.watch.store.commit(paths: ["y.txt"])
        #expect(outcome.commit != nil)
        _ = try t.phone.pull(from: t.watch)
        #expect(t.phone.read("y.txt") == "same size 1")
    }
}
