import FileSystem
import Foundation
import Git
@testable import ObjectStorage
import Glibc
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// Issue 43.4, found by replaying Mutagen's reconciliation table on two devices: an emptied
/// directory against its whole deletion, and a FIFO where an empty directory must go.
@Suite struct EmptiedDirectoryTests {
    /// The paths of `main`'s tree on a device.
    func headPaths(_ d: TwoDevices.Device) throws -> Set<String> {
        guard let head = try d.store.head() else { return [] }
        return Set(try d.store.files(at: head).map(\.path.string))
    }

    func isDirectory(_ d: TwoDevices.Device, _ rel: String) -> Bool {
        ((try? FileStat.of(d.data.appending(rel))) ?? nil)?.kind == .directory
    }

    func exists(_ d: TwoDevices.Device, _ rel: String) -> Bool {
        ((try? FileStat.of(d.data.appending(rel))) ?? nil) != nil
    }

    /// The phone deletes directories whole; the watch only deletes in them (empties e, empties n/sub
    /// and keeps n/a, empties m and makes m/new) and empties s, which the phone keeps. In either order
    /// of merges: e and n are gone on both devices, m/new stays (a directory made is a change), and so
    /// does s (emptied, deleted by nobody).
    @Test(arguments: [false, true]) func anEmptiedDirectoryYieldsToItsWholeDeletion(phoneMergesFirst: Bool) throws {
        let t = try TwoDevices()
        for file in ["keep.txt", "e/a", "n/a", "n/sub/b", "m/a", "s/a"] { try t.phone.write(file, file) }
        try t.phone.commit("keep.txt", "e/a", "n/a", "n/sub/b", "m/a", "s/a")
        _ = try t.watch.pull(from: t.phone)
        for dir in ["e", "n", "m"] { try t.phone.dirs.remove(dir) }
        try t.phone.commit("e", "n", "m")
        for file in ["e/a", "n/sub/b", "m/a", "s/a"] { try t.watch.dirs.remove(file) }
        try FileManager.default.createDirectory(atPath: t.watch.data.appending("m/new").string, withIntermediateDirectories: true)
        try t.watch.commit("e/a", "n/sub/b", "m/a", "m/new", "s/a")
        #expect(try headPaths(t.watch).isSuperset(of: ["e/.syncagent-keep", "n/sub/.syncagent-keep"]))

        let (first, second) = phoneMergesFirst ? (t.phone, t.watch) : (t.watch, t.phone)
        #expect(try first.pull(from: second).action == .merged)
        _ = try second.pull(from: first)
        #expect(try first.store.head() == second.store.head())
        for d in [t.phone, t.watch] {
            #expect(try headPaths(d) == ["keep.txt", "m/new/.syncagent-keep", "s/.syncagent-keep"], "\(d.name)")
            #expect(!exists(d, "e") && !exists(d, "n") && !exists(d, "m/a"), "\(d.name)")
            #expect(isDirectory(d, "m/new") && isDirectory(d, "s"), "\(d.name)")
        }
    }

    /// A FIFO where the phone's new empty directory must go: what stays unwritten is named as the
    /// directory (never its marker); the FIFO taken away is no deletion, and the directory lands.
    @Test func aFIFOWhereAnEmptyDirectoryMustGo() throws {
        let t = try TwoDevices()
        try t.phone.write("keep.txt", "keep")
        try t.phone.commit("keep.txt")
        _ = try t.watch.pull(from: t.phone)
        try FileManager.default.createDirectory(atPath: t.phone.data.appending("inbox").string, withIntermediateDirectories: true)
        try t.phone.commit("inbox")
        #expect(mkfifo(t.watch.data.appending("inbox").string, 0o644) == 0)
        _ = try t.watch.store.commit(paths: ["inbox"])
        let out = try t.watch.pull(from: t.phone)
        #expect(out.applied.failures.map(\.path) == ["inbox"])
        #expect(t.watch.store.unappliedPaths == ["inbox"])
        let stuck = t.watch.store.stuckPaths()
        #expect(stuck.map(\.path) == ["inbox"])
        for failure in stuck + out.applied.failures {
            #expect(!failure.description.contains(DirectoryMarker.name) && failure.description.contains("FIFO"), "\(failure)")
        }
        try t.watch.dirs.remove("inbox")
        #expect(try t.watch.store.commit(paths: ["inbox"]).commit == nil)
        #expect(try t.watch.store.retryUnapplied().failures.isEmpty)
        #expect(isDirectory(t.watch, "inbox"))
        #expect(t.watch.store.unappliedPaths.isEmpty)
        #expect(try headPaths(t.watch).contains("inbox/.syncagent-keep"))
    }

    /// A FIFO put where a directory of tracked files was, then taken away: nothing is deleted, the
    /// files land again.
    @Test func aFIFOInPlaceOfADirectoryTakenAwayDeletesNothing() throws {
        let f = try StoreFixture()
        try f.write("d/a", "a")
        _ = try f.store.commit(paths: ["d/a"])
        try f.remove("d")
        #expect(mkfifo(f.data.appending("d").string, 0o644) == 0)
        #expect(try f.store.commit(paths: ["d", "d/a"]).commit == nil)
        try f.remove("d")
        #expect(try f.store.commit(paths: ["d"]).commit == nil)
        #expect(try f.headContents() == ["d/a": "a"])
        _ = try f.store.retryUnapplied()
        #expect(f.device.read("d/a") == "a")
    }
}
