import CLibgit2
import SystemPackage

extension Oid {
    /// The id git gives these bytes as a blob, computed without writing anything.
    public static func hashing(_ bytes: [UInt8]) -> Oid {
        var out = git_oid()
        _ = bytes.withUnsafeBytes { git_odb_hash(&out, $0.baseAddress, $0.count, GIT_OBJECT_BLOB) }
        return Oid(out)
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
        return Oid(out)
    }
}
