import CLibgit2
import Foundation
@testable import Git
@testable import ObjectStorage
import SystemPackage
import Testing
import TestSupport

/// A peer's objects are checked with OpenSSL's SHA-1 (`StreamSHA1.objectID`): it must give every
/// object the id libgit2 gave it when it was made, for each type, or a whole peer's pack would be
/// refused as damaged (or a damaged one taken).
@Suite struct ObjectIDTests {
    @Test func theCheckGivesEachObjectTheIdLibgit2Gave() throws {
        let device = try TempDevice()
        let repo = try Repository.create(gitDir: device.gitDir, workdir: device.data)
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? random.close() }
        let blobs = try [[], Array("hello\n".utf8), Array(random.readData(ofLength: 3 << 20))].map { try repo.createBlob($0) }
        let tree = try repo.writeFlatTree(blobs.enumerated().map { (name: "f\($0.offset)", blob: $0.element) })
        let sig = Signature(name: "phone", email: "phone@syncagent", time: 1_700_000_000)
        let commit = try repo.createCommit(tree: tree, parents: [], author: sig, committer: sig, message: "m\n", updateRef: nil)
        // An annotated tag (a peer's store never makes one, but a pack may hold any type).
        var target: OpaquePointer?
        var commitRaw = commit.raw
        #expect(git_object_lookup(&target, repo.handle, &commitRaw, GIT_OBJECT_COMMIT) == 0)
        defer { git_object_free(target) }
        let tagger = try sig.makeC()
        defer { git_signature_free(tagger) }
        var tagRaw = git_oid()
        #expect(git_tag_create(&tagRaw, repo.handle, "v1", target, tagger, "a tag\n", 0) == 0)
        let tag = Oid(tagRaw)
        var odb: OpaquePointer?
        #expect(git_repository_odb(&odb, repo.handle) == 0)
        defer { git_odb_free(odb) }
        // One context for all (as a pack's check uses it), and a fresh one for each.
        let shared = try StreamSHA1()
        for id in blobs + [tree, commit, tag] {
            var raw = id.raw
            var object: OpaquePointer?
            #expect(git_odb_read(&object, odb, &raw) == 0)
            defer { git_odb_object_free(object) }
            let content = UnsafeRawBufferPointer(start: git_odb_object_data(object), count: git_odb_object_size(object))
            #expect(try StreamSHA1.objectID(type: ObjectType(git_odb_object_type(object)), content: content) == id)
            #expect(try shared.objectID(type: ObjectType(git_odb_object_type(object)), content: content) == id)
            // One byte more is another object: the check is not a formality.
            var longer = Array(content)
            longer.append(0x0a)
            let other = try longer.withUnsafeBytes { bytes throws(GitError) in try StreamSHA1.objectID(type: ObjectType(git_odb_object_type(object)), content: bytes) }
            #expect(other != id)
        }
    }
}
