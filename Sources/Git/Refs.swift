import CLibgit2
import FileSystem
import SystemPackage
import ObjectStorage

extension Repository {
    /// Points `name` at `id` only if it still points at `expected` (nil: only if it does not exist).
    /// Fails with `GitError.Code.modified` (or libgit2's "exists" code) when someone moved it meanwhile.
    public func updateReference(_ name: String, to id: Oid, expected: Oid?, message: String) throws(GitError) {
        var out: OpaquePointer?
        var target = id.raw
        let rc: Int32
        if var current = expected?.raw {
            rc = git_reference_create_matching(&out, handle, name, &target, 1, &current, message)
        } else {
            rc = git_reference_create(&out, handle, name, &target, 0, message)
        }
        try check(rc, "git_reference_create(\(name))")
        git_reference_free(out)
    }

    /// Points `name` at `id` by git's own lock protocol (`<name>.lock` made exclusively, the id
    /// written, renamed over the ref), without libgit2's reference machinery, and without a
    /// reflog: libgit2's create reads the configuration, the old value twice, `HEAD` and `main`,
    /// and appends to the reflog (35 system calls against 4), and a round through a hub of 100
    /// devices moves 200 such refs. Only for refs nothing reads the history of, that this process
    /// alone moves (a hub's mirror, tracking refs); like libgit2's, the write is not flushed.
    public func writeLooseRef(_ name: String, to id: Oid) throws(GitError) {
        try Self.checkRefName(name, call: "writeLooseRef")
        let path = gitDir.appending(name), lock = gitDir.appending(name + ".lock")
        let line = Array((id.hex + "\n").utf8)
        func fail(_ errno: Errno, _ what: String) -> GitError {
            lockFailure(errno, what, lock, call: "writeLooseRef(\(name))")
        }
        do {
            try Files.create(lock, bytes: line, executable: false)
        } catch .noSuchFileOrDirectory {
            do {
                try Files.makeDirectories(path.removingLastComponent())
                try Files.create(lock, bytes: line, executable: false)
            } catch { throw fail(error, "cannot create") }
        } catch { throw fail(error, "cannot create") }
        do {
            try Files.rename(lock, to: path)
        } catch {
            try? Files.remove(lock)
            throw fail(error, "cannot rename")
        }
    }

    /// Points every ref of `updates` at its id in one rewrite of `packed-refs`, then removes any
    /// loose file of those names (a loose ref hides a packed one). For many refs that this process
    /// alone moves, none of whose history is read (a hub's mirror and tracking refs of the other
    /// devices): a round through a hub of 100 devices moved 200 loose refs, and each rename over a
    /// ref made ext4 start the new file's writeback and free the old inode (a tenth of an agent's
    /// CPU in the burst). Git's lock protocol: `packed-refs.lock` made exclusively (another
    /// writer's lock: `GitError.Code.locked`, nothing written), the whole file written and flushed
    /// before it is renamed over `packed-refs`, so that a power cut leaves the old file or the new
    /// one, never a damaged one. The other lines (refs, peeled ids, the header) are kept byte for
    /// byte; the refs are written in git's order.
    public func writePackedRefs(_ updates: [(name: String, id: Oid)]) throws(GitError) {
        guard !updates.isEmpty else { return }
        for update in updates { try Self.checkRefName(update.name, call: "writePackedRefs") }
        let path = gitDir.appending("packed-refs"), lock = gitDir.appending("packed-refs.lock")
        func fail(_ errno: Errno, _ what: String, _ file: FilePath) -> GitError {
            lockFailure(errno, what, file, call: "writePackedRefs")
        }
        // The file is read once the lock is held (as git and libgit2 do): another writer's
        // rewrite between a read and the lock would be undone.
        var readFailure: Errno?
        do {
            try Files.create(lock, executable: false) { sink in
                var old: [UInt8] = []
                do throws(Errno) { old = try Files.read(path) } catch {
                    if error != .noSuchFileOrDirectory {
                        readFailure = error
                        throw error
                    }
                }
                let bytes = PackedRefs.rewrite(old, with: updates.map { (Array($0.name.utf8), Array($0.id.hex.utf8)) })
                try bytes.withUnsafeBytes { try sink.write($0) }
                try sink.flush()
            }
        } catch {
            if let readFailure { throw fail(readFailure, "cannot read", path) }
            throw fail(error, "cannot create", lock)
        }
        do {
            try Files.rename(lock, to: path)
        } catch {
            try? Files.remove(lock)
            throw fail(error, "cannot rename", lock)
        }
        for update in updates {
            do { try Files.remove(gitDir.appending(update.name)) } catch {
                throw fail(error, "cannot remove the loose ref", gitDir.appending(update.name))
            }
        }
    }

    /// A ref write that failed on `file` (its lock, or the file itself). A lock that is there
    /// already belongs to another writer, or to one that died: the error says which file to
    /// remove if no git program is running on the store (the agent removes its own at start).
    func lockFailure(_ errno: Errno, _ what: String, _ file: FilePath, call: String) -> GitError {
        let held = errno == .fileExists && file.extension == "lock"
        let message = held
            ? "\(what) \(file): another program holds this lock; if no git program is working on \(gitDir) any more, remove \(file)"
            : "\(what) \(file): \(errno)"
        return GitError(code: held ? GitError.Code.locked : GitError.Code.generic, errorClass: GitError.Class.os,
                        message: message, call: call, osError: errno.rawValue)
    }

    static func checkRefName(_ name: String, call: String) throws(GitError) {
        var valid: Int32 = 0
        guard git_reference_name_is_valid(&valid, name) == 0, valid == 1, name.hasPrefix("refs/"), !name.hasSuffix(".lock") else {
            throw GitError(code: GitError.Code.invalid, errorClass: 0, message: "not a valid reference name: \(name)", call: call)
        }
    }

    /// Points `name` at `id` whatever it pointed at (a tracking reference); no write when it already does.
    public func setReference(_ name: String, to id: Oid, message: String) throws(GitError) {
        if try resolveReference(name) == id { return }
        var out: OpaquePointer?
        var target = id.raw
        try check(git_reference_create(&out, handle, name, &target, 1, message), "git_reference_create(\(name))")
        git_reference_free(out)
    }

    /// The best common ancestor of two commits, or nil when their histories never met.
    public func mergeBase(_ a: Oid, _ b: Oid) throws(GitError) -> Oid? {
        var out = git_oid()
        var x = a.raw, y = b.raw
        let rc = git_merge_base(&out, handle, &x, &y)
        if rc == GitError.Code.notFound { return nil }
        try check(rc, "git_merge_base(\(a), \(b))")
        return Oid(out)
    }

    /// Whether `commit` is one of `descendants` or in the history of any of them: one walk for
    /// the whole list.
    public func isReachable(_ commit: Oid, fromAny descendants: [Oid]) throws(GitError) -> Bool {
        try graph.isReachable(commit, fromAny: descendants) { id throws(GitError) in try self.commit(id).parents }
    }

    /// Which of `commits` are among `descendants` or in the history of any of them: one walk for
    /// all (`CommitGraph.reachable`).
    public func reachable(_ commits: [Oid], fromAny descendants: [Oid]) throws(GitError) -> Set<Oid> {
        try graph.reachable(Set(commits), fromAny: descendants) { id throws(GitError) in try self.commit(id).parents }
    }

    /// The commits of `commits` that are in no other's history (git's `merge-base --independent`),
    /// in the order given, each once: one walk from all their parents.
    public func independent(_ commits: [Oid]) throws(GitError) -> [Oid] {
        let read = { (id: Oid) throws(GitError) -> [Oid] in try self.commit(id).parents }
        let below = try graph.reachable(Set(commits), fromAny: try graph.parents(of: commits, read: read), read: read)
        var kept: Set<Oid> = []
        return commits.filter { !below.contains($0) && kept.insert($0).inserted }
    }

    /// libgit2's own answer to `isReachable` (a new walk per call): the reference the tests hold
    /// `CommitGraph` to.
    func isReachableByLibgit2(_ commit: Oid, fromAny descendants: [Oid]) throws(GitError) -> Bool {
        guard !descendants.isEmpty else { return false }
        var c = commit.raw
        let raws = descendants.map(\.raw)
        let rc = raws.withUnsafeBufferPointer { git_graph_reachable_from_any(handle, &c, $0.baseAddress, $0.count) }
        return try check(rc, "git_graph_reachable_from_any") == 1
    }

    /// Whether `commit` has `ancestor` in its history (false when they are equal), from the
    /// store's `CommitGraph` (libgit2's `git_graph_descendant_of` walked down to the root whenever
    /// the answer was no).
    public func isDescendant(_ commit: Oid, of ancestor: Oid) throws(GitError) -> Bool {
        guard commit != ancestor else { return false }
        return try isReachable(ancestor, fromAny: [commit])
    }

    /// libgit2's own answer to `isDescendant`: the reference the tests hold it to.
    func isDescendantByLibgit2(_ commit: Oid, of ancestor: Oid) throws(GitError) -> Bool {
        var x = commit.raw, y = ancestor.raw
        return try check(git_graph_descendant_of(handle, &x, &y), "git_graph_descendant_of") == 1
    }

    /// How many commits `local` has that `upstream` lacks, and the reverse.
    public func aheadBehind(local: Oid, upstream: Oid) throws(GitError) -> (ahead: Int, behind: Int) {
        var ahead = 0, behind = 0
        var x = local.raw, y = upstream.raw
        try check(git_graph_ahead_behind(&ahead, &behind, handle, &x, &y), "git_graph_ahead_behind")
        return (ahead, behind)
    }
}
