import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// The index is the store's record of what it knows: path -> stat data -> blob, mirroring `main`'s
/// tree. A running agent reads it once and keeps it in memory (`deferIndexWrites`): commits build
/// their tree from `main`'s along the changed paths and save the index file only when the engine
/// is idle, so a change in a 100k-file tree never rewrites 8 MB. A crash that leaves the file
/// behind `main` costs nothing but a re-read of the paths it missed: `reconcileIndexWithHead`
/// puts their entries back at `main` (without stat data), and the start-up scan hashes them again.
extension Store {
    /// The index, read from disk the first time (and every time while writes are not deferred:
    /// another process may have changed it).
    func liveIndex() throws(GitError) -> Index {
        let index = try repo.index()
        if !indexState.loaded || !deferIndexWrites {
            try index.read()
            indexState.loaded = true
        }
        return index
    }

    /// Saves the index now, or marks it to be saved by `flushIndex` while writes are deferred.
    func saveIndex(_ index: Index) throws(GitError) {
        guard deferIndexWrites else {
            try index.write()
            Durability.flushReplaced("index", under: gitDir)
            return
        }
        indexState.dirty = true
    }

    /// Whether the index holds changes its file does not have yet.
    public var indexIsDirty: Bool { indexState.dirty }

    /// Writes the index file if it holds unsaved changes.
    public func flushIndex() throws {
        guard indexState.dirty else { return }
        try repo.index().write()
        // Renamed over the old one without an fsync by libgit2: a power cut could otherwise leave
        // a name pointing at a file whose data never reached the disk.
        Durability.flushReplaced("index", under: gitDir)
        indexState.dirty = false
    }

    /// Puts every index entry that differs from `main`'s tree back at `main` (entries without stat
    /// data, so the next scan reads those files again); returns the paths fixed. A no-op for an
    /// index saved after the last commit; after a crash it costs the paths the file missed.
    @discardableResult
    public func reconcileIndexWithHead() throws -> [FilePath] {
        let index = try liveIndex()
        let headTree = try repo.headCommit().map { id throws(GitError) in try repo.commit(id).tree }
        let stale = try repo.diffIndex(index, against: headTree)
        for change in stale {
            if let recorded = index.entry(change.path) { recordedBeforeReconcile[change.path] = recorded }
            if let side = change.old {
                try index.add(change.path, blob: side.oid, mode: side.mode)
            } else {
                try index.remove(change.path)
            }
        }
        if !stale.isEmpty { try saveIndex(index) }
        return stale.map(\.path)
    }

    /// Of these paths, those whose file or link holds exactly what the index has there (read and
    /// hashed: for the few paths `reconcileIndexWithHead` put back without stat data).
    public func holdingIndexVersion(_ paths: [FilePath]) throws -> Set<FilePath> {
        let index = try liveIndex()
        return Set(paths.filter { path in
            guard let entry = index.entry(path) else { return false }
            return diskMatches(path, ConflictSide(oid: entry.oid, mode: entry.mode), entry: nil)
        })
    }

    /// Of these paths, those whose entry keeps no stat data (committed in the clock tick they last
    /// changed) and whose file still holds the entry's version: read and hashed. A full scan lists
    /// such paths as candidates; `status` of a stopped agent must not count them as pending.
    public func unchangedWithoutStatData(among paths: some Sequence<FilePath>) throws -> Set<FilePath> {
        let index = try liveIndex()
        return Set(paths.filter { path in
            guard let entry = index.entry(path), entry.mtimeSeconds == 0, entry.ctimeSeconds == 0 else { return false }
            return diskMatches(path, ConflictSide(oid: entry.oid, mode: entry.mode), entry: nil)
        })
    }

    /// `base` with every one of `paths` set to what the index holds there: its entry, the
    /// directory of its entries under it, or nothing. O(paths x depth), plus the entries under a
    /// path that is a directory in the index (a new directory's files).
    func treeFollowingIndex(_ index: Index, base: Oid?, paths: Set<FilePath>) throws(GitError) -> Oid {
        // No tree yet (a store's first commit, the start-up commit's first chunk): the tree is the
        // index's, written in one pass in order instead of edited along each path with a set of
        // roots and a lookup for each (issue 45). Not for a bigger share of an existing tree: an
        // index that does not mirror main outside these paths (emptied after a power cut, not yet
        // put back at main by a one-shot command) would then take main's other files out of it.
        if base == nil { return try index.writeTree() }
        // A path under another one in the set is covered by it.
        let roots = paths.filter { path in
            var up = path.removingLastComponent()
            while !up.isEmpty {
                if paths.contains(up) { return false }
                up = up.removingLastComponent()
            }
            return !path.isEmpty
        }
        var edits: [(path: FilePath, edit: TreeEdit)] = []
        for path in roots {
            if let entry = index.entry(path) {
                edits.append((path, .entry(ConflictSide(oid: entry.oid, mode: entry.mode))))
                continue
            }
            let under = index.entries(under: path)
            guard !under.isEmpty else {
                edits.append((path, .remove))
                continue
            }
            let skip = path.bytes.count + 1
            let sub = try repo.updateTree(nil, edits: under.map {
                (FilePath(bytes: Array($0.path.bytes.dropFirst(skip))), .entry(ConflictSide(oid: $0.oid, mode: $0.mode)))
            })
            edits.append((path, .tree(sub)))
        }
        let tree = try repo.updateTree(base, edits: edits)
        if Self.verifyTrees {
            let whole = try index.writeTree()
            guard whole == tree else {
                throw GitError(code: GitError.Code.generic, errorClass: 0, message: "the tree built along the changed paths (\(tree)) differs from the index's (\(whole)); paths \(paths.map(\.display).sorted().prefix(20))", call: "treeFollowingIndex")
            }
        }
        return tree
    }

    /// `SYNCAGENT_VERIFY_TREES=1` (the e2e suite sets it): every commit checks its tree against the
    /// whole index's, and fails loudly when they differ.
    static let verifyTrees = ProcessInfo.processInfo.environment["SYNCAGENT_VERIFY_TREES"] == "1"
}

/// The index's life in a running agent, kept apart from `Store`'s stored properties.
final class IndexState {
    var loaded = false
    var dirty = false
}
