import Git
import SyncCore
import SystemPackage

/// Confines the store (and every libgit2 object behind it) to one actor.
actor StoreActor {
    private let store: Store
    var storeRef: Store { store }

    init(_ store: Store) { self.store = store }

    func commit(paths: Set<FilePath>, fullScan: Bool) throws(GitError) -> CommitOutcome {
        var all = paths
        if fullScan { all.formUnion(try store.changedSinceLastCommit()) }
        return try store.commit(paths: all)
    }

    func head() throws(GitError) -> Oid? { try store.head() }

    func changedSinceLastCommit() throws(GitError) -> Set<FilePath> { try store.changedSinceLastCommit() }
}

extension StoreActor {
    func integrate(peer: String) throws -> SyncOutcome { try storeRef.integrate(peer: peer) }
    func conflicts(all: Bool) throws -> [ConflictRecord] { try storeRef.conflicts(includeResolved: all) }
    func aheadBehind(peer: String) throws -> (ahead: Int, behind: Int)? { try storeRef.aheadBehind(peer: peer) }
}

extension StoreActor {
    func resolve(targets: [String], choice: ResolveChoiceArgument) -> [ResolveResult] {
        storeRef.resolve(targets: targets, choice: choice)
    }
}
