import CLibgit2
import Glibc
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
    /// The blobs and links that differ between two trees (`nil` is the empty tree), sorted by path
    /// bytes. Costs the size of the difference: a subtree with the same id on both sides is never
    /// read (libgit2's tree-to-tree diff reads every subtree of both: 2,000 tree objects for one
    /// changed file in a 100k-file tree, most of a merge's time).
    public func diffTrees(_ old: Oid?, _ new: Oid) throws(GitError) -> [TreeChange] {
        var changes: [TreeChange] = []
        try diffTree(old, new, prefix: [], into: &changes)
        changes.sort { $0.path.precedesInBytes($1.path) }
        return changes
    }

    /// One entry of a tree: its name's bytes, id and mode.
    private struct Entry {
        let name: [UInt8]
        let id: Oid
        let mode: UInt32
        var isTree: Bool { mode == 0o040000 }
    }

    private func entries(of tree: Oid?) throws(GitError) -> [[UInt8]: Entry] {
        guard var raw = tree?.raw else { return [:] }
        var obj: OpaquePointer?
        try check(git_tree_lookup(&obj, handle, &raw), "git_tree_lookup(\(tree!))")
        defer { git_tree_free(obj) }
        var out: [[UInt8]: Entry] = [:]
        let count = git_tree_entrycount(obj)
        out.reserveCapacity(count)
        for i in 0..<count {
            guard let e = git_tree_entry_byindex(obj, i), let cName = git_tree_entry_name(e) else { continue }
            let name = Array(UnsafeBufferPointer(start: UnsafeRawPointer(cName).assumingMemoryBound(to: UInt8.self), count: strlen(cName)))
            out[name] = Entry(name: name, id: Oid(git_tree_entry_id(e)), mode: git_tree_entry_filemode(e).rawValue)
        }
        return out
    }

    private func diffTree(_ old: Oid?, _ new: Oid?, prefix: [UInt8], into changes: inout [TreeChange]) throws(GitError) {
        guard old != new else { return }
        let a = try entries(of: old), b = try entries(of: new)
        func path(_ name: [UInt8]) -> FilePath { FilePath(bytes: prefix.isEmpty ? name : prefix + [UInt8(ascii: "/")] + name) }
        func sub(_ name: [UInt8]) -> [UInt8] { prefix.isEmpty ? name : prefix + [UInt8(ascii: "/")] + name }
        for name in Set(a.keys).union(b.keys) {
            let x = a[name], y = b[name]
            let oldTree = x?.isTree == true ? x?.id : nil, newTree = y?.isTree == true ? y?.id : nil
            if oldTree != nil || newTree != nil {
                try diffTree(oldTree, newTree, prefix: sub(name), into: &changes)
            }
            let oldLeaf = x.flatMap { $0.isTree ? nil : ConflictSide(oid: $0.id, mode: $0.mode) }
            let newLeaf = y.flatMap { $0.isTree ? nil : ConflictSide(oid: $0.id, mode: $0.mode) }
            if oldLeaf != newLeaf { changes.append(TreeChange(path: path(name), old: oldLeaf, new: newLeaf)) }
        }
    }

    /// libgit2's own tree-to-tree diff, which reads every subtree: the reference `diffTrees` is
    /// checked against in tests.
    public func diffTreesReadingEverything(_ old: Oid?, _ new: Oid) throws(GitError) -> [TreeChange] {
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
