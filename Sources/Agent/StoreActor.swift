import Git
import SyncCore
import SystemPackage

/// Confines the store (and every libgit2 object behind it) to one actor.
actor StoreActor {
    private let store: Store

    init(_ store: Store) { self.store = store }

    func commit(paths: Set<FilePath>, fullScan: Bool) throws(GitError) -> CommitOutcome {
        var all = paths
        if fullScan { all.formUnion(try store.changedSinceLastCommit()) }
        return try store.commit(paths: all)
    }

    func head() throws(GitError) -> Oid? { try store.head() }
}
