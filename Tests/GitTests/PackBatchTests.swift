import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
import TestSupport

/// The packs a batch writes itself (`PackFileWriter`): git must read them as its own.
@Suite struct PackBatchTests {
    func packFiles(_ gitDir: FilePath) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: gitDir.appending("objects/pack").string).sorted()
    }

    /// Sizes around the object header's 4- and 11-bit steps, empty, text that compresses, and bytes
    /// that do not (a photo's), all read back byte for byte by git and by libgit2.
    @Test func gitReadsEveryObjectOfABatchBackAsWritten() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        var contents: [[UInt8]] = [[], [0x41], Array(repeating: 0x61, count: 15), Array(repeating: 0x62, count: 16),
                                   Array(repeating: 0x63, count: 2047), Array(repeating: 0x64, count: 2048),
                                   Array("some text\n".utf8)]
        var rng = SystemRandomNumberGenerator()
        contents.append((0..<200_000).map { _ in UInt8.random(in: 0...255, using: &rng) })
        contents.append((0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) })  // stored, not deflated
        contents.append((0..<70_000).map { UInt8(truncatingIfNeeded: $0 / 100) })
        let batch = try PackBatch(gitDir: t.gitDir)
        var ids: [Oid] = []
        for bytes in contents {
            ids.append(try bytes.withUnsafeBytes { try batch.write($0) })
        }
        // The same bytes again: one object, not two.
        #expect(try contents[6].withUnsafeBytes { try batch.write($0) } == ids[6])
        #expect(try packFiles(t.gitDir).allSatisfy { $0.hasPrefix("tmp_pack_") }, "nothing is in place before the flush")
        try batch.flush()
        let files = try packFiles(t.gitDir)
        #expect(files.count == 2 && files.allSatisfy { $0.hasPrefix("pack-") }, "\(files)")
        #expect(batch.packs == 1)

        let pack = t.gitDir.appending("objects/pack").appending(files.first { $0.hasSuffix(".idx") }!)
        // Named as git names a pack: by the checksum its last 20 bytes hold.
        let packBytes = try Data(contentsOf: URL(fileURLWithPath: String(pack.string.dropLast(4)) + ".pack"))
        let trailer = packBytes.suffix(20).map { String(format: "%02x", $0) }.joined()
        #expect(pack.lastComponent?.string == "pack-\(trailer).idx")
        let verify = try git(t.gitDir, ["verify-pack", "-v", pack.string])
        #expect(verify.status == 0, "git verify-pack refused the pack: \(String(decoding: verify.out, as: UTF8.self))")
        #expect(String(decoding: verify.out, as: UTF8.self).contains("non delta: \(contents.count) objects"))
        for (id, bytes) in zip(ids, contents) {
            let shown = try git(t.gitDir, ["cat-file", "blob", id.hex])
            #expect(shown.status == 0 && Array(shown.out) == bytes, "git cat-file \(id)")
            repo.refreshObjects()
            #expect(try repo.blobData(id) == bytes, "libgit2 reads \(id)")
        }
        #expect(batch.has(ids[3]), "after the flush, the store has it")
    }

    /// A batch that passes its size starts a new pack; each is whole on its own, and an object
    /// already in the store is not written again.
    @Test func aBigBatchIsSeveralWholePacksAndSkipsWhatTheStoreHas() throws {
        let t = try TempDevice()
        _ = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let first = try PackBatch(gitDir: t.gitDir)
        let known = Array("already here\n".utf8)
        _ = try known.withUnsafeBytes { try first.write($0) }
        try first.flush()

        let batch = try PackBatch(gitDir: t.gitDir, flushBytes: 64 << 10)
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<40 {
            let bytes = (0..<8192).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try bytes.withUnsafeBytes { try batch.write($0) }
        }
        _ = try known.withUnsafeBytes { try batch.write($0) }
        try batch.flush()
        #expect(batch.packs >= 4, "40 x 8 KiB of random bytes over 64 KiB packs: \(batch.packs)")
        var objects = 0
        for idx in try packFiles(t.gitDir) where idx.hasSuffix(".idx") {
            let verify = try git(t.gitDir, ["verify-pack", "-v", t.gitDir.appending("objects/pack").appending(idx).string])
            #expect(verify.status == 0)
            let text = String(decoding: verify.out, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("non delta: ") }) {
                objects += Int(line.split(separator: " ")[2]) ?? 0
            }
        }
        #expect(objects == 41, "every object once: \(objects)")
        #expect(try gitFsck(t.gitDir, full: true) == 0)
    }

    /// A batch whose pack could not be written says so at every later call, its final flush
    /// included: a caller that kept the ids of its earlier writes must not use them.
    @Test func aBatchThatFailedOnceRefusesToFlush() throws {
        let t = try TempDevice()
        _ = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let batch = try PackBatch(gitDir: t.gitDir, flushBytes: 1024)
        var rng = SystemRandomNumberGenerator()
        let first = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) }  // does not compress
        _ = try first.withUnsafeBytes { try batch.write($0) }  // over 1 KiB: its pack is written
        #expect(batch.packs == 1)
        // The pack directory replaced by a file: the next pack cannot even start.
        let packDir = t.gitDir.appending("objects/pack").string
        try FileManager.default.moveItem(atPath: packDir, toPath: packDir + ".away")
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: packDir))
        #expect(throws: GitError.self) { _ = try Array("second\n".utf8).withUnsafeBytes { try batch.write($0) } }
        try FileManager.default.removeItem(atPath: packDir)
        try FileManager.default.moveItem(atPath: packDir + ".away", toPath: packDir)
        #expect(throws: GitError.self) { _ = try Array("third\n".utf8).withUnsafeBytes { try batch.write($0) } }
        #expect(throws: GitError.self) { try batch.flush() }
        #expect(try packFiles(t.gitDir).allSatisfy { $0.hasPrefix("pack-") }, "no temporary left")
    }

    /// Files over 1 MiB stream into the batch's pack (read once, never held whole): a photo, a big
    /// text, the photo's copy and a file an earlier pack holds. Each id is git's; the copy and the
    /// known file are taken back out of the pack (after the file had them: a photo passes the
    /// 256 KiB the writer buffers), so every object is in the packs once and git verifies them all.
    @Test func bigFilesStreamIntoThePackOnce() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        var rng = SystemRandomNumberGenerator()
        let photo = (0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let text = Array(String(repeating: "a line of a big text file\n", count: 100_000).utf8)
        let known = Array(String(repeating: "already in the store, loose\n", count: 60_000).utf8)
        for (name, bytes) in [("photo.jpg", photo), ("big.txt", text), ("copy.jpg", photo), ("known.txt", known)] {
            try Data(bytes).write(to: URL(fileURLWithPath: t.data.appending(name).string))
        }
        let first = try PackBatch(gitDir: t.gitDir)
        guard case .written(let knownId) = try repo.writeBlob(fromFile: t.data.appending("known.txt"), batch: first) else {
            Issue.record("known.txt was not stored")
            return
        }
        try first.flush()
        let batch = try PackBatch(gitDir: t.gitDir, flushBytes: 2 << 20)
        var ids: [String: Oid] = [:]
        for name in ["photo.jpg", "big.txt", "copy.jpg", "known.txt"] {
            guard case .written(let id) = try repo.writeBlob(fromFile: t.data.appending(name), batch: batch) else {
                Issue.record("\(name) was not stored")
                return
            }
            ids[name] = id
            let hashed = try git(t.gitDir, ["hash-object", t.data.appending(name).string])
            #expect(String(decoding: hashed.out, as: UTF8.self).hasPrefix(id.hex), "\(name): git's id")
        }
        #expect(ids["copy.jpg"] == ids["photo.jpg"] && ids["known.txt"] == knownId)
        try batch.flush()
        // The photo, then the big text (in stored blocks until the store is at rest, 2.6 MB) each
        // take a pack past 2 MiB, which is then finished.
        #expect(batch.packs == 3, "a pack per object over 2 MiB: \(batch.packs)")
        var objects = 0
        for idx in try packFiles(t.gitDir) where idx.hasSuffix(".idx") {
            let verify = try git(t.gitDir, ["verify-pack", "-v", t.gitDir.appending("objects/pack").appending(idx).string])
            #expect(verify.status == 0, "git verify-pack: \(String(decoding: verify.out, as: UTF8.self))")
            let text = String(decoding: verify.out, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("non delta: ") }) {
                objects += Int(line.split(separator: " ")[2]) ?? 0
            }
        }
        #expect(objects == 3, "the known file (first batch), the photo and the big text, once each: \(objects)")
        for (name, bytes) in [("photo.jpg", photo), ("big.txt", text)] {
            let shown = try git(t.gitDir, ["cat-file", "blob", ids[name]!.hex])
            #expect(shown.status == 0 && Array(shown.out) == bytes, "git cat-file \(name)")
        }
        #expect(try gitFsck(t.gitDir, full: true) == 0)
    }

    /// A batch dropped before its flush leaves nothing behind: no pack, no temporary.
    @Test func anUnflushedBatchLeavesNoFiles() throws {
        let t = try TempDevice()
        _ = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        do {
            let batch = try PackBatch(gitDir: t.gitDir)
            _ = try Array("gone\n".utf8).withUnsafeBytes { try batch.write($0) }
        }
        #expect(try packFiles(t.gitDir).isEmpty)
    }
}

/// Rolling packs up copies their objects as stored: deltas stay deltas, and git reads the result.
@Suite struct PackRollUpTests {
    let batchTests = PackBatchTests()

    /// `git` itself, in `gitDir`, with `input` on stdin; its stdout.
    func run(_ gitDir: FilePath, _ args: [String], input: String = "") throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        p.arguments = ["--git-dir", gitDir.string] + args
        let inPipe = Pipe(), outPipe = Pipe()
        p.standardInput = inPipe
        p.standardOutput = outPipe
        p.standardError = FileHandle.nullDevice
        try p.run()
        inPipe.fileHandleForWriting.write(Data(input.utf8))
        try inPipe.fileHandleForWriting.close()
        let out = outPipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "git \(args)")
        return String(decoding: out, as: UTF8.self)
    }

    /// Versions of one text, packed by git with offset deltas in one pack and reference deltas in
    /// another (one version in both), rolled up into one pack: every object once, byte for byte,
    /// deltas kept, and `git verify-pack` and `git fsck --full` pass.
    @Test func deltasOfBothKindsSurviveARollUp() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        var ids: [String] = []
        var texts: [String: String] = [:]
        let base = (0..<400).map { "line \($0) of a long text that changes a little each time\n" }.joined()
        for v in 0..<24 {
            let text = base + "version \(v)\n" + String(repeating: "tail \(v) ", count: v)
            let url = URL(fileURLWithPath: t.data.appending("v\(v).txt").string)
            try Data(text.utf8).write(to: url)
            let id = try run(t.gitDir, ["hash-object", "-w", url.path]).trimmingCharacters(in: .whitespacesAndNewlines)
            ids.append(id)
            texts[id] = text
        }
        let packDir = t.gitDir.appending("objects/pack").string
        _ = try run(t.gitDir, ["pack-objects", "--delta-base-offset", packDir + "/pack"], input: ids[0..<13].joined(separator: "\n") + "\n")
        _ = try run(t.gitDir, ["pack-objects", packDir + "/pack"], input: ids[12...].joined(separator: "\n") + "\n")
        let before = try batchTests.packFiles(t.gitDir).filter { $0.hasSuffix(".idx") }
        #expect(before.count == 2)
        let name = try repo.writeCombinedPack(of: before.map { t.gitDir.appending("objects/pack").appending($0) }, deflating: false)
        let idx = t.gitDir.appending("objects/pack").appending("pack-\(name).idx")
        let verify = try run(t.gitDir, ["verify-pack", "-v", idx.string])
        #expect(verify.contains("non delta:"))
        #expect(verify.contains("chain length"), "the versions are still deltas: \(verify.suffix(300))")
        let objectLines = verify.split(separator: "\n").filter { $0.count > 40 && $0.contains(" blob ") }
        #expect(objectLines.count == 24, "each version once")
        // Only the new pack: every version must come from it.
        for old in before {
            try FileManager.default.removeItem(atPath: packDir + "/" + old)
            try FileManager.default.removeItem(atPath: packDir + "/" + old.replacingOccurrences(of: ".idx", with: ".pack"))
        }
        for (id, text) in texts {
            #expect(try run(t.gitDir, ["cat-file", "blob", id]) == text)
            try FileManager.default.removeItem(atPath: t.gitDir.appending("objects").appending(String(id.prefix(2))).appending(String(id.dropFirst(2))).string)
        }
        for (id, text) in texts { #expect(try run(t.gitDir, ["cat-file", "blob", id]) == text, "from the pack: \(id)") }
        #expect(try gitFsck(t.gitDir, full: true) == 0)
    }

    /// A batch frames documents in stored blocks (`deflateAtRest`); a roll-up with `deflating`
    /// deflates them and copies photos and tiny objects as they are. Every object reads back byte
    /// for byte from the new pack alone, git verifies it, and it is judged done (share 0), where
    /// the batch's pack was judged worth it and git's own pack is not.
    @Test func documentsLeftInStoredBlocksAreDeflatedAtRest() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        var rng = SystemRandomNumberGenerator()
        var contents: [[UInt8]] = (0..<200).map { i in Array(String(repeating: "document \(i), a line of its text\n", count: 250).utf8) }
        contents += (0..<3).map { _ in (0..<30_000).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        contents += (0..<5).map { i in Array("tiny \(i)\n".utf8) }
        let batch = try PackBatch(gitDir: t.gitDir)
        var ids: [Oid] = []
        for bytes in contents { ids.append(try bytes.withUnsafeBytes { try batch.write($0) }) }
        try batch.flush()
        let packDir = t.gitDir.appending("objects/pack")
        let before = try batchTests.packFiles(t.gitDir).filter { $0.hasSuffix(".idx") }.map { packDir.appending($0) }
        #expect(before.count == 1)
        let stored = try FileManager.default.attributesOfItem(atPath: String(before[0].string.dropLast(4)) + ".pack")[.size] as! Int
        #expect(stored > contents.reduce(0) { $0 + $1.count }, "a batch stores every object as it is")
        let share = try #require(Repository.deflatableShare(packIndex: before[0]))
        #expect(share > 0.5, "the batch's pack is worth deflating: \(share)")

        let name = try repo.writeCombinedPack(of: before, deflating: true)
        let after = packDir.appending("pack-\(name).idx")
        let size = try FileManager.default.attributesOfItem(atPath: packDir.appending("pack-\(name).pack").string)[.size] as! Int
        #expect(size < 90_000 + 200_000, "documents deflated, photos kept: \(stored) -> \(size) bytes")
        #expect(size > 90_000, "the photos are still all there: \(size)")
        #expect(Repository.deflatableShare(packIndex: after) == 0, "nothing left to deflate")
        let verify = try run(t.gitDir, ["verify-pack", "-v", after.string])
        #expect(verify.contains("non delta: \(contents.count) objects"), "\(verify.suffix(200))")
        for old in before {
            try FileManager.default.removeItem(atPath: old.string)
            try FileManager.default.removeItem(atPath: String(old.string.dropLast(4)) + ".pack")
        }
        repo.refreshObjects()
        for (id, bytes) in zip(ids, contents) {
            #expect(try repo.blobData(id) == bytes, "libgit2 reads \(id) from the deflated pack")
        }
        let shown = try run(t.gitDir, ["cat-file", "blob", ids[7].hex])
        #expect(Array(shown.utf8) == contents[7])
        #expect(try gitFsck(t.gitDir, full: true) == 0)

        // A pack git made (deflated as it goes): nothing to do.
        let gits = try run(t.gitDir, ["pack-objects", packDir.string + "/git"], input: ids.map(\.hex).joined(separator: "\n") + "\n")
        let gitsIndex = packDir.appending("git-\(gits.trimmingCharacters(in: .whitespacesAndNewlines)).idx")
        #expect(Repository.deflatableShare(packIndex: gitsIndex) == 0)
    }

    /// What the judge reads of a pack (a sample of its objects, of each only the bytes
    /// `Incompressible` samples, found through its stored blocks) leads to what the roll-up does:
    /// a photo whose first 4 KiB are text (a JPEG's header) is judged not worth it, as the roll-up
    /// would copy it; a big text streamed in (its blocks as long as the pieces it came in) is
    /// judged worth it, and deflated; a video past `deflateLimit` is copied in pieces, byte for
    /// byte. Both packs read back whole from their roll-ups alone.
    @Test func theJudgeOfAPackAgreesWithTheRollUp() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        var rng = SystemRandomNumberGenerator()
        func random(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let header = Array(String(repeating: "Exif MM camera model lens f/1.8 ", count: 200).utf8).prefix(4096)
        let photo = Array(header) + random(3_000_000)
        let text = Array(String(repeating: "a line of a long log file, streamed in\n", count: 60_000).utf8)
        let video = random(PackRollUp.deflateLimit + 3_000_000)
        let packDir = t.gitDir.appending("objects/pack")
        func newPack(_ files: [(String, [UInt8])]) throws -> (FilePath, [Oid]) {
            let before = Set(try batchTests.packFiles(t.gitDir))
            let batch = try PackBatch(gitDir: t.gitDir)
            var ids: [Oid] = []
            for (name, bytes) in files {
                try Data(bytes).write(to: URL(fileURLWithPath: t.data.appending(name).string))
                guard case .written(let id) = try repo.writeBlob(fromFile: t.data.appending(name), batch: batch) else {
                    throw GitError(code: -1, errorClass: 0, message: "\(name) not stored", call: "test")
                }
                ids.append(id)
            }
            try batch.flush()
            let made = try batchTests.packFiles(t.gitDir).filter { !before.contains($0) && $0.hasSuffix(".idx") }
            #expect(made.count == 1)
            return (packDir.appending(made[0]), ids)
        }
        let (photos, photoIds) = try newPack([("photo.jpg", photo)])
        #expect(Incompressible.looks(Array(header).withUnsafeBytes { $0 }) == false, "the header alone looks like text")
        #expect(Repository.deflatableShare(packIndex: photos) == 0, "judged as the roll-up judges the whole photo")
        let (mixed, mixedIds) = try newPack([("log.txt", text), ("video.mp4", video)])
        let share = try #require(Repository.deflatableShare(packIndex: mixed))
        #expect(share > 0 && share < 0.5, "the log is worth it, the video is not: \(share)")

        let name = try repo.writeCombinedPack(of: [photos, mixed], deflating: true)
        let size = try FileManager.default.attributesOfItem(atPath: packDir.appending("pack-\(name).pack").string)[.size] as! Int
        #expect(size < photo.count + video.count + text.count / 2, "the log deflated: \(size) bytes")
        for old in [photos, mixed] {
            try FileManager.default.removeItem(atPath: old.string)
            try FileManager.default.removeItem(atPath: String(old.string.dropLast(4)) + ".pack")
        }
        repo.refreshObjects()
        for (id, bytes) in zip(photoIds + mixedIds, [photo, text, video]) {
            let shown = try git(t.gitDir, ["cat-file", "blob", id.hex])
            #expect(shown.status == 0 && Array(shown.out) == bytes, "git reads \(id) from the roll-up")
        }
        #expect(try gitFsck(t.gitDir, full: true) == 0)
    }

    /// Versions of a text that git packed with offset deltas and no compression at all (stored
    /// blocks, as a batch leaves them): a deflating roll-up deflates the bases, keeps the deltas
    /// pointing at them where they now are, and git reads every version.
    @Test func deltasOverDeflatedBasesStayRight() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        var texts: [String: String] = [:]
        let base = (0..<400).map { "line \($0) of a long text that changes a little each time\n" }.joined()
        for v in 0..<16 {
            let text = base + "version \(v)\n" + String(repeating: "tail \(v) ", count: v * 3)
            let url = URL(fileURLWithPath: t.data.appending("v\(v).txt").string)
            try Data(text.utf8).write(to: url)
            texts[try run(t.gitDir, ["hash-object", "-w", url.path]).trimmingCharacters(in: .whitespacesAndNewlines)] = text
        }
        let packDir = t.gitDir.appending("objects/pack").string
        _ = try run(t.gitDir, ["-c", "pack.compression=0", "pack-objects", "--delta-base-offset", packDir + "/pack"],
                    input: texts.keys.joined(separator: "\n") + "\n")
        let before = try batchTests.packFiles(t.gitDir).filter { $0.hasSuffix(".idx") }.map { t.gitDir.appending("objects/pack").appending($0) }
        #expect(before.count == 1)
        let oldSize = try FileManager.default.attributesOfItem(atPath: String(before[0].string.dropLast(4)) + ".pack")[.size] as! Int
        let name = try repo.writeCombinedPack(of: before, deflating: true)
        let idx = t.gitDir.appending("objects/pack").appending("pack-\(name).idx")
        let newSize = try FileManager.default.attributesOfItem(atPath: String(idx.string.dropLast(4)) + ".pack")[.size] as! Int
        #expect(newSize < oldSize, "the stored base was deflated: \(oldSize) -> \(newSize)")
        let verify = try run(t.gitDir, ["verify-pack", "-v", idx.string])
        #expect(verify.contains("chain length"), "the versions are still deltas: \(verify.suffix(300))")
        try FileManager.default.removeItem(atPath: before[0].string)
        try FileManager.default.removeItem(atPath: String(before[0].string.dropLast(4)) + ".pack")
        for (id, _) in texts {
            try FileManager.default.removeItem(atPath: t.gitDir.appending("objects").appending(String(id.prefix(2))).appending(String(id.dropFirst(2))).string)
        }
        for (id, text) in texts { #expect(try run(t.gitDir, ["cat-file", "blob", id]) == text, "from the roll-up: \(id)") }
        #expect(try gitFsck(t.gitDir, full: true) == 0)
    }

    /// A pack whose bytes were damaged on disk is refused (its CRC-32s say so), not copied.
    @Test func aDamagedPackIsNotRolledUp() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        for n in 0..<2 {
            let batch = try PackBatch(gitDir: t.gitDir)
            for i in 0..<50 { _ = try Array("object \(n) \(i)\n".utf8).withUnsafeBytes { try batch.write($0) } }
            try batch.flush()
        }
        let packs = try batchTests.packFiles(t.gitDir).filter { $0.hasSuffix(".pack") }
        let victim = t.gitDir.appending("objects/pack").appending(packs[0]).string
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: victim)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: victim))
        try handle.seek(toOffset: 40)
        try handle.write(contentsOf: Data([0xde, 0xad, 0xbe, 0xef]))
        try handle.close()
        let indexes = try batchTests.packFiles(t.gitDir).filter { $0.hasSuffix(".idx") }.map { t.gitDir.appending("objects/pack").appending($0) }
        #expect(throws: GitError.self) { try repo.writeCombinedPack(of: indexes, deflating: false) }
        #expect(try batchTests.packFiles(t.gitDir).count == 4, "no new pack, no temporary left")
    }
}
