import CLibgit2
import ObjectStorage

extension Repository {
    /// The commits reachable from `tip`, newest first (by commit time, parents after children), or
    /// only its first-parent chain. `body` returns false to stop.
    public func walk(from tip: Oid, firstParentOnly: Bool = false, _ body: (Oid) throws -> Bool) throws {
        var walker: OpaquePointer?
        try check(git_revwalk_new(&walker, handle), "git_revwalk_new")
        defer { git_revwalk_free(walker) }
        try check(git_revwalk_sorting(walker, GIT_SORT_TOPOLOGICAL.rawValue | GIT_SORT_TIME.rawValue), "git_revwalk_sorting")
        if firstParentOnly { try check(git_revwalk_simplify_first_parent(walker), "git_revwalk_simplify_first_parent") }
        var raw = tip.raw
        try check(git_revwalk_push(walker, &raw), "git_revwalk_push(\(tip))")
        var next = git_oid()
        while true {
            let rc = git_revwalk_next(&next, walker)
            if rc == GitError.Code.iterOver { return }
            try check(rc, "git_revwalk_next")
            if try !body(Oid(next)) { return }
        }
    }

    /// The commit a user named by a full or abbreviated hex id; nil when no commit has that id.
    /// An ambiguous abbreviation is an error that says so.
    public func commit(named text: String) throws(GitError) -> Oid? {
        guard (4...40).contains(text.count), text.allSatisfy(\.isHexDigit) else { return nil }
        var object: OpaquePointer?
        let rc = git_revparse_single(&object, handle, text + "^{commit}")
        if rc == GitError.Code.notFound { return nil }
        try check(rc, "git_revparse_single(\(text))")
        defer { git_object_free(object) }
        return Oid(git_object_id(object).pointee)
    }
}
