import CLibgit2
import SystemPackage

/// One path that differs between two trees (no rename detection: a move is a delete and an add).
public struct TreeChange: Sendable, Equatable {
    public let path: FilePath
    /// Before: nil when the path was absent.
    public let old: ConflictSide?
    /// After: nil when the path is removed.
    public let new: ConflictSide?

    public init(path: FilePath, old: ConflictSide?, new: ConflictSide?) {
        self.path = path
        self.old = old
        self.new = new
    }
}

extension Repository {
    /// The blobs and links that differ between two trees (`nil` is the empty tree). Costs the size
    /// of the difference: unchanged subtrees are skipped by id.
    public func diffTrees(_ old: Oid?, _ new: Oid) throws(GitError) -> [TreeChange] {
        var oldTree: OpaquePointer?, newTree: OpaquePointer?
        if var raw = old?.raw {
            try check(git_tree_lookup(&oldTree, handle, &raw), "git_tree_lookup(\(old!))")
        }
        defer { if oldTree != nil { git_tree_free(oldTree) } }
        var newRaw = new.raw
        try check(git_tree_lookup(&newTree, handle, &newRaw), "git_tree_lookup(\(new))")
        defer { git_tree_free(newTree) }
        var opts = git_diff_options()
        try check(git_diff_options_init(&opts, UInt32(GIT_DIFF_OPTIONS_VERSION)), "git_diff_options_init")
        var diff: OpaquePointer?
        try check(git_diff_tree_to_tree(&diff, handle, oldTree, newTree, &opts), "git_diff_tree_to_tree")
        defer { git_diff_free(diff) }
        return Self.changes(of: diff)
    }

    /// The entries of `index` that differ from `tree` (nil: the empty tree): `old` is the tree's
    /// side, `new` the index's. Stage-0 entries only; stat data plays no part.
    public func diffIndex(_ index: Index, against tree: Oid?) throws(GitError) -> [TreeChange] {
        var treeObj: OpaquePointer?
        if var raw = tree?.raw {
            try check(git_tree_lookup(&treeObj, handle, &raw), "git_tree_lookup(\(tree!))")
        }
        defer { if treeObj != nil { git_tree_free(treeObj) } }
        var opts = git_diff_options()
        try check(git_diff_options_init(&opts, UInt32(GIT_DIFF_OPTIONS_VERSION)), "git_diff_options_init")
        var diff: OpaquePointer?
        try check(git_diff_tree_to_index(&diff, handle, treeObj, index.handle, &opts), "git_diff_tree_to_index")
        defer { git_diff_free(diff) }
        return Self.changes(of: diff)
    }

    private static func changes(of diff: OpaquePointer?) -> [TreeChange] {
        var changes: [TreeChange] = []
        var byPath: [FilePath: Int] = [:]
        for i in 0..<git_diff_num_deltas(diff) {
            guard let delta = git_diff_get_delta(diff, i)?.pointee else { continue }
            func side(_ f: git_diff_file) -> ConflictSide? {
                f.flags & GIT_DIFF_FLAG_EXISTS.rawValue == 0 ? nil : ConflictSide(oid: Oid(f.id), mode: UInt32(f.mode))
            }
            let path = FilePath(platformString: delta.new_file.path ?? delta.old_file.path!)
            let change = TreeChange(path: path, old: side(delta.old_file), new: side(delta.new_file))
            // A type change (file <-> link) comes as a deletion and an addition of one path: join them.
            if let i = byPath[path] {
                changes[i] = TreeChange(path: path, old: changes[i].old ?? change.old, new: changes[i].new ?? change.new)
            } else {
                byPath[path] = changes.count
                changes.append(change)
            }
        }
        return changes
    }
}
