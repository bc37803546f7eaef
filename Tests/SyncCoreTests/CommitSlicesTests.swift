import FileSystem
import Foundation
import Git
import Glibc
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// A batch of big new files is committed in slices (`Store.slicesBySize`), one commit each, so a
/// peer starts on the first while the rest is hashed. The slices together must leave `main` as one
/// commit of the batch would, and no commit in between may show what the batch does not hold.
@Suite struct CommitSlicesTests {
    @Test func filesAreCutInPathOrderOnceASliceHoldsItsBytesAndDirectoriesComeLast() {
        let sized: [(path: FilePath, bytes: Int64?)] = [
            ("b/2", 40), ("a", nil), ("a/1", 70), ("c", 10), ("a.txt", 30), ("b", nil), ("b/1", 60),
        ]
        let slices = Store.slices(sized, sliceBytes: 100)
        // a.txt (30) + a/1 (70) = 100; b/1 + b/2 = 100; c and the two directories last.
        #expect(slices == [["a.txt", "a/1"], ["b/1", "b/2"], ["c", "a", "b"]])
        // Together no more than one slice: the batch whole, in its own order.
        #expect(Store.slices([("x", 60), ("y", nil), ("z", 40)], sliceBytes: 100) == [["x", "y", "z"]])
        // A cut that leaves no file for the last slice: the directories get one of their own.
        #expect(Store.slices([("d", nil), ("d/1", 100), ("d/2", 100)], sliceBytes: 100) == [["d/1"], ["d/2"], ["d"]])
        #expect(Store.slices([("d/1", 100), ("d/2", 100)], sliceBytes: 100) == [["d/1"], ["d/2"]])
    }

    @Test func aBatchWithSomethingGoneOrAFifoIsNotCut() throws {
        let f = try StoreFixture()
        let big = String(repeating: "x", count: 600)
        try f.write("p1", big)
        try f.write("p2", big)
        try f.write("p3", big)
        #expect(f.store.slicesBySize(["p1", "p2", "p3"], sliceBytes: 1000).count == 2)
        #expect(f.store.slicesBySize(["p1", "p2", "p3", "gone"], sliceBytes: 1000) == [["p1", "p2", "p3", "gone"]])
        #expect(mkfifo(f.data.appending("pipe").string, 0o644) == 0)
        #expect(f.store.slicesBySize(["p1", "p2", "p3", "pipe"], sliceBytes: 1000) == [["p1", "p2", "p3", "pipe"]])
        #expect(f.store.slicesBySize(["p1"], sliceBytes: 10) == [["p1"]])
    }

    /// A new folder whose files are cut across slices, with a big file sorting between the folder
    /// and its files (`a.jpg` < `a/`), committed slice by slice as the engine does (each slice
    /// hashed ahead). Every commit holds whole files only, none holds the empty-folder marker of
    /// `a` (it is never empty), and the last leaves `main` holding the batch, `git fsck` clean.
    @Test func committedSliceBySliceMainEndsHoldingTheBatch() throws {
        let f = try StoreFixture()
        var expected: [String: String] = [:]
        func put(_ rel: String, _ byte: Character, _ count: Int) throws {
            let text = String(repeating: byte, count: count)
            try f.write(rel, text)
            expected[rel] = text
        }
        try put("a.jpg", "j", 3000)
        for i in 0..<6 { try put("a/p\(i).jpg", Character(String(i)), 1500) }
        try put("a/sub/deep.jpg", "d", 1500)
        try FileManager.default.createDirectory(atPath: f.data.appending("a/empty").string, withIntermediateDirectories: true)
        let batch: Set<FilePath> = Set(expected.keys.map { FilePath($0) }).union(["a", "a/sub", "a/empty"])
        let slices = f.store.slicesBySize(batch, sliceBytes: 4000)
        #expect(slices.count == 4)
        #expect(Set(slices.flatMap { $0 }) == batch)
        var commits: [Oid] = []
        for slice in slices {
            let job = f.store.prehashAhead(slice, always: true)
            let out = try f.store.commit(paths: slice, ahead: job)
            commits.append(try #require(out.commit).oid)
        }
        for id in commits.dropLast() {
            let files = try f.store.files(at: id)
            #expect(!files.contains { $0.path == "a/.syncagent-keep" }, "commit \(id) holds a marker for a folder that is not empty")
            #expect(!files.contains { $0.path == "a/empty/.syncagent-keep" }, "the empty folder comes with the last slice")
            for file in files {
                #expect(String(decoding: try f.store.blob(file.oid), as: UTF8.self) == expected[file.path.string], "\(file.path) in \(id)")
            }
        }
        var head = try f.headContents()
        #expect(head.removeValue(forKey: "a/empty/.syncagent-keep") == "")
        #expect(head == expected)
        #expect(try gitFsck(f.gitDir, full: true) == 0)
    }
}
