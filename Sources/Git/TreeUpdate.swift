import CLibgit2
import ObjectStorage
import SystemPackage
import FileSystem

/// What a path becomes in `Repository.updateTree`.
public enum TreeEdit: Sendable, Equatable {
    /// A blob or link at the path (whatever was there, file or directory, goes).
    case entry(ConflictSide)
    /// A whole directory (an existing tree object) at the path.
    case tree(Oid)
    /// Nothing at the path: the file or the whole directory goes.
    case remove
}

extension Repository {
    /// The tree `base` (nil: empty) with each path set to its edit, rebuilding only the trees along
    /// the edited paths: O(edits x depth x entries of the directories they cross), never the size
    /// of the whole tree. A directory left with nothing in it disappears (git has no empty trees);
    /// the empty tree when nothing is left. An edit under a path that another edit also sets is
    /// applied after it (a directory replaced, then one of its files changed).
    public func updateTree(_ base: Oid?, edits: [(path: FilePath, edit: TreeEdit)]) throws(GitError) -> Oid {
        // Each path's bytes once, and where the walk is in them: a commit of 5,000 files held
        // 2-3 MB of arrays of names per path and level before.
        var split: [PathEdit] = []
        split.reserveCapacity(edits.count)
        for e in edits {
            let edit = PathEdit(path: e.path.bytes, at: 0, edit: e.edit)
            if edit.name != nil { split.append(edit) }
        }
        if let tree = try update(base, split) { return tree }
        var builder: OpaquePointer?
        try check(git_treebuilder_new(&builder, handle, nil), "git_treebuilder_new")
        defer { git_treebuilder_free(builder) }
        var out = git_oid()
        try check(git_treebuilder_write(&out, builder), "git_treebuilder_write")
        return noteWritten(Oid(out))
    }

    /// An edit of `path` seen from the directory whose part of it begins at `at`.
    private struct PathEdit {
        let path: [UInt8]
        let at: Int
        let edit: TreeEdit

        /// The name at this level (empty parts skipped) and where the rest begins, nil past the end.
        var name: (range: Range<Int>, rest: Int?)? {
            var start = at
            while start < path.count, path[start] == UInt8(ascii: "/") { start += 1 }
            guard start < path.count else { return nil }
            let end = path[start...].firstIndex(of: UInt8(ascii: "/")) ?? path.count
            var rest = end
            while rest < path.count, path[rest] == UInt8(ascii: "/") { rest += 1 }
            return (start..<end, rest < path.count ? rest : nil)
        }
    }

    private func update(_ base: Oid?, _ edits: [PathEdit]) throws(GitError) -> Oid? {
        var tree: OpaquePointer?
        if var raw = base?.raw {
            try check(git_tree_lookup(&tree, handle, &raw), "git_tree_lookup(\(base!))")
        }
        defer { if tree != nil { git_tree_free(tree) } }
        var builder: OpaquePointer?
        try check(git_treebuilder_new(&builder, handle, tree), "git_treebuilder_new")
        defer { git_treebuilder_free(builder) }

        // Edits of each name at this level: the one that names it, then those below it.
        var here: [[UInt8]: TreeEdit] = [:]
        var below: [[UInt8]: [PathEdit]] = [:]
        var order: [[UInt8]] = []
        for e in edits {
            guard let (range, rest) = e.name else { continue }
            let name = Array(e.path[range])
            if here[name] == nil && below[name] == nil { order.append(name) }
            if let rest { below[name, default: []].append(PathEdit(path: e.path, at: rest, edit: e.edit)) } else { here[name] = e.edit }
        }
        for name in order {
            let cName = name + [0]
            var current: (oid: Oid, isTree: Bool)?
            if let entry = cName.withUnsafeBufferPointer({ $0.withMemoryRebound(to: CChar.self) { git_treebuilder_get(builder, $0.baseAddress) } }) {
                current = (Oid(git_tree_entry_id(entry)), git_tree_entry_type(entry) == GIT_OBJECT_TREE)
            }
            // What the name holds after its own edit (nil: nothing).
            var result: (oid: Oid, mode: UInt32)?
            switch here[name] {
            case .entry(let side)?: result = (side.oid, side.mode)
            case .tree(let id)?: result = (id, 0o040000)
            case .remove?: result = nil
            case nil: result = current.map { ($0.oid, $0.isTree ? 0o040000 : 0) }
            }
            if let deeper = below[name] {
                // Edits below a file or link: it becomes a directory only if they leave something.
                let isTree = result?.mode == 0o040000
                if let sub = try update(isTree ? result!.oid : nil, deeper) {
                    result = (sub, 0o040000)
                } else if isTree {
                    result = nil
                }
            }
            let rc: Int32 = cName.withUnsafeBufferPointer { buf in
                buf.withMemoryRebound(to: CChar.self) { cn -> Int32 in
                    if let result {
                        if current?.oid == result.oid && result.mode == 0 { return 0 }  // untouched
                        var raw = result.oid.raw
                        return git_treebuilder_insert(nil, builder, cn.baseAddress, &raw, git_filemode_t(rawValue: result.mode))
                    }
                    guard current != nil else { return 0 }
                    return git_treebuilder_remove(builder, cn.baseAddress)
                }
            }
            try check(rc, "git_treebuilder_insert(\(FilePath(bytes: name)))")
        }
        guard git_treebuilder_entrycount(builder) > 0 else { return nil }
        var out = git_oid()
        try check(git_treebuilder_write(&out, builder), "git_treebuilder_write")
        return noteWritten(Oid(out))
    }

    /// The tree of `entries` (sorted as git's index is: a directory's entries together, right after
    /// the paths that sort before `name/`): directories are opened as their first entry comes and
    /// written as the first entry outside them comes.
    func writeTree(sortedEntries entries: IndexEntries) throws(GitError) -> Oid {
        var stack: [(prefix: [UInt8], builder: OpaquePointer)] = []
        defer { for open in stack { git_treebuilder_free(open.builder) } }
        func open(_ prefix: [UInt8]) throws(GitError) {
            var builder: OpaquePointer?
            try check(git_treebuilder_new(&builder, handle, nil), "git_treebuilder_new")
            stack.append((prefix, builder!))
        }
        func insert(_ name: some Collection<UInt8>, _ id: Oid, _ mode: UInt32, into builder: OpaquePointer) throws(GitError) {
            var raw = id.raw
            let cName = Array(name) + [0]
            let rc = cName.withUnsafeBufferPointer { buf in
                buf.withMemoryRebound(to: CChar.self) { git_treebuilder_insert(nil, builder, $0.baseAddress, &raw, git_filemode_t(rawValue: mode)) }
            }
            try check(rc, "git_treebuilder_insert(\(FilePath(bytes: Array(name))))")
        }
        /// Writes the innermost open directory and enters it in its parent.
        func close() throws(GitError) -> Oid {
            let (prefix, builder) = stack.removeLast()
            defer { git_treebuilder_free(builder) }
            var out = git_oid()
            try check(git_treebuilder_write(&out, builder), "git_treebuilder_write")
            let id = noteWritten(Oid(out))
            if let parent = stack.last {
                try insert(prefix[parent.prefix.count..<(prefix.count - 1)], id, 0o040000, into: parent.builder)
            }
            return id
        }
        try open([])
        var failure: GitError?
        entries.forEach { record, path in
            guard failure == nil else { return }
            do throws(GitError) {
                while !path.starts(with: stack.last!.prefix) { _ = try close() }
                var from = stack.last!.prefix.count
                while let slash = path[from...].firstIndex(of: UInt8(ascii: "/")) {
                    try open(Array(path[..<(slash + 1)]))
                    from = slash + 1
                }
                try insert(path[from...], record.oid, record.mode, into: stack.last!.builder)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        while stack.count > 1 { _ = try close() }
        return try close()
    }
}
