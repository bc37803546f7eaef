import SystemPackage
internal import Git

/// The paths changed since the common version by what a fold holds so far (`Store.foldJoins`),
/// with the entry the fold holds at each where it is known, and which of a tip's changes go in
/// without a three-way merge: each one adds or rewrites a file or a link (nothing deleted, no
/// directory marker), at a path that neither lies under a changed path nor has one under it, and
/// that is not changed yet or already holds exactly this entry (another tip brought the same
/// file: a device's join, or its commit made on one, repeats the tips it took in). Such a tip
/// merges cleanly and is taken whole: a three-way merge of it would only add its entries. Pure: no
/// store is read.
struct FoldPlan {
    /// Every changed path, with the entry the fold holds there when it is known (nil: deleted,
    /// a directory, or decided by a merge).
    private var paths: [FilePath: ConflictSide?] = [:]
    /// Every directory above a path in `paths`.
    private var directories: Set<FilePath> = []

    /// Changes whose new entries the fold holds.
    init(changes: [TreeChange]) { add(changes) }

    mutating func add(_ changed: [FilePath]) {
        for path in changed { note(path, entry: nil) }
    }

    mutating func add(_ changes: [TreeChange]) {
        for change in changes { note(change.path, entry: change.new.flatMap { $0.mode == EntryMode.tree ? nil : $0 }) }
    }

    private mutating func note(_ path: FilePath, entry: ConflictSide?) {
        paths[path] = .some(entry)
        var dir = path.removingLastComponent()
        while !dir.isEmpty, directories.insert(dir).inserted { dir.removeLastComponent() }
    }

    /// The tip's changes the fold does not hold yet, when every one of its changes may be taken
    /// whole (see the type); nil when the tip needs a three-way merge.
    func newChanges(_ changes: [TreeChange]) -> [TreeChange]? {
        var new: [TreeChange] = []
        for change in changes {
            guard let entry = change.new, entry.mode != EntryMode.tree, !DirectoryMarker.isMarker(change.path),
                  !directories.contains(change.path) else { return nil }
            if let held = paths[change.path] {
                guard held == entry else { return nil }
                continue  // the same file, brought by another tip
            }
            var dir = change.path.removingLastComponent()
            while !dir.isEmpty {
                if paths[dir] != nil { return nil }
                dir.removeLastComponent()
            }
            new.append(change)
        }
        return new
    }
}
