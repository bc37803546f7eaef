import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
import TestSupport

/// Copying a peer's objects from a store on the same machine (the fetch of a path peer).
@Suite struct ObjectCopyTests {
    let sig = Signature(name: "phone", email: "phone@syncagent", time: 1_700_000_000)

    /// A commit of `files` (path -> bytes) on top of `parent` in `repo`.
    func commit(_ t: TempDevice, _ repo: Repository, _ files: [String: [UInt8]], parent: Oid?) throws -> Oid {
        let index = try repo.index()
        for (path, bytes) in files {
            let url = URL(fileURLWithPath: t.data.appending(path).string)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
            guard case .written(let blob) = try repo.writeBlob(fromFile: t.data.appending(path)) else {
                Issue.record("could not store \(path)"); continue
            }
            try index.add(FilePath(path), blob: blob, mode: 0o100644)
        }
        let tree = try index.writeTree()
        return try repo.createCommit(tree: tree, parents: parent.map { [$0] } ?? [], author: sig, committer: sig,
                                     message: "c\n", updateRef: "refs/heads/main")
    }

    func looseObjectPath(_ gitDir: FilePath, _ id: Oid) -> String {
        let hex = id.hex
        return gitDir.appending("objects").appending(String(hex.prefix(2))).appending(String(hex.dropFirst(2))).string
    }

    /// Seed 8000, cut 166: after a power cut the watch's store held a peer's commit C (its file
    /// made durable) without its parent B, and no ref named C. The copy must not take C for a
    /// commit whose history is here: B arrives, and so does a blob C's tree names that was lost.
    @Test func aCommitNoRefReachesIsNotTakenForItsHistory() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let a = try commit(phone, source, ["a.txt": Array("one\n".utf8)], parent: nil)
        let reader = try Repository.openForReading(gitDir: phone.gitDir)
        try target.copyMissingObjects(from: reader, tips: [a])
        try target.setReference("refs/remotes/phone/main", to: a, message: "fetched")
        let b = try commit(phone, source, ["b.txt": Array("two\n".utf8)], parent: a)
        let c = try commit(phone, source, ["c.txt": Array("three\n".utf8)], parent: b)
        // The cut: C (and its tree) made it to the watch's disk, B and C's new blob did not.
        try target.copyMissingObjects(from: reader, tips: [c])
        let cBlob = try #require(try source.treeFiles(try source.commit(c).tree).first { $0.path == "c.txt" }?.oid)
        for lost in [b, cBlob] { try FileManager.default.removeItem(atPath: looseObjectPath(watch.gitDir, lost)) }
        let reopened = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
        #expect(throws: GitError.self) { try reopened.commit(b) }
        // The next copy from the peer fills both holes.
        try reopened.copyMissingObjects(from: reader, tips: [c])
        #expect(try reopened.commit(b).parents == [a])
        #expect(try reopened.blobData(cBlob) == Array("three\n".utf8))
        // What a ref reaches is taken as whole: nothing more is copied.
        try reopened.setReference("refs/remotes/phone/main", to: c, message: "fetched")
        let again = try reopened.copyMissingObjects(from: reader, tips: [c])
        #expect(again.objects == 0)
    }

    /// Seed 9503, cut 65: the cut took a blob from under a commit a ref still names; a copy from the
    /// tips stops at that commit (it is whole by its ref), so the blob comes back only by its id.
    @Test func aBlobLostUnderARefIsCopiedByItsID() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let a = try commit(phone, source, ["d3/w-592.txt": Array("592\n".utf8)], parent: nil)
        let reader = try Repository.openForReading(gitDir: phone.gitDir)
        try target.copyMissingObjects(from: reader, tips: [a])
        try target.setReference("refs/remotes/phone/main", to: a, message: "fetched")
        let blob = try #require(try source.treeFiles(try source.commit(a).tree).first?.oid)
        try FileManager.default.removeItem(atPath: looseObjectPath(watch.gitDir, blob))
        let reopened = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
        #expect(try reopened.copyMissingObjects(from: reader, tips: [a]).objects == 0)  // the walk stops at the ref
        #expect(!reopened.hasObject(blob))
        let unknown = try #require(Oid(hex: String(repeating: "ab", count: 20)))
        let report = try reopened.copyObjects([blob, unknown], from: reader)
        #expect(report.objects == 1)
        #expect(try reopened.blobData(blob) == Array("592\n".utf8))
    }

    /// Seed 8000, cut 12: both devices wrote the same conflict record (one blob id). The copy of the
    /// peer's record commit skipped that blob (found here) and flushed only what it wrote; the
    /// phone's own write of it was not on disk yet, and the cut lost it under a ref. A young loose
    /// object a copied tree names is now listed for the flush.
    @Test func aYoungLooseObjectTheCopyReliesOnIsListedForTheFlush() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let record = Array("{\"id\": \"c-1\", \"path\": \"f.txt\"}\n".utf8)
        let shared = try target.createBlob(record)  // written here by another path, not flushed
        let tip = try commit(phone, source, ["c-1.json": record, "other.txt": Array("new\n".utf8)], parent: nil)
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip])
        #expect(report.reliedLoose == [shared])
        #expect(!report.looseIds.contains(shared))
    }

    /// Seed 9503, cut 65: a blob lost under a ref. A tree found here (written by this store's own
    /// merge or commit, not flushed yet) was taken as durable and not looked into: the copy flushed
    /// only what it wrote and the tree's blob, as young as the tree, was never listed. A young tree
    /// is looked into, whether it is the commit's root or a subtree.
    @Test func aYoungTreeTheCopyReliesOnIsLookedInto() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let files: [String: [UInt8]] = ["d3/w-592.txt": Array("592\n".utf8), "top.txt": Array("top\n".utf8)]
        // The watch wrote the same tree itself (its merge reached the same files), not yet flushed.
        let own = try commit(watch, target, files, parent: nil)
        let ownTree = try target.commit(own).tree
        try target.removeReference("refs/heads/main")
        let reader = try Repository.openForReading(gitDir: phone.gitDir)
        // The peer's commit of exactly that tree: the root is found here.
        let written = try commit(phone, source, files, parent: nil)
        let same = try source.createCommit(tree: try source.commit(written).tree, parents: [], author: sig, committer: sig,
                                           message: "the peer's\n", updateRef: nil)
        #expect(try source.commit(same).tree == ownTree)
        let sub = try #require(try source.treeEntries(ownTree).first { $0.name == "d3" }?.id)
        let blob = try #require(try source.treeFiles(ownTree).first { $0.path == "d3/w-592.txt" }?.oid)
        let rootReport = try target.copyMissingObjects(from: reader, tips: [same])
        #expect(rootReport.objects == 1)  // the commit
        #expect(Set(rootReport.reliedLoose).isSuperset(of: [ownTree, sub, blob]))
        // A commit on top: a new root, the subtree found here.
        try source.setReference("refs/heads/main", to: same, message: "the peer's")
        let tip = try commit(phone, source, ["new.txt": Array("n\n".utf8)], parent: same)
        let report = try target.copyMissingObjects(from: reader, tips: [tip])
        #expect(Set(report.reliedLoose).isSuperset(of: [sub, blob]))
        #expect(!report.looseIds.contains(sub) && !report.looseIds.contains(blob))
    }

    /// A change is planned against its parent's tree: what it shares with it by path is accounted
    /// for (the parent is reached by a ref here, so flushed before that ref moved) and is not
    /// looked at again. Two minutes after a first sync, every one-file fetch looked at each of
    /// the thousand young files beside the change. A young tree the parent does not have at that
    /// path is still looked into.
    @Test func aChangeIsPlannedAgainstItsParentAndAYoungTreeBesideItIsStillLookedInto() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let reader = try Repository.openForReading(gitDir: phone.gitDir)
        var files: [String: [UInt8]] = [:]
        for d in 0..<5 { for f in 0..<20 { files["d\(d)/f\(f).txt"] = Array("\(d) \(f)\n".utf8) } }
        // The watch wrote the same files itself (young loose objects), then fetched the phone's commit of them.
        _ = try commit(watch, target, files, parent: nil)
        let parent = try commit(phone, source, files, parent: nil)
        try target.copyMissingObjects(from: reader, tips: [parent])
        try target.setReference("refs/remotes/phone/main", to: parent, message: "fetched")
        // A young tree of the watch's own that the parent lacks (d9), not flushed, no ref.
        let mine = try commit(watch, target, ["d9/x.txt": Array("x\n".utf8)], parent: parent)
        try target.removeReference("refs/heads/main")
        let d9 = try #require(try target.treeEntries(try target.commit(mine).tree).first { $0.name == "d9" }?.id)
        let x = try #require(try target.treeFiles(try target.commit(mine).tree).first { $0.path == "d9/x.txt" }?.oid)
        #expect(target.isYoungLoose(d9) && target.isYoungLoose(x))
        // The phone changes one file and adds the same d9.
        let tip = try commit(phone, source, ["d2/f3.txt": Array("changed\n".utf8), "d9/x.txt": Array("x\n".utf8)], parent: parent)
        let report = try target.copyMissingObjects(from: reader, tips: [tip])
        #expect(report.objects == 4)  // the changed blob, d2, the root, the commit
        #expect(Set(report.reliedLoose) == [d9, x])
        let unchanged = try source.treeFiles(try source.commit(parent).tree).map(\.oid)
        #expect(unchanged.allSatisfy { target.isYoungLoose($0) })  // young, and still not relied on
        for id in try source.treeFiles(try source.commit(tip).tree).map(\.oid) { #expect(target.hasObject(id)) }
    }

    @Test func copiesOnlyWhatIsMissingAndStreamsBigBlobs() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let big = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) }
        let first = try commit(phone, source, ["a.txt": Array("one\n".utf8), "deep/er/b.bin": big], parent: nil)
        var report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [first],
                                                   limits: ObjectCopyLimits(streamAbove: 1 << 20))
        // commit, root tree, deep/, deep/er/, two blobs
        #expect(report.objects == 6)
        // The big blob is loose in a read-only file of this user's on this file system: linked
        // (hashed through the link), not written again.
        #expect(report.linked == 1 && report.streamed == 0, "\(report)")
        let files = try target.treeFiles(try target.commit(first).tree)
        #expect(files.map(\.path) == ["a.txt", "deep/er/b.bin"])
        #expect(try target.blobData(files[1].oid) == big)
        // Written out in chunks of the size asked for, the bytes are the same.
        var chunks: [Int] = [], streamed: [UInt8] = []
        try target.streamBlob(files[1].oid, chunk: 1 << 20) { chunks.append($0.count); streamed += $0 }
        #expect(chunks.count >= 3 && chunks.allSatisfy { $0 <= 1 << 20 })
        #expect(streamed == big)
        #expect(Oid.hashing(file: phone.data.appending("deep/er/b.bin")) == files[1].oid)

        // A second commit changing one small file: only that file, its tree and the commit travel.
        let second = try commit(phone, source, ["a.txt": Array("two\n".utf8)], parent: first)
        report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [second])
        #expect(report.objects == 3)
        #expect(try target.commit(second).parents == [first])
        // Nothing left to copy.
        report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [second])
        #expect(report.objects == 0)
    }

    /// Highly compressible content whose size is a multiple of the chunk: the last input bytes are
    /// consumed while the output buffer is full, and zlib still holds output.
    /// Random bytes (a photo's) are written loose without compression, by the commit (big and
    /// small files) and by the copy (streamed and whole): each loose file is about as big as its
    /// object, and git reads every one back byte for byte; `git fsck --full` finds nothing.
    @Test func randomBytesAreStoredLooseWithoutCompressionAndGitReadsThem() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        var rng = SystemRandomNumberGenerator()
        func random(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let files: [String: [UInt8]] = ["photo.jpg": random(3 << 20 | 12345), "thumb.jpg": random(5000),
                                        "exact.bin": random(1 << 20), "notes.txt": Array(String(repeating: "text\n", count: 2000).utf8)]
        let tip = try commit(phone, source, files, parent: nil)
        _ = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip])
        for (device, repo) in [(phone, source), (watch, target)] {
            for entry in try repo.treeFiles(try repo.commit(tip).tree) {
                let bytes = try #require(files[entry.path.string])
                let shown = try git(device.gitDir, ["cat-file", "blob", entry.oid.hex]).out
                #expect(Array(shown) == bytes, "git reads \(entry.path) in \(device.gitDir)")
                let onDisk = try #require(try FileManager.default.attributesOfItem(atPath: looseObjectPath(device.gitDir, entry.oid))[.size] as? Int)
                if entry.path.string == "notes.txt" {
                    #expect(onDisk < bytes.count / 10, "text is compressed")
                } else {
                    #expect(onDisk >= bytes.count && onDisk < bytes.count + bytes.count / 100 + 64, "\(entry.path): \(onDisk) bytes for \(bytes.count)")
                }
            }
            #expect(try git(device.gitDir, ["fsck", "--full", "--strict"]).status == 0, "git fsck in \(device.gitDir)")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: device.gitDir.appending("objects").string)
                .filter { $0.hasPrefix("tmp_obj_") }
            #expect(leftovers.isEmpty, "temporaries left: \(leftovers)")
        }
    }

    @Test(arguments: [1 << 20, 64 << 10, 4096])
    func compressibleBlobsStreamWhole(chunk: Int) throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let zeros = [UInt8](repeating: 0, count: 3 << 20)
        let id = try commit(t, repo, ["zeros.bin": zeros], parent: nil)
        let blob = try repo.treeFiles(try repo.commit(id).tree)[0].oid
        var streamed: [UInt8] = []
        try repo.streamBlob(blob, chunk: chunk) { streamed += $0 }
        #expect(streamed.count == zeros.count)
        #expect(streamed == zeros)
    }

    @Test func manyObjectsGoIntoAPackAndAllArrive() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        var files: [String: [UInt8]] = [:]
        for i in 0..<300 { files["d\(i % 7)/f\(i)"] = Array("file \(i)\n".utf8) }
        let tip = try commit(phone, source, files, parent: nil)
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip])
        #expect(report.objects == 300 + 7 + 1 + 1)
        let packs = try FileManager.default.contentsOfDirectory(atPath: watch.gitDir.appending("objects/pack").string)
        #expect(packs.filter { $0.hasSuffix(".pack") }.count == 1)
        let copied = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
        let tree = try copied.treeFiles(try copied.commit(tip).tree)
        #expect(tree.count == 300)
        for file in tree { #expect(try copied.blobData(file.oid) == files[file.path.string]) }
    }

    /// Every kind of content, in counts on both sides of the loose limit, copied with batches so
    /// small that packs are written in the middle of the copy, before the commit that names the
    /// blobs (a batch of blobs alone was once packed as nothing and the blobs lost: seen with
    /// 10,000 photos of 4 KB, where 32 MB filled before the commit came).
    @Test(arguments: [
        (files: 1, kind: "random"), (files: 63, kind: "random"), (files: 65, kind: "random"),
        (files: 700, kind: "random"), (files: 700, kind: "text"), (files: 700, kind: "empty"),
        (files: 700, kind: "mixed"),
    ])
    func everyObjectArrivesAcrossBatchLimits(files count: Int, kind: String) throws {
        for limits in [ObjectCopyLimits(looseLimit: 64, batchBytes: 32 << 20),
                       ObjectCopyLimits(looseLimit: 0, batchBytes: 4096),
                       ObjectCopyLimits(looseLimit: 16, batchBytes: 64 << 10),
                       ObjectCopyLimits(streamAbove: 2048, looseLimit: 3, batchBytes: 1)] {
            let phone = try TempDevice(), watch = try TempDevice()
            let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
            let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
            var generator = SystemRandomNumberGenerator()
            var files: [String: [UInt8]] = [:]
            for i in 0..<count {
                let size = [0, 1, 4095, 4096, 4097, 9000][i % 6]
                let random = kind == "random" || (kind == "mixed" && i % 2 == 0)
                files["d\(i % 5)/f\(i)"] = switch kind {
                case "empty": []
                case _ where random: (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
                default: Array(String(repeating: "line \(i)\n", count: size / 8 + 1).utf8)
                }
            }
            let first = try commit(phone, source, files, parent: nil)
            // A second commit on top, so that the copy spans commits too.
            let second = try commit(phone, source, ["late.txt": Array("late\n".utf8)], parent: first)
            let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [second],
                                                       limits: limits)
            let copied = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
            let tree = try copied.treeFiles(try copied.commit(first).tree)
            #expect(tree.count == files.count, "\(kind) x \(count), limits \(limits): \(report)")
            for file in tree { #expect(try copied.blobData(file.oid) == files[file.path.string]) }
            #expect(try copied.commit(second).parents == [first])
            // the blobs, the root and one tree per directory, the first commit; then a blob, a root, a commit
            #expect(report.objects == Set(tree.map(\.oid)).count + 1 + min(count, 5) + 1 + 3, "\(kind) x \(count)")
            // Nothing is left to copy, and git itself finds the store whole.
            #expect(try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [second]).objects == 0)
            let fsck = Process()
            fsck.executableURL = URL(fileURLWithPath: "/usr/bin/git")
            fsck.arguments = ["--git-dir", watch.gitDir.string, "fsck", "--no-dangling", "--full"]
            try fsck.run()
            fsck.waitUntilExit()
            #expect(fsck.terminationStatus == 0)
        }
    }

    /// A commit of `count` files whose blobs the phone wrote into one pack (as a big batch is),
    /// the trees and the commit loose. Returns the commit and the files.
    func packedBatch(_ t: TempDevice, _ repo: Repository, count: Int, size: Int = 100) throws -> (Oid, [String: [UInt8]]) {
        var files: [String: [UInt8]] = [:]
        let batch = try PackBatch(gitDir: t.gitDir)
        let index = try repo.index()
        var rng = SystemRandomNumberGenerator()
        for i in 0..<count {
            let path = "d\(i % 9)/f\(i)"
            let bytes = size > 1 << 20 ? (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
                : (0..<(size + i)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
            files[path] = bytes
            let url = URL(fileURLWithPath: t.data.appending(path).string)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
            guard case .written(let blob) = try repo.writeBlob(fromFile: t.data.appending(path), batch: batch) else {
                Issue.record("could not store \(path)"); continue
            }
            try index.add(FilePath(path), blob: blob, mode: 0o100644)
        }
        try batch.flush()
        repo.refreshObjects()
        let tree = try index.writeTree()
        let tip = try repo.createCommit(tree: tree, parents: [], author: sig, committer: sig, message: "c\n", updateRef: "refs/heads/main")
        return (tip, files)
    }

    func packFiles(_ gitDir: FilePath) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: gitDir.appending("objects/pack").string).sorted()
    }

    func fsck(_ gitDir: FilePath) throws -> Int32 {
        let fsck = Process()
        fsck.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        fsck.arguments = ["--git-dir", gitDir.string, "fsck", "--no-dangling", "--full"]
        try fsck.run()
        fsck.waitUntilExit()
        return fsck.terminationStatus
    }

    /// A peer's pack made only of blobs this store lacks is taken whole (nothing compressed again),
    /// through the indexer: every blob arrives, git finds the store whole, and the pack's name is
    /// the peer's (the same bytes).
    /// Many small packs (a bulk copy committed a slice at a time) are combined into one before it
    /// is adopted: every object arrives and is checked, the peer's packs count as taken whole, and
    /// no temporary folder is left behind.
    @Test func manySmallPacksAreCombinedBeforeTheyAreTaken() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let batch = try PackBatch(gitDir: phone.gitDir, flushBytes: 8 << 10)
        let index = try source.index()
        var files: [String: [UInt8]] = [:]
        for i in 0..<1_200 {
            let path = "d\(i % 7)/f\(i)"
            let bytes = (0..<(100 + i % 50)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ i &* 7) }
            files[path] = bytes
            try FileManager.default.createDirectory(atPath: phone.data.appending(path).removingLastComponent().string,
                                                    withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: phone.data.appending(path).string))
            guard case .written(let blob) = try source.writeBlob(fromFile: phone.data.appending(path), batch: batch) else {
                Issue.record("could not store \(path)"); continue
            }
            try index.add(FilePath(path), blob: blob, mode: 0o100644)
        }
        try batch.flush()
        source.refreshObjects()
        let tip = try source.createCommit(tree: try index.writeTree(), parents: [], author: sig, committer: sig, message: "c\n",
                                          updateRef: "refs/heads/main")
        let peerPacks = try packFiles(phone.gitDir).filter { $0.hasSuffix(".pack") }.count
        #expect(peerPacks >= 8)
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip],
                                                   limits: ObjectCopyLimits(wholePacksFrom: 16))
        #expect(report.wholePacks == peerPacks, "\(report)")
        let ours = try packFiles(watch.gitDir)
        #expect(ours.filter { $0.hasSuffix(".pack") }.count <= 2, "\(ours)")  // the combined one (and the trees' batch)
        #expect(!ours.contains { $0.hasPrefix("tmp_") })
        let tree = try target.treeFiles(try target.commit(tip).tree)
        #expect(tree.count == 1_200)
        for file in tree { #expect(try target.blobData(file.oid) == files[file.path.string]) }
        #expect(try fsck(watch.gitDir) == 0)
    }

    @Test func aPackOfNewBlobsIsTakenWhole() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let (tip, files) = try packedBatch(phone, source, count: 400)
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip])
        #expect(report.wholePacks == 1)
        #expect(report.objects == 400 + 9 + 1 + 1)
        #expect(try packFiles(watch.gitDir).filter { $0.hasSuffix(".pack") } == packFiles(phone.gitDir).filter { $0.hasSuffix(".pack") })
        let copied = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
        let tree = try copied.treeFiles(try copied.commit(tip).tree)
        #expect(tree.count == 400)
        for file in tree { #expect(try copied.blobData(file.oid) == files[file.path.string]) }
        #expect(try fsck(watch.gitDir) == 0)
        #expect(try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip]).objects == 0)
    }

    /// A few big files (photos) are worth a thousand small ones: their pack, 8 objects and 12 MB,
    /// is taken whole, though it holds far fewer objects than `wholePacksFrom`.
    @Test func aPackOfAFewPhotosIsTakenWhole() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let (tip, files) = try packedBatch(phone, source, count: 8, size: 1_500_000)
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip])
        #expect(report.wholePacks == 1, "\(report)")
        let packs = try packFiles(phone.gitDir).filter { $0.hasSuffix(".pack") }
        #expect(try packFiles(watch.gitDir).filter { $0.hasSuffix(".pack") } == packs)
        // One file system: linked, not copied (as `git clone --local` does). The phone removing its
        // pack later (a roll-up) leaves the watch's whole.
        let inode = { (dir: FilePath) throws -> UInt64 in
            (try FileManager.default.attributesOfItem(atPath: dir.appending("objects/pack").appending(packs[0]).string)[.systemFileNumber] as? UInt64) ?? 0
        }
        #expect(try inode(watch.gitDir) == inode(phone.gitDir))
        try FileManager.default.removeItem(atPath: phone.gitDir.appending("objects/pack").appending(packs[0]).string)
        let copied = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
        let tree = try copied.treeFiles(try copied.commit(tip).tree)
        #expect(tree.count == 8)
        for file in tree { #expect(try copied.blobData(file.oid) == files[file.path.string]) }
        #expect(try fsck(watch.gitDir) == 0)
    }

    /// A pack of which this store has the bigger part already, in bytes, is not taken whole: four
    /// 3 MB photos here, four 1.1 MB files wanted (half of the pack by count, 4.4 MB) would store
    /// the photos twice, in a pack too big to be rolled up. The four come one by one.
    @Test func aPackMostlyHereInBytesIsNotTakenWhole() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        var rng = SystemRandomNumberGenerator()
        var files: [String: [UInt8]] = [:]
        for i in 0..<4 { files["p\(i).jpg"] = (0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        for i in 0..<4 { files["n\(i).raw"] = (0..<1_100_000).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let batch = try PackBatch(gitDir: phone.gitDir)
        let index = try source.index()
        for (path, bytes) in files.sorted(by: { $0.key < $1.key }) {
            try index.add(FilePath(path), blob: try bytes.withUnsafeBytes { try batch.write($0) }, mode: 0o100644)
        }
        try batch.flush()
        source.refreshObjects()
        let tip = try source.createCommit(tree: try index.writeTree(), parents: [], author: sig, committer: sig, message: "c\n",
                                          updateRef: "refs/heads/main")
        let held = try PackBatch(gitDir: watch.gitDir)
        for i in 0..<4 { _ = try files["p\(i).jpg"]!.withUnsafeBytes { try held.write($0) } }
        try held.flush()
        target.refreshObjects()
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip])
        #expect(report.wholePacks == 0, "\(report)")
        let copied = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
        for file in try copied.treeFiles(try copied.commit(tip).tree) { #expect(try copied.blobData(file.oid) == files[file.path.string]) }
        let stats = try git(watch.gitDir, ["count-objects", "-v"])
        let sizePack = String(decoding: stats.out, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("size-pack: ") }
            .map { Int($0.dropFirst(11)) ?? 0 } ?? 0
        #expect(sizePack < 18_000, "the photos once: \(sizePack) KiB of packs")
        #expect(try fsck(watch.gitDir) == 0)
    }

    /// A big loose blob is linked only from a read-only file: one the peer's user could still
    /// write to is streamed into a file of this store's own, and either way the bytes are the blob's
    /// and no temporary name is left behind.
    @Test func aBigLooseBlobIsLinkedOnlyFromAReadOnlyFile() throws {
        let inode = { (path: String) throws -> UInt64 in
            (try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64) ?? 0
        }
        for writable in [false, true] {
            let phone = try TempDevice(), watch = try TempDevice()
            let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
            let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
            let photo = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 11) }
            let tip = try commit(phone, source, ["photo.jpg": photo], parent: nil)
            let blob = try source.treeFiles(try source.commit(tip).tree)[0].oid
            let peerPath = looseObjectPath(phone.gitDir, blob)
            if writable { try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: peerPath) }
            let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip],
                                                       limits: ObjectCopyLimits(streamAbove: 1 << 20))
            #expect(report.linked == (writable ? 0 : 1) && report.streamed == (writable ? 1 : 0), "\(report)")
            let ours = looseObjectPath(watch.gitDir, blob)
            #expect(try (inode(ours) == inode(peerPath)) == !writable)
            #expect(try target.blobData(blob) == photo)
            for folder in [FilePath(ours).removingLastComponent().string, watch.gitDir.appending("objects").string] {
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder).allSatisfy { !$0.hasPrefix("tmp_") })
            }
            #expect(try fsck(watch.gitDir) == 0)
        }
    }

    /// A peer's pack that is writable is copied, not linked: a later write to the peer's file must
    /// not reach this store.
    @Test func aWritablePeerPackIsCopiedNotLinked() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let (tip, _) = try packedBatch(phone, source, count: 4, size: 1_500_000)
        let pack = try packFiles(phone.gitDir).first { $0.hasSuffix(".pack") }!
        let peerPath = phone.gitDir.appending("objects/pack").appending(pack).string
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: peerPath)
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip])
        #expect(report.wholePacks == 1, "\(report)")
        let ours = watch.gitDir.appending("objects/pack").appending(pack).string
        let inode = { (path: String) throws -> UInt64 in
            (try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64) ?? 0
        }
        #expect(try inode(ours) != inode(peerPath), "a writable pack was linked")
        #expect(try fsck(watch.gitDir) == 0)
    }

    /// A pack whose trees name blobs that are neither in it nor here is refused by the indexer and
    /// leaves nothing behind; the copy takes the objects one by one instead, and all arrive.
    @Test func aPackThatIsNotWholeHereIsCopiedObjectByObject() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        var files: [String: [UInt8]] = [:]
        for i in 0..<300 { files["d\(i)/f"] = Array("file \(i)\n".utf8) }
        let tip = try commit(phone, source, files, parent: nil)
        // The trees and the commit in a pack of their own; the blobs stay loose.
        let trees = try source.treeFiles(try source.commit(tip).tree).map { _ in () }.count
        #expect(trees == 300)
        let list = Process()
        list.executableURL = URL(fileURLWithPath: "/bin/sh")
        list.arguments = ["-c", "git --git-dir '\(phone.gitDir.string)' rev-list --objects \(tip.hex) | cut -c1-40 | "
                          + "git --git-dir '\(phone.gitDir.string)' cat-file --batch-check='%(objecttype) %(objectname)' | "
                          + "awk '$1 != \"blob\" {print $2}' | git --git-dir '\(phone.gitDir.string)' pack-objects -q '\(phone.gitDir.string)/objects/pack/pack'"]
        list.standardOutput = FileHandle.nullDevice
        try list.run()
        list.waitUntilExit()
        #expect(list.terminationStatus == 0)
        #expect(try packFiles(phone.gitDir).filter { $0.hasSuffix(".pack") }.count == 1)
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip],
                                                   limits: ObjectCopyLimits(wholePacksFrom: 100))
        #expect(report.wholePacks == 0)
        #expect(report.objects == 300 + 300 + 1 + 1)
        #expect(try packFiles(watch.gitDir).allSatisfy { !$0.hasPrefix("tmp") })
        let copied = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
        for file in try copied.treeFiles(try copied.commit(tip).tree) { #expect(try copied.blobData(file.oid) == files[file.path.string]) }
        #expect(try fsck(watch.gitDir) == 0)
    }

    /// A pack git itself made of a whole history (trees, commits, blobs stored as deltas of one
    /// another) is taken whole with its index: each object read back through its deltas hashes to
    /// its id, and git finds the copy whole.
    @Test func aPackGitMadeWithDeltasIsTakenWhole() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        var files: [String: [UInt8]] = [:]
        for i in 0..<300 { files["d\(i % 7)/f\(i)"] = Array(String(repeating: "the same long line of text, nearly\n", count: 40).utf8) + Array("\(i)\n".utf8) }
        let first = try commit(phone, source, files, parent: nil)
        files["d0/f0"] = Array("changed\n".utf8)
        let tip = try commit(phone, source, files, parent: first)
        #expect(try runProgram("/usr/bin/git", ["--git-dir", phone.gitDir.string, "repack", "-a", "-d", "-q"]).status == 0)
        #expect(try packFiles(phone.gitDir).filter { $0.hasSuffix(".pack") }.count == 1)
        let report = try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip],
                                                   limits: ObjectCopyLimits(wholePacksFrom: 100))
        #expect(report.wholePacks == 1)
        let copied = try Repository.open(gitDir: watch.gitDir, workdir: watch.data)
        for file in try copied.treeFiles(try copied.commit(tip).tree) { #expect(try copied.blobData(file.oid) == files[file.path.string]) }
        #expect(try copied.commit(tip).parents == [first])
        #expect(try packFiles(watch.gitDir).allSatisfy { !$0.hasPrefix("tmp") })
        #expect(try fsck(watch.gitDir) == 0)
    }

    /// A damaged pack is refused whole (its checksum, or an object's id, does not hold), and the
    /// copy of the object it lacks fails: nothing of the damage is stored, the commit is not here.
    @Test func aDamagedPackIsRefused() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let (tip, _) = try packedBatch(phone, source, count: 400)
        let pack = try #require(try packFiles(phone.gitDir).first { $0.hasSuffix(".pack") })
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: phone.gitDir.appending("objects/pack").appending(pack).string))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size / 2)
        let byte = try handle.read(upToCount: 1)!
        try handle.seek(toOffset: size / 2)
        handle.write(Data([byte[0] ^ 0xff]))
        try handle.close()
        #expect(throws: GitError.self) {
            try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip])
        }
        #expect(!target.hasObject(tip))
        #expect(try packFiles(watch.gitDir).allSatisfy { !$0.hasPrefix("tmp") && !$0.hasSuffix(".pack") })
    }

    @Test func refusesADamagedPeerObjectAndStoresNothingUnderItsName() throws {
        for streamAbove in [1 << 20, 1 << 30] {
            let phone = try TempDevice(), watch = try TempDevice()
            let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
            let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
            let big = [UInt8](repeating: 7, count: 2 << 20)
            let other = [UInt8](repeating: 8, count: 2 << 20)
            let tip = try commit(phone, source, ["big.bin": big, "other.bin": other], parent: nil)
            let files = try source.treeFiles(try source.commit(tip).tree)
            // The peer's object for big.bin now holds other.bin's bytes.
            let victim = looseObjectPath(phone.gitDir, files[0].oid)
            try FileManager.default.removeItem(atPath: victim)
            try FileManager.default.copyItem(atPath: looseObjectPath(phone.gitDir, files[1].oid), toPath: victim)
            #expect(throws: GitError.self) {
                try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip],
                                              limits: ObjectCopyLimits(streamAbove: streamAbove))
            }
            #expect(!target.hasObject(files[0].oid))
            #expect(!target.hasObject(tip))
            // Nor under a temporary name (a link is made before its bytes are checked).
            let folder = FilePath(looseObjectPath(watch.gitDir, files[0].oid)).removingLastComponent().string
            let left = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            #expect(left.isEmpty, "\(left)")
            let top = try FileManager.default.contentsOfDirectory(atPath: watch.gitDir.appending("objects").string)
            #expect(!top.contains { $0.hasPrefix("tmp_") }, "\(top)")
        }
    }

    @Test func cancellingStopsTheCopyBeforeTheCommit() throws {
        let phone = try TempDevice(), watch = try TempDevice()
        let source = try Repository.create(gitDir: phone.gitDir, workdir: phone.data)
        let target = try Repository.create(gitDir: watch.gitDir, workdir: watch.data)
        let tip = try commit(phone, source, ["a": [1], "b": [2], "c": [3]], parent: nil)
        #expect(throws: GitError.self) {
            try target.copyMissingObjects(from: Repository.openForReading(gitDir: phone.gitDir), tips: [tip],
                                          progress: { $0.objects < 2 })
        }
        #expect(!target.hasObject(tip))
    }
}
