import CLibgit2
import ObjectStorage
import SystemPackage

extension Oid {
    /// The id git gives these bytes as a blob, computed without writing anything.
    public static func hashing(_ bytes: [UInt8]) -> Oid {
        var out = git_oid()
        _ = bytes.withUnsafeBytes { git_odb_hash(&out, $0.baseAddress, $0.count, GIT_OBJECT_BLOB) }
        return Oid(out)
    }

    /// The id git gives the bytes of the file at `path` as a blob, read in chunks (no filters; a
    /// symbolic link is followed, so check the kind first). Nil when it cannot be read.
    public static func hashing(file path: FilePath) -> Oid? {
        var out = git_oid()
        let rc = path.withPlatformString { git_odb_hashfile(&out, $0, GIT_OBJECT_BLOB) }
        return rc == 0 ? Oid(out) : nil
    }
}

extension Repository {
    /// Writes a flat tree (one level, blobs only) from names and blob ids.
    public func writeFlatTree(_ entries: [(name: String, blob: Oid)]) throws(GitError) -> Oid {
        var builder: OpaquePointer?
        try check(git_treebuilder_new(&builder, handle, nil), "git_treebuilder_new")
        defer { git_treebuilder_free(builder) }
        for entry in entries {
            var raw = entry.blob.raw
            try check(git_treebuilder_insert(nil, builder, entry.name, &raw, GIT_FILEMODE_BLOB),
                      "git_treebuilder_insert(\(entry.name))")
        }
        var out = git_oid()
        try check(git_treebuilder_write(&out, builder), "git_treebuilder_write")
        return noteWritten(Oid(out))
    }
}
