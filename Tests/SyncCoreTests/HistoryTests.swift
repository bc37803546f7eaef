@testable import FileSystem
import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

@Suite struct HistoryTests {
    /// Versions arrive through a peer: added on the phone, edited on the watch, renamed and edited
    /// on the phone. The watch's history of the new name lists all four, following the rename.
    @Test func historyFollowsARenameAcrossDevices() throws {
        let t = try TwoDevices()
        try t.phone.write("a.txt", "one\n")
        try t.phone.commit(FilePath("a.txt"))
        _ = try t.watch.pull(from: t.phone)
        try t.watch.write("a.txt", "two\n")
        try t.watch.commit(FilePath("a.txt"))
        _ = try t.phone.pull(from: t.watch)
        try FileManager.default.moveItem(atPath: t.phone.data.appending("a.txt").string, toPath: t.phone.data.appending("b.txt").string)
        try t.phone.commit(FilePath("a.txt"), FilePath("b.txt"))
        try t.phone.write("b.txt", "three\n")
        try t.phone.commit(FilePath("b.txt"))
        _ = try t.watch.pull(from: t.phone)

        let history = try t.watch.store.history(of: FilePath("b.txt"))
        #expect(history.map(\.change) == [.modified, .renamed, .modified, .added])
        #expect(history.map(\.device) == ["phone", "phone", "watch", "phone"])
        #expect(history[1].from == "a.txt")
        #expect(history.map(\.path) == ["b.txt", "b.txt", "a.txt", "a.txt"])
        #expect(history[0].blob == Oid.hashing(Array("three\n".utf8)).hex)
        #expect(try t.watch.store.history(of: FilePath("b.txt"), limit: 2).count == 2)
        // The old name's history ends with the move away.
        let old = try t.watch.store.history(of: FilePath("a.txt"))
        #expect(old.first?.change == .deleted)
        #expect(old.first?.to == "b.txt")

        // The watch's own version, restored under today's name.
        let watchEdit = try #require(Oid(hex: history[2].commit))
        let version = try t.watch.store.version(of: FilePath("b.txt"), at: watchEdit)
        #expect(version[FilePath("b.txt")]?.oid == Oid.hashing(Array("two\n".utf8)))
        // No --at: the version before the newest change.
        let point = try t.watch.store.restorePoint(for: FilePath("b.txt"), at: nil)
        let changes = try t.watch.store.restoreChanges(FilePath("b.txt"), to: point.commit.oid)
        #expect(changes.count == 1)
        #expect(changes.first?.new?.oid == Oid.hashing(Array("two\n".utf8)))
    }

    @Test func badRestorePointsSayWhatToDo() throws {
        let t = try TwoDevices()
        try t.phone.write("a.txt", "one\n")
        try t.phone.commit(FilePath("a.txt"))
        #expect(throws: StoreError.self) { try t.phone.store.restorePoint(for: FilePath("a.txt"), at: "yesterday") }
        #expect(throws: StoreError.self) { try t.phone.store.restorePoint(for: FilePath("a.txt"), at: "2001-01-01T00:00:00Z") }
        // Only one version: nothing older to go back to.
        #expect(throws: StoreError.self) { try t.phone.store.restorePoint(for: FilePath("a.txt"), at: nil) }
    }
}

@Suite struct LoosePackingTests {
    /// Loose objects move into packs in slices; every object stays readable, fsck is clean.
    @Test func looseObjectsMoveIntoPacksAndNothingIsLost() throws {
        let t = try TwoDevices()
        var written: [String: String] = [:]
        for i in 0..<400 {
            let rel = "d\(i % 10)/f\(i).txt"
            try t.phone.write(rel, "file \(i)\n")
            written[rel] = "file \(i)\n"
        }
        // Batches below `Store.prehashThreshold` write their objects loose.
        let paths = written.keys.sorted().map { FilePath($0) }
        for start in stride(from: 0, to: paths.count, by: 50) {
            try t.phone.commit(contentsOf: Array(paths[start..<min(start + 50, paths.count)]))
        }
        let loose = t.phone.store.looseCount()
        #expect(loose > 400)
        var flushed: [FilePath] = []
        Directory.walk(t.phone.gitDir.appending("objects")) { rel, _ in
            let file = t.phone.gitDir.appending("objects").pushing(rel)
            if rel.components.count == 2, rel.components.first?.string.count == 2, DurableFiles.remembers(file) { flushed.append(file) }
        }
        // Under the minimum: nothing happens.
        #expect(try t.phone.store.packLooseObjects(minimum: loose + 1).packed == 0)
        var slices = 0
        while true {
            let slice = try t.phone.store.packLooseObjects(maxObjects: 150, minimum: 1)
            slices += 1
            if !slice.more { break }
        }
        #expect(slices >= 3)
        #expect(t.phone.store.looseCount() == 0)
        // The files flushed at each commit are remembered (not flushed again) while they exist,
        // and forgotten once packed: the memo holds the store's live files, not every one since start.
        if !Durability.disabled {
            #expect(!flushed.isEmpty)
            #expect(flushed.filter { DurableFiles.remembers($0) }.count == 0, "of \(flushed.count) flushed loose objects")
        }
        let head = try #require(try t.phone.store.head())
        let files = try t.phone.store.files(at: head)
        #expect(files.count == 400)
        #expect(try gitFsck(t.phone.gitDir, full: true) == 0)
        #expect(t.phone.store.diskBytes() > 0)
    }

    /// Photos (random bytes) kept loose without compression move into packs as they are, beside
    /// text that the pack builder compresses: every object readable, fsck clean, and the photos'
    /// pack about as big as the photos.
    @Test func looseRandomBlobsMoveIntoPacksAsTheyAre() throws {
        let t = try TwoDevices()
        var rng = SystemRandomNumberGenerator()
        var written: [String: [UInt8]] = [:]
        for i in 0..<40 {
            written["photos/p\(i).jpg"] = (0..<(100_000 + i)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            written["notes/n\(i).txt"] = Array("note \(i)\n".utf8)
        }
        for (rel, bytes) in written {
            try FileManager.default.createDirectory(atPath: t.phone.data.appending(rel).removingLastComponent().string,
                                                    withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: t.phone.data.appending(rel).string))
        }
        let paths = written.keys.sorted().map { FilePath($0) }
        for start in stride(from: 0, to: paths.count, by: 20) {  // small batches: loose objects
            try t.phone.commit(contentsOf: Array(paths[start..<min(start + 20, paths.count)]))
        }
        #expect(t.phone.store.looseCount() > 80)
        #expect(try t.phone.store.packLooseObjects(maxObjects: 4096, minimum: 1).more == false)
        #expect(t.phone.store.looseCount() == 0)
        // Two packs: the pack builder's (text, trees, commits) and the photos' as they were.
        let packs = try FileManager.default.contentsOfDirectory(atPath: t.phone.gitDir.appending("objects/pack").string)
            .filter { $0.hasSuffix(".pack") }
        #expect(packs.count == 2, "\(packs)")
        let head = try #require(try t.phone.store.head())
        for file in try t.phone.store.files(at: head) {
            #expect(try t.phone.store.blob(file.oid) == written[file.path.string], "\(file.path)")
        }
        #expect(try gitFsck(t.phone.gitDir, full: true) == 0)
        let photos = written.filter { $0.key.hasPrefix("photos/") }.values.reduce(0) { $0 + $1.count }
        #expect(t.phone.store.diskBytes() < Int64(photos) * 11 / 10 + 1_000_000)
    }

    /// A big batch (a bulk copy, a start-up commit) writes its blobs straight into packs: no
    /// inode per file, nothing to repack later; every byte readable, fsck clean.
    @Test func aBigBatchWritesItsBlobsIntoPacks() throws {
        let t = try TwoDevices()
        var written: [String: String] = [:]
        for i in 0..<(Store.prehashThreshold * 2) {
            let rel = "d\(i % 10)/f\(i).txt"
            try t.phone.write(rel, "file \(i)\n")
            written[rel] = "file \(i)\n"
        }
        try t.phone.commit(contentsOf: written.keys.map { FilePath($0) })
        // Loose: only the commit and its trees (the root and ten directories).
        #expect(t.phone.store.looseCount() <= 12)
        let head = try #require(try t.phone.store.head())
        let files = try t.phone.store.files(at: head)
        #expect(files.count == written.count)
        for file in files {
            #expect(String(decoding: try t.phone.store.blob(file.oid), as: UTF8.self) == written[file.path.string])
        }
        #expect(try gitFsck(t.phone.gitDir, full: true) == 0)
    }
}

extension TwoDevices.Device {
    func commit(contentsOf paths: [FilePath]) throws { _ = try store.commit(paths: Set(paths)) }
}

extension Store {
    func looseCount() -> Int { repo.looseObjects(limit: .max).count }
}

/// Powercut seed 2, cut 15: the watch's merge caught its own in-place write half-way (an empty
/// file), which became the record's watch version; the whole version came and was committed; then
/// `resolve --keep newest` wrote the record's empty version over it. An edit committed after the
/// conflict is the newest version: `newest` keeps it.
@Suite struct ResolveAfterALaterEditTests {
    @Test func newestKeepsAnEditCommittedAfterTheConflict() throws {
        let t = try TwoDevices()
        try t.phone.write("n.txt", "base\n", mtime: 1_700_000_000)
        try t.phone.commit(FilePath("n.txt"))
        _ = try t.watch.pull(from: t.phone)
        try t.phone.write("n.txt", "phone's edit\n", mtime: 1_700_000_100)
        try t.phone.commit(FilePath("n.txt"))
        try t.watch.write("n.txt", "", mtime: 1_700_000_200)  // caught half-way
        try t.watch.commit(FilePath("n.txt"))
        let merged = try t.watch.pull(from: t.phone)
        let record = try #require(merged.newConflicts.first)
        // The user's program finishes its write: a later edit, committed.
        try t.watch.write("n.txt", "the whole version\n", mtime: 1_700_000_300)
        try t.watch.commit(FilePath("n.txt"))
        let resolved = try t.watch.store.resolve(record, .newest)
        #expect(resolved.status == .resolved)
        #expect(t.watch.read("n.txt") == "the whole version\n")
    }
}
