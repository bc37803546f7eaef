import SystemPackage
internal import Git

/// The paths changed since the common version by what a fold holds so far (`Store.foldJoins`),
/// and whether a tip's changes stay clear of them: each one adds or rewrites a file or a link
/// (nothing deleted, no directory marker), at a path that neither is one of them, nor lies under
/// one, nor has one under it. Such a tip merges cleanly and is taken whole: a three-way merge of
/// it would only add its entries. Pure: no store is read.
struct FoldPlan {
    private var paths: Set<FilePath> = []
    /// Every directory above a path in `paths`.
    private var directories: Set<FilePath> = []

    init(_ changed: [FilePath]) { add(changed) }

    mutating func add(_ changed: [FilePath]) {
        for path in changed {
            paths.insert(path)
            var dir = path.removingLastComponent()
            while !dir.isEmpty, directories.insert(dir).inserted { dir.removeLastComponent() }
        }
    }

    func isDisjoint(_ changes: [TreeChange]) -> Bool {
        for change in changes {
            guard let new = change.new, new.mode != EntryMode.tree, !DirectoryMarker.isMarker(change.path) else { return false }
            if paths.contains(change.path) || directories.contains(change.path) { return false }
            var dir = change.path.removingLastComponent()
            while !dir.isEmpty {
                if paths.contains(dir) { return false }
                dir.removeLastComponent()
            }
        }
        return true
    }
}
