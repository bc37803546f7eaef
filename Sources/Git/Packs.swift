import CLibgit2
import SystemPackage

extension Repository {
    /// Writes every object of the given packs (their `.idx` files) into one new pack in
    /// `objects/pack`, with deltas computed afresh by libgit2's pack builder. The old packs are left
    /// in place: the caller makes the new one durable, removes them, then calls `reloadObjects`.
    /// Returns the new pack's name (`pack-<name>.pack`).
    public func writeCombinedPack(of indexFiles: [FilePath]) throws(GitError) -> String {
        var odb: OpaquePointer?
        try check(git_odb_new(&odb), "git_odb_new")
        defer { git_odb_free(odb) }
        for (i, idx) in indexFiles.enumerated() {
            var backend: UnsafeMutablePointer<git_odb_backend>?
            try check(idx.withPlatformString { git_odb_backend_one_pack(&backend, $0) }, "git_odb_backend_one_pack(\(idx))")
            // Once added, the backend belongs to the odb (freed with it).
            try check(git_odb_add_backend(odb, backend, Int32(i + 1)), "git_odb_add_backend(\(idx))")
        }
        var builder: OpaquePointer?
        try check(git_packbuilder_new(&builder, handle), "git_packbuilder_new")
        defer { git_packbuilder_free(builder) }
        git_packbuilder_set_threads(builder, 1)
        final class Box {
            let builder: OpaquePointer?
            var failure: Int32 = 0
            init(_ b: OpaquePointer?) { builder = b }
        }
        let box = Box(builder)
        let rc = withExtendedLifetime(box) {
            git_odb_foreach(odb, { oid, payload in
                let box = Unmanaged<Box>.fromOpaque(payload!).takeUnretainedValue()
                let rc = git_packbuilder_insert(box.builder, oid, nil)
                if rc < 0 { box.failure = rc }
                return rc
            }, Unmanaged.passUnretained(box).toOpaque())
        }
        try check(rc, "git_odb_foreach / git_packbuilder_insert")
        let packDir = gitDir.appending("objects").appending("pack")
        try check(packDir.withPlatformString { git_packbuilder_write(builder, $0, 0, nil, nil) },
                  "git_packbuilder_write(\(packDir))")
        guard let name = git_packbuilder_name(builder) else { return "" }
        return String(cString: name)
    }

    /// Opens the object database afresh, so packs removed from disk are forgotten (and their file
    /// descriptors and maps released) and new ones are seen.
    public func reloadObjects() throws(GitError) {
        var odb: OpaquePointer?
        let objects = gitDir.appending("objects")
        try check(objects.withPlatformString { git_odb_open(&odb, $0) }, "git_odb_open(\(objects))")
        defer { git_odb_free(odb) }  // the repository keeps its own reference
        try check(git_repository_set_odb(handle, odb), "git_repository_set_odb")
    }
}
