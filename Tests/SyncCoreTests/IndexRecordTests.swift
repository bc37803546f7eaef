import FileSystem
import Foundation
import Git
@testable import ObjectStorage
import PropertyBased
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// The commit path builds `main`'s tree along the changed paths from the index it keeps in
/// memory: that tree must be exactly the one the whole index gives, whatever the edits.
@Suite struct IndexRecordTests {
    /// Paths that nest in every way a data directory can: files that become directories and back.
    static let universe = ["a", "a/b", "a/b/c", "a/b/d", "a/e", "f", "f/g", "h/i/j", "h/i/k", "h/l", "m"].map { FilePath($0) }

    @Test func treeAlongChangedPathsIsTheWholeIndexTree() async throws {
        await propertyCheck(count: 60, input: Gen.int(in: 0...(Self.universe.count * 4 - 1)).array(of: 1...30)) { ops in
            do {
                try Self.replay(ops)
            } catch {
                Issue.record("ops \(ops): \(error)")
            }
        }
    }

    /// Each op sets one path of the universe (and checks `diffTrees` against libgit2's diff) to a blob (or removes it), the way the commit path
    /// does: what stands in its way (a file above it, files under it) goes first. Batches of three
    /// ops, each checked against `index.writeTree()`.
    static func replay(_ ops: [Int]) throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let index = try store.liveIndex()
        var tree: Oid? = nil
        var touched: Set<FilePath> = []
        for (n, op) in ops.enumerated() {
            let path = universe[op % universe.count]
            let kind = op / universe.count  // 0, 1: a blob; 2: executable; 3: remove
            for entry in index.entries(under: path) { try index.remove(entry.path); touched.insert(entry.path) }
            if kind == 3 {
                try index.remove(path)
            } else {
                var up = path.removingLastComponent()
                while !up.isEmpty {
                    if index.entry(up) != nil { try index.remove(up); touched.insert(up) }
                    up = up.removingLastComponent()
                }
                let blob = try store.repo.createBlob(Array("\(path) \(n)".utf8))
                try index.add(path, blob: blob, mode: kind == 2 ? 0o100755 : 0o100644)
            }
            touched.insert(path)
            if n % 3 == 2 || n == ops.count - 1 {
                let along = try store.treeFollowingIndex(index, base: tree, paths: touched)
                let whole = try index.writeTree()
                #expect(along == whole, "after op \(n) of \(ops), touched \(touched.map(\.string).sorted())")
                // The diff that skips equal subtrees by id finds what libgit2's full walk finds.
                let diff = try store.repo.diffTrees(tree, along)
                let reference = try store.repo.diffTreesReadingEverything(tree, along)
                    .sorted { $0.path.bytes.lexicographicallyPrecedes($1.path.bytes) }
                #expect(diff == reference, "diff after op \(n) of \(ops)")
                tree = along
                touched = []
            }
        }
    }

    /// The scan trusts stat data, but not an edit that keeps the size and puts the mtime back
    /// (`touch -r`, rsync -t) or moves it backwards (a clock set back): ctime shows both.
    @Test func editsThatKeepSizeAndMtimeAreFound() throws {
        let fixture = try StoreFixture()
        try fixture.write("same.txt", "version 1\n", mtime: 1_700_000_000)
        try fixture.write("back.txt", "version 1\n", mtime: 1_700_000_000)
        try fixture.settle("same.txt", "back.txt")
        _ = try fixture.store.commit(paths: ["same.txt", "back.txt"])
        #expect(try fixture.store.changedSinceLastCommit().isEmpty)
        try fixture.write("same.txt", "version 2\n", mtime: 1_700_000_000)  // same size, same mtime
        try fixture.write("back.txt", "version 2\n", mtime: 1_000_000_000)  // the clock went back
        #expect(try fixture.store.changedSinceLastCommit() == ["same.txt", "back.txt"])
        let outcome = try fixture.store.commit(paths: fixture.store.changedSinceLastCommit())
        #expect(outcome.summary.modified.count == 2)
        #expect(try fixture.headContents() == ["same.txt": "version 2\n", "back.txt": "version 2\n"])
    }

    /// A crash after commits whose index was never saved: the next start puts the index back at
    /// `main`, the scan finds nothing to commit, and a real change after it commits as usual.
    @Test func anIndexFileBehindMainIsPutBack() throws {
        let fixture = try StoreFixture()
        try fixture.write("keep.txt", "one")
        try fixture.write("dir/gone.txt", "two")
        _ = try fixture.store.commit(paths: ["keep.txt", "dir/gone.txt"])
        fixture.store.deferIndexWrites = true
        try fixture.write("keep.txt", "one, edited")
        try fixture.write("new.txt", "three")
        try fixture.remove("dir")
        let head = try fixture.store.commit(paths: ["keep.txt", "new.txt", "dir", "dir/gone.txt"]).commit
        #expect(head != nil)
        #expect(fixture.store.indexIsDirty)

        // "Crash": a new store object reads the index file, which is still at the first commit.
        let again = try Store.open(device: "phone", data: fixture.data, gitDir: fixture.gitDir)
        #expect(try again.reconcileIndexWithHead().map(\.string).sorted() == ["dir/gone.txt", "keep.txt", "new.txt"])
        #expect(try again.repo.diffIndex(try again.liveIndex(), against: try again.commitInfo(head!.oid).tree).isEmpty)
        let changed = try again.changedSinceLastCommit()
        #expect(try again.commit(paths: changed).commit == nil)  // the same bytes: nothing new
        #expect(try again.headID() == head)
        try fixture.write("new.txt", "three, edited")
        #expect(try again.commit(paths: ["new.txt"]).commit != nil)
        #expect(try fixture.headContents() == ["keep.txt": "one, edited", "new.txt": "three, edited"])
    }
}
