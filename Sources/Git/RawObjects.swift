import CLibgit2
import ObjectStorage
import SystemPackage

/// Objects as git hashes them ("<type> <size>\0<content>"), for a hub that stores them sealed: read
/// whole, written back (their id recomputed), and the objects behind some commits that a set does
/// not hold yet, found in O(new objects).
extension Repository {
    /// A bare repository at `gitDir`, made if it is not there (an encrypted hub's sealed side).
    public static func openOrCreateBare(gitDir: FilePath) throws(GitError) -> Repository {
        try Libgit2.initialize()
        var out: OpaquePointer?
        let opened = gitDir.withPlatformString {
            git_repository_open_ext(&out, $0, GIT_REPOSITORY_OPEN_NO_SEARCH.rawValue | GIT_REPOSITORY_OPEN_BARE.rawValue, nil)
        }
        if opened != 0 {
            try check(gitDir.withPlatformString { git_repository_init(&out, $0, 1) }, "git_repository_init(\(gitDir))")
        }
        return Repository(handle: out!, gitDir: gitDir, workdir: gitDir)
    }

    /// The object as git hashes it: "<type> <size>\0" and its content.
    public func readRaw(_ id: Oid) throws(GitError) -> [UInt8] {
        var odb: OpaquePointer?
        try check(git_repository_odb(&odb, handle), "git_repository_odb")
        defer { git_odb_free(odb) }
        var raw = id.raw
        var object: OpaquePointer?
        try check(git_odb_read(&object, odb, &raw), "git_odb_read(\(id))")
        defer { git_odb_object_free(object) }
        let size = git_odb_object_size(object)
        let type = git_odb_object_type(object)
        var out = Array("\(Self.typeName(type)) \(size)\0".utf8)
        if size > 0, let data = git_odb_object_data(object) {
            out.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size))
        }
        return out
    }

    /// Writes what `readRaw` gave; returns the id git computes for it (the caller compares it with
    /// the id it expected).
    public func writeRaw(_ raw: [UInt8]) throws(GitError) -> Oid {
        let (type, nul) = try Self.rawHeader(raw)
        let size = raw.count - nul - 1
        var out = git_oid()
        // A photo stays as it is (`withLooseOdb`): deflate would cost 50-80 MB/s and save nothing.
        let storing = raw.withUnsafeBytes { Incompressible.looks(UnsafeRawBufferPointer(rebasing: $0[(nul + 1)...])) }
        let rc = try withLooseOdb(storing: storing) { odb in
            raw.withUnsafeBytes { git_odb_write(&out, odb, $0.baseAddress! + nul + 1, size, type) }
        }
        try check(rc, "git_odb_write")
        return noteWritten(Oid(out))
    }

    /// The type of a raw object ("<type> <size>\0<content>") and where its header's NUL is.
    static func rawHeader(_ raw: [UInt8]) throws(GitError) -> (git_object_t, Int) {
        guard let space = raw.firstIndex(of: 0x20), let nul = raw.firstIndex(of: 0),
              space < nul, let type = type(named: raw[..<space]),
              let size = Int(String(decoding: raw[(space + 1)..<nul], as: UTF8.self)), size == raw.count - nul - 1 else {
            throw GitError(code: -1, errorClass: 0, message: "not a git object (its header is not '<type> <size>')", call: "writeRaw")
        }
        return (type, nul)
    }

    /// Every object behind `tips` (commits, their trees and blobs, parents) that `known` does not
    /// hold, each once; a commit or tree `known` holds is not looked into (all behind it is known).
    public func objectsBehind(_ tips: [Oid], known: (Oid) -> Bool) throws(GitError) -> [Oid] {
        var out: [Oid] = []
        var seen = Set<Oid>()
        var commits = tips.filter { !known($0) }
        while let id = commits.popLast() {
            guard seen.insert(id).inserted else { continue }
            out.append(id)
            let info = try commit(id)
            try treeObjects(info.tree, known: known, seen: &seen, into: &out)
            commits.append(contentsOf: info.parents.filter { !known($0) && !seen.contains($0) })
        }
        return out
    }

    private func treeObjects(_ tree: Oid, known: (Oid) -> Bool, seen: inout Set<Oid>, into out: inout [Oid]) throws(GitError) {
        guard !known(tree), seen.insert(tree).inserted else { return }
        out.append(tree)
        var raw = tree.raw
        var handle: OpaquePointer?
        try check(git_tree_lookup(&handle, self.handle, &raw), "git_tree_lookup(\(tree))")
        defer { git_tree_free(handle) }
        for i in 0..<git_tree_entrycount(handle) {
            let entry = git_tree_entry_byindex(handle, i)
            let id = Oid(git_tree_entry_id(entry)!.pointee)
            switch git_tree_entry_type(entry) {
            case GIT_OBJECT_TREE: try treeObjects(id, known: known, seen: &seen, into: &out)
            case GIT_OBJECT_BLOB: if !known(id), seen.insert(id).inserted { out.append(id) }
            default: break  // a submodule's commit is not ours
            }
        }
    }

    /// Writes a tree of blobs and subtrees (names in any order).
    public func writeTree(_ entries: [(name: String, id: Oid, isTree: Bool)]) throws(GitError) -> Oid {
        var builder: OpaquePointer?
        try check(git_treebuilder_new(&builder, handle, nil), "git_treebuilder_new")
        defer { git_treebuilder_free(builder) }
        for entry in entries {
            var raw = entry.id.raw
            try check(git_treebuilder_insert(nil, builder, entry.name, &raw, entry.isTree ? GIT_FILEMODE_TREE : GIT_FILEMODE_BLOB),
                      "git_treebuilder_insert(\(entry.name))")
        }
        var out = git_oid()
        try check(git_treebuilder_write(&out, builder), "git_treebuilder_write")
        return noteWritten(Oid(out))
    }

    /// A tree's entries: name, id, whether it is a tree.
    public func treeEntries(_ tree: Oid) throws(GitError) -> [(name: String, id: Oid, isTree: Bool)] {
        var raw = tree.raw
        var handle: OpaquePointer?
        try check(git_tree_lookup(&handle, self.handle, &raw), "git_tree_lookup(\(tree))")
        defer { git_tree_free(handle) }
        return (0..<git_tree_entrycount(handle)).map { i in
            let entry = git_tree_entry_byindex(handle, i)
            return (String(cString: git_tree_entry_name(entry)), Oid(git_tree_entry_id(entry)!.pointee), git_tree_entry_type(entry) == GIT_OBJECT_TREE)
        }
    }

    static func typeName(_ type: git_object_t) -> String {
        switch type {
        case GIT_OBJECT_COMMIT: "commit"
        case GIT_OBJECT_TREE: "tree"
        case GIT_OBJECT_TAG: "tag"
        default: "blob"
        }
    }

    static func type(named name: ArraySlice<UInt8>) -> git_object_t? {
        switch String(decoding: name, as: UTF8.self) {
        case "commit": GIT_OBJECT_COMMIT
        case "tree": GIT_OBJECT_TREE
        case "blob": GIT_OBJECT_BLOB
        case "tag": GIT_OBJECT_TAG
        default: nil
        }
    }
}

extension Repository {
    /// Removes a reference (no error when it is not there).
    public func deleteReference(_ name: String) throws(GitError) {
        let rc = git_reference_remove(handle, name)
        if rc != 0 && rc != GIT_ENOTFOUND.rawValue { try check(rc, "git_reference_remove(\(name))") }
    }
}

extension PackBatch {
    /// `Repository.writeRaw` into this batch's pack: the id git computes for it.
    public func writeRaw(_ raw: [UInt8]) throws(GitError) -> Oid {
        let (type, nul) = try Repository.rawHeader(raw)
        let result: Result<Oid, GitError> = raw.withUnsafeBytes { bytes in
            do throws(GitError) { return .success(try write(UnsafeRawBufferPointer(rebasing: bytes[(nul + 1)...]), type: type)) } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// A blob into this batch's pack.
    public func writeBlob(_ bytes: [UInt8]) throws(GitError) -> Oid {
        let result: Result<Oid, GitError> = bytes.withUnsafeBytes { bytes in
            do throws(GitError) { return .success(try write(bytes, type: GIT_OBJECT_BLOB)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The files of the packs this batch wrote (each pack and its index), to make durable.
    public var packFiles: [FilePath] {
        let dir = gitDir.appending("objects").appending("pack")
        return names.flatMap { [dir.appending("pack-\($0).pack"), dir.appending("pack-\($0).idx")] }
    }
}
