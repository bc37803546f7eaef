import CLibgit2
@testable import Git
@testable import ObjectStorage
import Testing

/// ObjectStorage knows nothing of libgit2 but speaks its numbers and orders: its ids, object types,
/// error codes and classes must be libgit2's own.
@Suite struct ObjectStorageMatchesLibgit2Tests {
    @Test func idsRoundTripAndSortAsLibgit2Does() {
        var generator = SystemRandomNumberGenerator()
        let ids = (0..<500).map { _ in Oid(bytes: (0..<20).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
        for id in ids {
            var raw = id.raw
            var text = [CChar](repeating: 0, count: 41)
            git_oid_tostr(&text, 41, &raw)
            #expect(id.hex == String(cString: text))
            #expect(Oid(hex: id.hex) == id)
            #expect(Oid(raw) == id)
            #expect(id.firstByte == id.bytes[0])
        }
        for (x, y) in zip(ids, ids.dropFirst()) {
            var a = x.raw, b = y.raw
            #expect((x < y) == (git_oid_cmp(&a, &b) < 0))
            #expect((x == y) == (git_oid_equal(&a, &b) == 1))
        }
        #expect(Oid(hex: "zz" + String(repeating: "0", count: 38)) == nil)
        #expect(Oid.zero.hex == String(repeating: "0", count: 40))
    }

    @Test func objectTypesAreLibgit2s() {
        for (ours, theirs) in [(ObjectType.commit, GIT_OBJECT_COMMIT), (.tree, GIT_OBJECT_TREE), (.blob, GIT_OBJECT_BLOB), (.tag, GIT_OBJECT_TAG)] {
            #expect(ours.rawValue == theirs.rawValue)
            #expect(ours.name == String(cString: git_object_type2string(theirs)))
        }
    }

    @Test func errorCodesAndClassesAreLibgit2s() {
        let codes: [(Int32, git_error_code)] = [
            (GitError.Code.notFound, GIT_ENOTFOUND), (GitError.Code.modified, GIT_EMODIFIED),
            (GitError.Code.conflict, GIT_ECONFLICT), (GitError.Code.directory, GIT_EDIRECTORY),
            (GitError.Code.unbornBranch, GIT_EUNBORNBRANCH), (GitError.Code.iterOver, GIT_ITEROVER),
            (GitError.Code.ambiguous, GIT_EAMBIGUOUS), (GitError.Code.auth, GIT_EAUTH),
            (GitError.Code.certificate, GIT_ECERTIFICATE), (GitError.Code.invalid, GIT_EINVALID),
            (GitError.Code.cancelled, GIT_EUSER), (GitError.Code.generic, GIT_ERROR),
            (GitError.Code.exists, GIT_EEXISTS), (GitError.Code.locked, GIT_ELOCKED),
        ]
        for (ours, theirs) in codes { #expect(ours == theirs.rawValue) }
        let classes: [(Int32, git_error_t)] = [
            (GitError.Class.os, GIT_ERROR_OS), (GitError.Class.odb, GIT_ERROR_ODB), (GitError.Class.net, GIT_ERROR_NET),
            (GitError.Class.ssh, GIT_ERROR_SSH), (GitError.Class.callback, GIT_ERROR_CALLBACK),
            (GitError.Class.filesystem, GIT_ERROR_FILESYSTEM), (GitError.Class.http, GIT_ERROR_HTTP),
        ]
        for (ours, theirs) in classes { #expect(ours == Int32(theirs.rawValue)) }
    }
}
