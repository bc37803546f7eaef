import CLibgit2
import ObjectStorage

/// An object database holding one backend of ours (`syncagent_odb_backend`: libgit2's struct, then
/// a pointer to the Swift object behind it), as `StoredLooseBackend` and `PackBatch`'s stream
/// backend use it.
enum CustomOdb {
    /// A new object database with one backend, which `setUp` fills in: its owner and callbacks,
    /// `free` included (it must release the owner and deallocate the backend). Free the database
    /// with `git_odb_free`, which frees the backend; when this throws, nothing is left.
    static func database(_ setUp: (UnsafeMutablePointer<syncagent_odb_backend>) -> Void) throws(GitError) -> OpaquePointer {
        var odb: OpaquePointer?
        try check(git_odb_new(&odb), "git_odb_new")
        let backend = UnsafeMutablePointer<syncagent_odb_backend>.allocate(capacity: 1)
        backend.initialize(to: syncagent_odb_backend())
        guard git_odb_init_backend(&backend.pointee.parent, UInt32(GIT_ODB_BACKEND_VERSION)) == 0 else {
            backend.deallocate()
            git_odb_free(odb)
            throw GitError(code: GitError.Code.generic, errorClass: 0, message: "cannot start an object database backend", call: "git_odb_init_backend")
        }
        setUp(backend)
        let rc = backend.withMemoryRebound(to: git_odb_backend.self, capacity: 1) { git_odb_add_backend(odb, $0, 1) }
        guard rc == 0 else {
            let error = lastError(code: rc, call: "git_odb_add_backend")
            backend.pointee.parent.free(&backend.pointee.parent)
            git_odb_free(odb)
            throw error
        }
        return odb!
    }

    /// The owner `setUp` gave a backend.
    static func owner(_ backend: UnsafeMutablePointer<git_odb_backend>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(backend).assumingMemoryBound(to: syncagent_odb_backend.self).pointee.owner
    }
}
