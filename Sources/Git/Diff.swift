import CLibgit2
import ObjectStorage
import Glibc
import SystemPackage
import FileSystem

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
        do {
            try diffTree(old, new, prefix: []) { changes.append($0) }
        } catch {
            throw error as! GitError  // appending throws nothing else
        }
        // Trees in git's order give the paths in byte order already; a hand-made tree may not.
        if !zip(changes, changes.dropFirst()).allSatisfy({ $0.path.precedesInBytes($1.path) }) {
            changes = changes.sortedInBytes { $0.path }
        }
        return changes
    }

    /// The same changes handed to `visit` one by one as the walk finds them, never held together:
    /// in byte order for trees in git's order, in the trees' own order otherwise (hand-made).
    /// Errors are libgit2's (`GitError`) or what `visit` throws.
    public func walkDiff(_ old: Oid?, _ new: Oid, _ visit: (TreeChange) throws -> Void) throws {
        try diffTree(old, new, prefix: [], visit)
    }

    /// `new` and every subtree of it that `old` does not hold at the same path with the same id:
    /// each tree object a step from `old` to `new` wrote (or took from elsewhere), found at the
    /// cost of the difference. Empty when they are the same tree.
    public func treesDiffering(_ old: Oid?, _ new: Oid) throws(GitError) -> [Oid] {
        var out: [Oid] = []
        func walk(_ old: Oid?, _ new: Oid) throws(GitError) {
            guard old != new else { return }
            out.append(new)
            var before: [[UInt8]: Oid] = [:]
            for x in try entries(of: old).entries where x.isTree { before[x.name] = x.id }
            for y in try entries(of: new).entries where y.isTree { try walk(before[y.name], y.id) }
        }
        try walk(old, new)
        return out
    }

    /// A tree's entries by name: blobs, links, subtrees (mode 0o040000). A tree git made has one
    /// entry a name; a hand-made one may hold a link and a subtree of the same name, which
    /// libgit2's lookup by name finds one or the other of, depending on the names around them:
    /// here both are listed.
    public func entriesByName(_ tree: Oid) throws(GitError) -> [[UInt8]: [ConflictSide]] {
        var table: [[UInt8]: [ConflictSide]] = [:]
        for entry in try entries(of: tree).entries {
            table[entry.name, default: []].append(ConflictSide(oid: entry.id, mode: entry.mode))
        }
        return table
    }

    /// One entry of a tree: its name's bytes, id and mode.
    private struct Entry {
        let name: [UInt8]
        let id: Oid
        let mode: UInt32
        var isTree: Bool { mode == 0o040000 }

        /// Git's order of tree entries: names as bytes, a subtree's name with a '/' after it (so
        /// the order of the full paths' bytes).
        static func order(_ a: Entry, _ b: Entry) -> Int {
            let n = min(a.name.count, b.name.count)
            for k in 0..<n where a.name[k] != b.name[k] { return a.name[k] < b.name[k] ? -1 : 1 }
            let x: UInt8 = a.name.count > n ? a.name[n] : a.isTree ? 0x2f : 0
            let y: UInt8 = b.name.count > n ? b.name[n] : b.isTree ? 0x2f : 0
            return x < y ? -1 : x > y ? 1 : 0
        }
    }

    /// A tree's entries as it lists them; `ordered` says whether that is git's order (a tree a peer
    /// made by hand may list them otherwise).
    private func entries(of tree: Oid?) throws(GitError) -> (entries: [Entry], ordered: Bool) {
        guard var raw = tree?.raw else { return ([], true) }
        var obj: OpaquePointer?
        try check(git_tree_lookup(&obj, handle, &raw), "git_tree_lookup(\(tree!))")
        defer { git_tree_free(obj) }
        let count = git_tree_entrycount(obj)
        var out: [Entry] = []
        out.reserveCapacity(count)
        var ordered = true
        for i in 0..<count {
            guard let e = git_tree_entry_byindex(obj, i), let cName = git_tree_entry_name(e) else { continue }
            let name = Array(UnsafeBufferPointer(start: UnsafeRawPointer(cName).assumingMemoryBound(to: UInt8.self), count: strlen(cName)))
            let entry = Entry(name: name, id: Oid(git_tree_entry_id(e)), mode: git_tree_entry_filemode(e).rawValue)
            if let last = out.last, Entry.order(last, entry) >= 0 { ordered = false }
            out.append(entry)
        }
        // A blob and a subtree of one name sort apart ("a" before "a.b" before "a/"): a tree
        // holding both (hand-made) is matched by name, which keeps one of them.
        if ordered {
            for tree in out where tree.isTree {
                let blob = Entry(name: tree.name, id: tree.id, mode: 0o100644)
                var low = 0, high = out.count
                while low < high {
                    let mid = (low + high) / 2
                    if Entry.order(out[mid], blob) < 0 { low = mid + 1 } else { high = mid }
                }
                if low < out.count, !out[low].isTree, out[low].name == tree.name {
                    ordered = false
                    break
                }
            }
        }
        return (out, ordered)
    }

    /// Both trees' entries side by side in git's order (one walk of each), or, when either is not
    /// in that order, matched by name.
    private func diffTree(_ old: Oid?, _ new: Oid?, prefix: [UInt8], _ visit: (TreeChange) throws -> Void) throws {
        guard old != new else { return }
        let (a, aOrdered) = try entries(of: old), (b, bOrdered) = try entries(of: new)
        func sub(_ name: [UInt8]) -> [UInt8] { prefix.isEmpty ? name : prefix + [UInt8(ascii: "/")] + name }
        func pair(_ x: Entry?, _ y: Entry?) throws {
            let oldTree = x?.isTree == true ? x?.id : nil, newTree = y?.isTree == true ? y?.id : nil
            let name = (x ?? y)!.name
            if oldTree != nil || newTree != nil {
                try diffTree(oldTree, newTree, prefix: sub(name), visit)
            }
            let oldLeaf = x.flatMap { $0.isTree ? nil : ConflictSide(oid: $0.id, mode: $0.mode) }
            let newLeaf = y.flatMap { $0.isTree ? nil : ConflictSide(oid: $0.id, mode: $0.mode) }
            if oldLeaf != newLeaf { try visit(TreeChange(path: FilePath(bytes: sub(name)), old: oldLeaf, new: newLeaf)) }
        }
        guard aOrdered && bOrdered else {
            var byName: [[UInt8]: (Entry?, Entry?)] = [:]
            for x in a { byName[x.name, default: (nil, nil)].0 = x }
            for y in b { byName[y.name, default: (nil, nil)].1 = y }
            for (x, y) in byName.values { try pair(x, y) }
            return
        }
        var i = 0, j = 0
        while i < a.count || j < b.count {
            let order = i == a.count ? 1 : j == b.count ? -1 : Entry.order(a[i], b[j])
            if order < 0 {
                try pair(a[i], nil)
                i += 1
            } else if order > 0 {
                try pair(nil, b[j])
                j += 1
            } else {
                try pair(a[i], b[j])
                i += 1
                j += 1
            }
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
        // The tree's files and the index's entries come in the same order (git's: a directory's
        // entries sort as if its name ended in '/'): one pass over both, nothing listed whole.
        final class Walk {
            let entries: IndexEntries
            var cursor: IndexEntries.Location?
            var changes: [TreeChange] = []
            init(_ entries: IndexEntries) {
                self.entries = entries
                cursor = entries.first
            }
            func side(_ l: IndexEntries.Location) -> ConflictSide {
                let r = entries.record(at: l)
                return ConflictSide(oid: r.oid, mode: r.mode)
            }
        }
        let walk = Walk(index.storage)  // shared, not copied: nothing changes it meanwhile
        if let tree {
            var treeObj: OpaquePointer?
            var raw = tree.raw
            try check(git_tree_lookup(&treeObj, handle, &raw), "git_tree_lookup(\(tree))")
            defer { git_tree_free(treeObj) }
            let rc = git_tree_walk(treeObj, GIT_TREEWALK_PRE, { root, entry, payload in
                guard let entry, let root, let payload else { return 0 }
                guard git_tree_entry_type(entry) != GIT_OBJECT_TREE else { return 0 }
                let name = git_tree_entry_name(entry)!
                var bytes = Array(UnsafeBufferPointer(start: UnsafeRawPointer(root).assumingMemoryBound(to: UInt8.self), count: strlen(root)))
                bytes.append(contentsOf: UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self), count: strlen(name)))
                let walk = Unmanaged<Walk>.fromOpaque(payload).takeUnretainedValue()
                let here = ConflictSide(oid: Oid(git_tree_entry_id(entry)), mode: git_tree_entry_filemode(entry).rawValue)
                // Entries of the index before this path: the tree has none of them.
                while let l = walk.cursor {
                    let order = walk.entries.withPath(at: l) { p in bytes.withUnsafeBytes { IndexEntries.compare(p, $0) } }
                    if order > 0 { break }
                    walk.cursor = walk.entries.next(l)
                    let staged = walk.side(l)
                    if order < 0 {
                        walk.changes.append(TreeChange(path: FilePath(bytes: walk.entries.path(at: l)), old: nil, new: staged))
                        continue
                    }
                    if staged != here { walk.changes.append(TreeChange(path: FilePath(bytes: bytes), old: here, new: staged)) }
                    return 0
                }
                walk.changes.append(TreeChange(path: FilePath(bytes: bytes), old: here, new: nil))
                return 0
            }, Unmanaged.passUnretained(walk).toOpaque())
            try check(rc, "git_tree_walk(\(tree))")
        }
        while let l = walk.cursor {
            walk.changes.append(TreeChange(path: FilePath(bytes: walk.entries.path(at: l)), old: nil, new: walk.side(l)))
            walk.cursor = walk.entries.next(l)
        }
        return walk.changes
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
