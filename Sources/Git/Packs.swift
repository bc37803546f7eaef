import CLibgit2
import ObjectStorage
import SystemPackage

extension Repository {
    /// Writes every object of the given packs (their `.idx` files) into one new pack in
    /// `objects/pack`, copied as stored (`PackRollUp`). The old packs are left in place: the
    /// caller makes the new one durable, removes them, then calls `reloadObjects`. Returns the new
    /// pack's name (`pack-<name>.pack`). `deflating`: objects a commit left in stored blocks are
    /// deflated into it (the store is at rest).
    public func writeCombinedPack(of indexFiles: [FilePath], deflating: Bool) throws(GitError) -> String {
        try PackRollUp.combine(indexFiles, into: gitDir.appending("objects").appending("pack"), deflating: deflating)
    }

    /// The share of a pack's bytes a deflating roll-up would deflate (`PackRollUp.deflatableShare`).
    public static func deflatableShare(packIndex: FilePath) -> Double? {
        PackRollUp.deflatableShare(packIndex)
    }

    /// How many objects the pack index at `packIndex` lists (its fan-out table's last entry, one
    /// small read); nil when it cannot be read.
    public static func objectCount(packIndex: FilePath) -> Int? {
        try? PackRollUp.Index.count(packIndex)
    }

    /// Opens the object database afresh, so packs removed from disk are forgotten (and their file
    /// descriptors and maps released) and new ones are seen.
    public func reloadObjects() throws(GitError) {
        var odb: OpaquePointer?
        let objects = gitDir.appending("objects")
        try check(objects.withPlatformString { git_odb_open(&odb, $0) }, "git_odb_open(\(objects))")
        defer { git_odb_free(odb) }  // the repository keeps its own reference
        try check(git_repository_set_odb(handle, odb), "git_repository_set_odb")
        forgetPackReader()  // (the packs a roll-up removed are closed now, their disk space freed)
    }
}
