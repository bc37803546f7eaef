import Foundation
@testable import Git
@testable import ObjectStorage
import SystemPackage
import Testing
import TestSupport

/// `PackedObjects` reads packs without libgit2: every object it reads must be the bytes git
/// reads, and whatever it cannot read right (a delta, damage) it must leave to libgit2 rather than
/// hand out wrong bytes.
@Suite struct PackedObjectsTests {
    func read(_ reader: PackedObjects, _ id: Oid, maxSize: Int = 64 << 20) throws -> (ObjectType, [UInt8])? {
        var bytes: [UInt8] = []
        guard let found = try reader.stream(id, maxSize: maxSize, into: { bytes += $0 }) else {
            #expect(bytes.isEmpty, "bytes handed out, then nil")
            return nil
        }
        #expect(found.size == bytes.count)
        return (found.type, bytes)
    }

    func randomBytes(_ count: Int) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// Text (deflated by libdeflate), empty, tiny, random bytes stored whole, and a 3 MB photo
    /// streamed into stored blocks: each read back exactly as git reads it, by `streamBlob` too.
    @Test func everyObjectOfOurPacksReadsAsGitReadsIt() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        var contents: [[UInt8]] = [[], [0x41], Array("some text\n".utf8), (0..<70_000).map { UInt8(truncatingIfNeeded: $0 / 100) },
                                   Array(String(repeating: "a line of a document, as people write them\n", count: 2000).utf8)]
        contents.append(randomBytes(4096))
        contents.append(randomBytes(200_000))
        let batch = try PackBatch(gitDir: t.gitDir)
        var ids = try contents.map { bytes in try bytes.withUnsafeBytes { try batch.write($0) } }
        let photo = randomBytes(3_000_000)
        try Data(photo).write(to: URL(fileURLWithPath: t.data.appending("photo.jpg").string))
        guard case .written(let photoID) = try repo.writeBlob(fromFile: t.data.appending("photo.jpg"), batch: batch) else {
            Issue.record("the photo was not written")
            return
        }
        contents.append(photo)
        ids.append(photoID)
        try batch.flush()
        repo.refreshObjects()

        let reader = try #require(PackedObjects(packDir: t.gitDir.appending("objects/pack")))
        for (id, bytes) in zip(ids, contents) {
            let shown = try git(t.gitDir, ["cat-file", "blob", id.hex])
            #expect(shown.status == 0 && Array(shown.out) == bytes)
            let got = try read(reader, id)
            #expect(got?.0 == .blob && got?.1 == bytes, "\(id), \(bytes.count) bytes")
            var streamed: [UInt8] = []
            try repo.streamBlob(id) { streamed += $0 }
            #expect(streamed == bytes)
        }
        // What the packs do not hold, or bigger than allowed, or of another type: nil, nothing handed out.
        #expect(try read(reader, Oid(bytes: [UInt8](repeating: 7, count: 20))) == nil)
        #expect(try read(reader, photoID, maxSize: 1 << 20) == nil)
        #expect(try reader.stream(ids[2], expecting: .tree, maxSize: 1 << 20, into: { _ in Issue.record("handed out") }) == nil)
    }

    /// A pack git made itself, with deltas: the whole objects read as git reads them, the deltas
    /// are left to libgit2 (nil), and `streamBlob` reads every blob right either way.
    @Test func aPackGitMadeWithDeltasReadsRightOrIsLeftToLibgit2() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let base = String(repeating: "the same long line in every version of this document\n", count: 400)
        var ids: [Oid] = []
        for n in 0..<6 {
            let id = try repo.createBlob(Array((base + "version \(n)\n").utf8))
            ids.append(id)
            #expect(try git(t.gitDir, ["update-ref", "refs/keep/\(n)", id.hex]).status == 0)  // (a ref may name a blob)
        }
        // A big document git deflates (over 1 MiB: not in stored blocks, so not read block by block).
        let big = Array((0..<60_000).map { "line \($0) of a long document\n" }.joined().utf8)
        let bigID = try repo.createBlob(big)
        #expect(try git(t.gitDir, ["update-ref", "refs/keep/big", bigID.hex]).status == 0)
        #expect(try git(t.gitDir, ["repack", "-a", "-d", "-f", "-q", "--window=10"]).status == 0)
        let packs = try FileManager.default.contentsOfDirectory(atPath: t.gitDir.appending("objects/pack").string)
        let idx = try #require(packs.first { $0.hasSuffix(".idx") })
        let verify = try git(t.gitDir, ["verify-pack", "-v", t.gitDir.appending("objects/pack").appending(idx).string])
        #expect(String(decoding: verify.out, as: UTF8.self).contains("chain length"), "git made deltas")

        let reader = try #require(PackedObjects(packDir: t.gitDir.appending("objects/pack")))
        var whole = 0, left = 0
        for id in ids {
            let shown = try git(t.gitDir, ["cat-file", "blob", id.hex])
            if let got = try read(reader, id) {
                #expect(got.0 == .blob && got.1 == Array(shown.out))
                whole += 1
            } else {
                left += 1
            }
            var streamed: [UInt8] = []
            repo.refreshObjects()
            try repo.streamBlob(id) { streamed += $0 }
            #expect(streamed == Array(shown.out))
        }
        #expect(whole >= 1 && left >= 1, "whole \(whole), deltas \(left)")
        #expect(big.count > PackedObjects.keptScratch)
        #expect(try read(reader, bigID)?.1 == big, "a big deflated object is read whole, by libdeflate")
    }

    /// A store holding one photo of `size` random bytes, in a pack of a batch (stored blocks):
    /// the store, its id, its bytes and the pack's name.
    func storeWithAPackedPhoto(_ t: TempDevice, size: Int) throws -> (repo: Repository, id: Oid, photo: [UInt8], pack: String) {
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let photo = randomBytes(size)
        let batch = try PackBatch(gitDir: t.gitDir)
        let id = try photo.withUnsafeBytes { try batch.write($0) }
        try batch.flush()
        let packs = try FileManager.default.contentsOfDirectory(atPath: t.gitDir.appending("objects/pack").string)
        return (repo, id, photo, try #require(packs.first { $0.hasSuffix(".pack") }))
    }

    /// Writes `bytes` over the pack (made read-only by its writer).
    func overwrite(_ pack: FilePath, with bytes: Data) throws {
        try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: pack.string)
        try bytes.write(to: URL(fileURLWithPath: pack.string))
    }

    /// A photo's stored bytes damaged on disk: not handed out (its Adler-32 no longer matches), so
    /// the reading falls to libgit2, which refuses it too.
    @Test func aDamagedStoredObjectIsNeverHandedOut() throws {
        let t = try TempDevice()
        let (repo, id, _, name) = try storeWithAPackedPhoto(t, size: 300_000)
        let pack = t.gitDir.appending("objects/pack").appending(name)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: pack.string))
        bytes[bytes.count / 2] ^= 0xff
        try overwrite(pack, with: bytes)

        let reader = try #require(PackedObjects(packDir: t.gitDir.appending("objects/pack")))
        #expect(try reader.stream(id, maxSize: 1 << 20, into: { _ in Issue.record("damaged bytes handed out") }) == nil)
        repo.refreshObjects()
        #expect(throws: (any Error).self) { try repo.streamBlob(id) { _ in } }
    }

    /// A big photo (read block by block, not whole) damaged on disk in its middle: the read throws
    /// a damage error naming the pack once the Adler-32 disagrees, so a caller that took the
    /// first blocks (a file being written) drops them; never a whole object with wrong bytes.
    /// Undamaged, the same object reads whole and right (`everyObjectOfOurPacksReadsAsGitReadsIt`).
    @Test func aDamagedBigStoredObjectThrowsInsteadOfEndingRight() throws {
        let t = try TempDevice()
        let (repo, id, photo, name) = try storeWithAPackedPhoto(t, size: 3_000_000)
        let pack = t.gitDir.appending("objects/pack").appending(name)
        let reader = try #require(PackedObjects(packDir: t.gitDir.appending("objects/pack")))
        #expect(try read(reader, id)?.1 == photo)
        // Where the photo's entry starts (`git verify-pack -v`: id, type, size, size in the pack, offset).
        let listed = try git(t.gitDir, ["verify-pack", "-v", pack.string.replacingOccurrences(of: ".pack", with: ".idx")])
        let line = try #require(String(decoding: listed.out, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(id.hex) })
        let entry = try #require(line.split(separator: " ").last.flatMap { Int($0) })

        var bytes = try Data(contentsOf: URL(fileURLWithPath: pack.string))
        bytes[bytes.count / 2] ^= 0xff
        try overwrite(pack, with: bytes)

        let damaged = try #require(PackedObjects(packDir: t.gitDir.appending("objects/pack")))
        let error = #expect(throws: GitError.self) { try damaged.stream(id, maxSize: 64 << 20, into: { _ in }) }
        #expect(error?.message.contains(name) == true, "\(String(describing: error))")
        repo.refreshObjects()
        #expect(throws: (any Error).self) { try repo.streamBlob(id) { _ in } }

        // The second block's header damaged instead (its length no longer matches its check):
        // nothing handed out, and the reading is libgit2's, which refuses it too.
        bytes[bytes.count / 2] ^= 0xff  // (undone)
        // The entry's header (type and size: 4 bytes for 3 MB), zlib's 2, the first block's 5 and 65,535.
        bytes[entry + 4 + 2 + 5 + 65_535 + 1] ^= 0xff
        try overwrite(pack, with: bytes)
        let headerDamaged = try #require(PackedObjects(packDir: t.gitDir.appending("objects/pack")))
        #expect(try read(headerDamaged, id) == nil)
        repo.refreshObjects()
        #expect(throws: (any Error).self) { try repo.streamBlob(id) { _ in } }
    }
}
