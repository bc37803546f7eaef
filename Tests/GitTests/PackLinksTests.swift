import Foundation
@testable import Git
@testable import ObjectStorage
import SystemPackage
import Testing
import TestSupport

/// What an adopted pack's trees, commits and tags name, read from their bytes
/// (`PackTransfer.links(of:type:content:pack:)`), is what libgit2's parsed objects name
/// (`links(of:in:pack:)`, the reference): submodule entries name nothing; and bytes libgit2's
/// parser refuses are refused, as a damaged object of the peer.
@Suite struct PackLinksTests {
    let sig = Signature(name: "phone", email: "phone@syncagent", time: 1_700_000_000)

    func raw(_ t: TempDevice, _ type: String, _ id: String) throws -> [UInt8] {
        let r = try git(t.gitDir, ["cat-file", type, id])
        #expect(r.status == 0)
        return [UInt8](r.out)
    }

    @Test func linksFromBytesAreLibgit2sAndBadBytesAreRefused() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let blob = try repo.createBlob(Array("x\n".utf8))
        let submodule = try #require(Oid(hex: "0123456789abcdef0123456789abcdef01234567"))
        let tree = try repo.updateTree(nil, edits: [
            ("a.txt", .entry(ConflictSide(oid: blob, mode: 0o100644))), ("run", .entry(ConflictSide(oid: blob, mode: 0o100755))),
            ("link", .entry(ConflictSide(oid: blob, mode: 0o120000))), ("sub", .entry(ConflictSide(oid: submodule, mode: 0o160000))),
            ("d/e/f", .entry(ConflictSide(oid: blob, mode: 0o100644))),
        ])
        let first = try repo.createCommit(tree: tree, parents: [], author: sig, committer: sig, message: "one\n", updateRef: nil)
        let second = try repo.createCommit(tree: tree, parents: [first], author: sig, committer: sig, message: "two\n", updateRef: nil)
        let merge = try repo.createCommit(tree: tree, parents: [second, first], author: sig, committer: sig, message: "m\n", updateRef: "refs/heads/main")
        let tagged = try git(t.gitDir, ["-c", "user.name=p", "-c", "user.email=p@x", "tag", "-a", "-m", "a tag", "v1", merge.hex])
        #expect(tagged.status == 0)
        let tag = try #require(Oid(hex: String(decoding: try git(t.gitDir, ["rev-parse", "v1"]).out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        let subtree = try #require(try repo.updateTree(nil, edits: [("f", .entry(ConflictSide(oid: blob, mode: 0o100644)))]) as Oid?)
        let pack = FilePath("/peer/pack-x.pack")
        let objects: [(Oid, ObjectType)] = [(tree, .tree), (subtree, .tree), (first, .commit), (second, .commit), (merge, .commit), (tag, .tag)]
        for (id, type) in objects {
            let content = try raw(t, type.name, id.hex)
            let mine = try PackTransfer.links(of: id, type: type, content: content, pack: pack)
            let libgit2s = try PackTransfer.links(of: id, in: repo.handle, pack: pack)
            #expect(mine == libgit2s, "\(type.name) \(id)")
        }
        #expect(try PackTransfer.links(of: tree, type: .tree, content: try raw(t, "tree", tree.hex), pack: pack).count == 4, "no link for the submodule")
        #expect(try PackTransfer.links(of: merge, type: .commit, content: try raw(t, "commit", merge.hex), pack: pack) == [tree, second, first])

        // Bytes libgit2's parser refuses.
        let goodTree = try raw(t, "tree", tree.hex)
        let bad: [(ObjectType, [UInt8])] = [
            (.tree, Array(goodTree.dropLast(3))),  // an id cut short
            (.tree, Array("100644 a.txt".utf8)),  // no NUL, no id
            (.tree, Array("999999 a.txt\0".utf8) + blob.bytes),  // no such mode
            (.commit, Array("author p <p@x> 1 +0000\n\nno tree\n".utf8)),
            (.commit, Array("tree 12345\n\n".utf8)),
            (.tag, Array("type commit\ntag v\n\n".utf8)),
        ]
        for (type, content) in bad {
            #expect(throws: GitError.self, "\(type.name): \(String(decoding: content, as: UTF8.self))") {
                _ = try PackTransfer.links(of: .zero, type: type, content: content, pack: pack)
            }
        }
    }
}
