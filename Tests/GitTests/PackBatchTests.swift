import Foundation
import Git
import SystemPackage
import Testing
import TestSupport

/// The packs a batch writes itself (`PackFileWriter`): git must read them as its own.
@Suite struct PackBatchTests {
    func git(_ gitDir: FilePath, _ args: [String]) throws -> (status: Int32, out: Data) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        p.arguments = ["--git-dir", gitDir.string] + args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        try p.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, out)
    }

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
