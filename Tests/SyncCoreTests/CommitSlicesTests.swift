import FileSystem
import Foundation
import Git
@testable import ObjectStorage
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

    /// A file this device does not keep (`never`) counts no bytes and is never hashed: a big disk
    /// image beside its log is not cut into slices, nor read into the store.
    @Test func aFileTheRulesKeepLocalIsNeitherCountedNorHashed() throws {
        let f = try StoreFixture()
        f.store.policy = PathPolicy(device: "phone", rules: [SyncRule(path: "vm/**", sync: .never)])
        try f.write("vm/disk.img", String(repeating: "v", count: 5000))
        try f.write("vm/log.txt", "booted\n")
        try f.write("notes.txt", "n\n")
        #expect(f.store.slicesBySize(["vm/disk.img", "vm/log.txt", "notes.txt"], sliceBytes: 1000) == [["vm/disk.img", "vm/log.txt", "notes.txt"]])
        #expect(f.store.prehashAhead(["vm/disk.img", "vm/log.txt"], always: true) == nil)
    }

    /// A file replaced by a folder (or the reverse) takes the old entry away: the batch is not cut.
    @Test func aBatchWhereAPathChangedKindIsNotCut() throws {
        let f = try StoreFixture()
        try f.write("d", "a file first\n")
        _ = try f.store.commit(paths: ["d"])
        try f.remove("d")
        try f.write("d/x", String(repeating: "x", count: 800))
        try f.write("d/y", String(repeating: "y", count: 800))
        #expect(f.store.slicesBySize(["d", "d/x", "d/y"], sliceBytes: 1000) == [["d", "d/x", "d/y"]])
        try f.write("e/1", "1\n")
        _ = try f.store.commit(paths: ["e/1"])
        try FileManager.default.removeItem(atPath: f.data.appending("e").string)
        try f.write("e", String(repeating: "e", count: 1200))
        try f.write("g", String(repeating: "g", count: 1200))
        #expect(f.store.slicesBySize(["e", "g"], sliceBytes: 1000) == [["e", "g"]])
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
