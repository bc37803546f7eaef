import CLibgit2
import ObjectStorage
import Glibc
import SystemPackage
import FileSystem

/// What copying a peer's objects did.
public struct ObjectCopyReport: Sendable, Equatable {
    public var objects = 0
    public var bytes = 0
    /// Blobs streamed through a fixed buffer instead of read whole.
    public var streamed = 0
    /// Big blobs the peer keeps loose in a read-only file of this user's on this file system,
    /// hashed through a link and kept linked: not written a second time.
    public var linked = 0
    /// Packs written (one per full batch, and one for the rest).
    public var packs = 0
    /// The peer's packs taken whole (through the indexer, nothing compressed again).
    public var wholePacks = 0
    /// The objects written as loose files (a small copy writes nothing else): the ones to flush.
    public var looseIds: [Oid] = []
    /// Loose objects found here, written in the last `recentSeconds`, that what the copy wrote
    /// names: another path of this process may not have flushed them yet (both devices made the
    /// same conflict record: seed 8000, cut 12), and a ref is about to name them. Flushed too.
    public var reliedLoose: [Oid] = []
    /// What "recent" is: the kernel writes dirty pages out within ~30 s by itself.
    public static let recentSeconds: Int64 = 120
}

/// Where `copyMissingObjects` changes how it writes: tests set them small to cross every limit.
public struct ObjectCopyLimits: Sendable {
    /// Blobs larger than this go through a fixed buffer when the peer keeps them loose (hashed
    /// once, as they are written; a whole read also had libgit2 hash them on the way in).
    public var streamAbove: Int
    /// A copy of at most this many objects writes them loose; a bigger one, into packs.
    public var looseLimit: Int
    /// A pack is written each time the objects waiting for one hold this many bytes.
    public var batchBytes: Int
    /// A copy of at least this many objects takes whole the peer's packs that hold at least this
    /// many of them (and are at least half made of them).
    public var wholePacksFrom: Int
    /// So does a copy of at least this many bytes of blobs, for packs of at least this many bytes
    /// (a pack of photos holds a few objects, each worth more than a thousand small files).
    public var wholePackBytes: Int
    public init(streamAbove: Int = 1 << 20, looseLimit: Int = 64, batchBytes: Int = 32 << 20, wholePacksFrom: Int = 256,
                wholePackBytes: Int = 4 << 20) {
        self.streamAbove = streamAbove
        self.looseLimit = looseLimit
        self.batchBytes = batchBytes
        self.wholePacksFrom = wholePacksFrom
        self.wholePackBytes = wholePackBytes
    }
}

extension Repository {
    /// Opens a git directory only to read its objects and references (a peer's store on this
    /// machine): no work tree is attached and nothing is written.
    public static func openForReading(gitDir: FilePath) throws(GitError) -> Repository {
        try Libgit2.initialize()
        var out: OpaquePointer?
        let rc = gitDir.withPlatformString {
            git_repository_open_ext(&out, $0, GIT_REPOSITORY_OPEN_NO_SEARCH.rawValue | GIT_REPOSITORY_OPEN_BARE.rawValue, nil)
        }
        try check(rc, "git_repository_open_ext(\(gitDir))")
        return Repository(handle: out!, gitDir: gitDir, workdir: gitDir)
    }

    /// Copies into this repository every object reachable from `tips` in `source` that it lacks:
    /// the "fetch" of a peer whose store is on this machine, in O(objects it lacks) (no pack is
    /// built, no negotiation). Every object's id is recomputed from what is written, so a damaged
    /// peer object is refused rather than stored. Blobs larger than `streamAbove` go through a
    /// fixed buffer when the peer keeps them loose, so a 1 GiB file costs no 1 GiB of memory.
    /// A commit is written only after its tree and its parents, and a commit a ref of this store
    /// reaches has everything it reaches, which is what lets the walk stop there. After a power cut
    /// a commit no ref reaches may lack its history (its file durable, its parent's not): the walk
    /// goes through such a commit as if it were missing (`isWhole`).
    /// A copy of at most `looseLimit` objects writes them loose, a bigger one into packs (big
    /// blobs the peer keeps loose are streamed or linked loose either way); nothing is synced:
    /// make what the report lists durable before a reference names it.
    /// `progress` is called after each object; returning false abandons the copy (it throws).
    @discardableResult
    /// `refTips`: tips of refs of this store the caller has read already (a hub's mirror): a commit
    /// met that they reach is whole without reading every ref of the store; one they do not reach
    /// is asked of every ref, as without them.
    public func copyMissingObjects(from source: Repository, tips: [Oid], limits: ObjectCopyLimits = ObjectCopyLimits(),
                                   refTips: [Oid]? = nil,
                                   progress: @escaping (ObjectCopyReport) -> Bool = { _ in true }) throws(GitError) -> ObjectCopyReport {
        var copier = try ObjectCopier(from: source, to: self, limits: limits, progress: progress)
        defer { copier.close() }
        copier.knownRefTips = refTips
        try copier.copy(tips: tips)
        return copier.report
    }

    /// Copies these objects, those of them this repository lacks and `source` has, by id (no walk):
    /// what a power cut took from under a commit that refs still name, which no walk from a tip
    /// would copy again (it stops at what it has). Ids are checked as in `copyMissingObjects`.
    @discardableResult
    public func copyObjects(_ ids: [Oid], from source: Repository) throws(GitError) -> ObjectCopyReport {
        var copier = try ObjectCopier(from: source, to: self, limits: ObjectCopyLimits(), progress: { _ in true })
        defer { copier.close() }
        try copier.copyByID(ids)
        return copier.report
    }
}

private struct ObjectCopier: ~Copyable {
    let source: Repository
    let target: Repository
    let sourceOdb: OpaquePointer
    let odb: OpaquePointer
    let limits: ObjectCopyLimits
    let progress: (ObjectCopyReport) -> Bool
    var report = ObjectCopyReport()
    /// The ids in `report.reliedLoose`.
    var reliedSeen = Set<Oid>()
    /// Small objects written loose so far: past `limits.looseLimit` (set there at once for a copy
    /// of more objects), they go into packs: every new file costs an inode, and on ext4 that is
    /// most of the time of a big copy (git's own unpackLimit is 100), and an fsync before a ref moves.
    var loose = 0
    /// Objects waiting in memory for the next pack (opened at the first object that goes into one).
    var batch: PackBatch?
    /// Lookups of objects this store lacks, made cheap once there are many (`has`).
    let misses = Misses()
    /// Some of this store's ref tips, known to the caller (`copyMissingObjects(refTips:)`).
    var knownRefTips: [Oid]?

    /// libgit2 asks the file system once per missing object (`access` of its loose path): half of
    /// a 10k-object copy. Past `listAfter` misses, the loose objects are listed once (a `readdir`
    /// per fan-out directory) and lookups go to the packs only, then to that list.
    final class Misses {
        static let listAfter = 64
        var count = 0
        /// The store's packs alone, and its loose objects (with those this copy wrote loose).
        var packs: OpaquePointer?
        var loose = Set<Oid>()
        deinit { if let packs { git_odb_free(packs) } }
    }

    init(from source: Repository, to target: Repository, limits: ObjectCopyLimits,
         progress: @escaping (ObjectCopyReport) -> Bool) throws(GitError) {
        var s: OpaquePointer?, t: OpaquePointer?
        try check(git_repository_odb(&s, source.handle), "git_repository_odb(\(source.gitDir))")
        let rc = git_repository_odb(&t, target.handle)
        guard rc == 0 else {
            let error = lastError(code: rc, call: "git_repository_odb(\(target.gitDir))")
            git_odb_free(s)
            throw error
        }
        // Packs other handles wrote since this one last looked: seen once here, since the copy's
        // lookups do not re-read the pack directory on a miss.
        _ = git_odb_refresh(t)
        self.source = source
        self.target = target
        self.sourceOdb = s!
        self.odb = t!
        self.limits = limits
        self.progress = progress
    }

    func close() {
        git_odb_free(sourceOdb)
        git_odb_free(odb)
    }

    func has(_ id: Oid) -> Bool {
        var raw = id.raw
        // No re-reading of the pack directory on a miss (most objects of a copy are missing):
        // this database was opened for this copy, and only this copy writes into it.
        let noRefresh = UInt32(GIT_ODB_LOOKUP_NO_REFRESH.rawValue)
        if let packs = misses.packs {
            if misses.loose.contains(id) || git_odb_exists_ext(packs, &raw, noRefresh) == 1 { return true }
            return batch?.has(id) ?? false
        }
        if git_odb_exists_ext(odb, &raw, noRefresh) == 1 { return true }
        if batch?.has(id) == true { return true }
        misses.count += 1
        if misses.count == Misses.listAfter { listLooseObjects() }
        return false
    }

    /// Switches `has` to the packs and a listing of the loose objects (see `Misses`).
    func listLooseObjects() {
        var packs: OpaquePointer?
        var backend: UnsafeMutablePointer<git_odb_backend>?
        guard git_odb_new(&packs) == 0 else { return }
        let objects = target.gitDir.appending("objects")
        guard objects.withPlatformString({ git_odb_backend_pack(&backend, $0) }) == 0, let backend else {
            git_odb_free(packs)
            return
        }
        guard git_odb_add_backend(packs, backend, 1) == 0 else {
            backend.pointee.free(backend)  // not added: still ours
            git_odb_free(packs)
            return
        }
        misses.loose = target.looseObjectIds()
        misses.packs = packs
    }

    /// Packs adopted since the lookups' databases last looked are seen from now on.
    func refreshLookups() {
        _ = git_odb_refresh(odb)
        if let packs = misses.packs { _ = git_odb_refresh(packs) }
    }

    /// Writes a small object: loose in a small copy, else into the batch for the next pack.
    mutating func write(_ data: UnsafeRawPointer?, _ size: Int, _ type: git_object_t, _ id: Oid) throws(GitError) {
        if loose < limits.looseLimit {
            loose += 1
            var out = git_oid()
            let incompressible = Incompressible.looks(UnsafeRawBufferPointer(start: data, count: size))
            try check(target.withLooseOdb(storing: incompressible) { git_odb_write(&out, $0, data, size, type) }, "git_odb_write(\(id))")
            try verify(Oid(out), id)
            report.looseIds.append(id)
            if misses.packs != nil { misses.loose.insert(id) }
        } else {
            let batch = try openBatch()
            try verify(try batch.write(UnsafeRawBufferPointer(start: data, count: size), type: type), id)
            report.packs = batch.packs  // it writes a pack each time it holds `limits.batchBytes`
        }
    }

    mutating func openBatch() throws(GitError) -> PackBatch {
        if let batch { return batch }
        let made = try PackBatch(gitDir: target.gitDir, flushBytes: limits.batchBytes)
        // Writing a big batch takes a while: each tick of the pack builder proves progress.
        let progress = self.progress, snapshot = { [report] in report }
        made.onProgress = { progress(snapshot()) }
        batch = made
        return made
    }

    /// Writes the waiting objects as one pack of exactly those objects.
    mutating func flush() throws(GitError) {
        guard let batch else { return }
        try batch.flush()
        report.packs = batch.packs
    }

    /// Whether the commit `id`, present here, has its whole history here: one of this store's
    /// refs reaches it. Every ref moves only after what it names is flushed, so what a ref reaches
    /// is whole; a commit no ref reaches may be the durable half of a copy a power cut stopped
    /// (seed 8000, cut 166: a peer's commit kept, its parent lost; the walk stopped at it, and every
    /// merge after failed on the missing parent).
    /// The commit met is almost always a ref's tip, or a few commits under one (a peer that built
    /// on what it fetched from here): those cost a set lookup or a short walk; only a commit found
    /// nowhere near a ref asks the whole history.
    func isWhole(_ id: Oid, tips: inout [Oid]?) -> Bool {
        if tips == nil, let known = knownRefTips, Self.reaches(known, id, in: target) { return true }
        if tips == nil { tips = ((try? target.references(matching: "refs/*")) ?? []).map(\.target) }
        return Self.reaches(tips!, id, in: target)
    }

    /// Whether these ref tips reach `id`: a set lookup or a short walk for a commit near them.
    static func reaches(_ refs: [Oid], _ id: Oid, in target: Repository) -> Bool {
        if refs.contains(id) { return true }
        var frontier = refs, seen = Set(refs), steps = 0
        while !frontier.isEmpty, steps < Self.nearTips {
            var next: [Oid] = []
            for commit in frontier {
                steps += 1
                guard let parents = try? target.commit(commit).parents else { continue }
                for parent in parents where seen.insert(parent).inserted {
                    if parent == id { return true }
                    next.append(parent)
                }
            }
            frontier = next
        }
        return (try? target.isReachable(id, fromAny: refs)) ?? false
    }

    /// Commits under the refs looked at before the whole history is asked.
    static let nearTips = 256

    mutating func copy(tips: [Oid]) throws(GitError) {
        // Commits this repository lacks, parents before children (iterative post-order: a history
        // of many thousands of commits must not exhaust the thread's stack). A commit here that no
        // ref reaches is walked through like a missing one (`isWhole`), its trees looked at whole.
        var order: [Oid] = []
        var seen = Set<Oid>()
        var unreached = Set<Oid>()
        var refTips: [Oid]?
        var stack: [(Oid, expanded: Bool)] = tips.map { ($0, false) }
        while let (id, expanded) = stack.popLast() {
            if expanded { order.append(id); continue }
            guard !seen.contains(id) else { continue }
            if has(id) {
                guard !isWhole(id, tips: &refTips) else { continue }
                unreached.insert(id)
            }
            seen.insert(id)
            stack.append((id, true))
            for parent in try source.commit(id).parents where !seen.contains(parent) {
                stack.append((parent, false))
            }
        }
        // A commit whose tree is planned whole (a root commit: a first sync, a new history; a
        // commit no ref reaches) has every tree of it read once: then no tree is cached while the
        // plan is made (`withoutCachingTrees`, process-wide, so only for such copies: the merges
        // of a busy hub keep their cache while ordinary fetches plan; every other commit's parent
        // is here or comes with the copy, planned first). libgit2 would keep every tree it parses
        // (up to `[store] cache_mb`, 2-3 times that in memory): a 100k-file first sync's plan
        // filled the cache with 1,000 trees nothing reads again.
        let wholeTrees = order.contains { id in
            unreached.contains(id) || (try? source.commit(id).parents.isEmpty) != false
        }
        var missing: [(id: Oid, type: git_object_t)] = []
        try Libgit2.withoutCachingTrees(if: wholeTrees) { () throws(GitError) in
            // The trees are read through a handle of their own, closed once the plan is made.
            let planner = try Repository.openForReading(gitDir: source.gitDir)
            var planned = Set<Oid>()
            for id in order {
                let commit = try source.commit(id)
                // A first parent found here is accounted for whole: reached by a ref (flushed before
                // that ref moved), or planned whole just before (parents come first). What this
                // tree shares with its tree by path is not looked at again. A parent this copy
                // brings gives no base: its trees are planned anyway, and the base's own tree
                // reads cost a first sync's watch 9-10 MB more at its peak (64 against 54-55 MB).
                let base = commit.parents.first.flatMap { has($0) ? try? source.commit($0).tree : nil }
                try planTree(commit.tree, reading: planner, into: &missing, planned: &planned,
                             whole: unreached.contains(id), base: base)
                if !unreached.contains(id) { missing.append((id, GIT_OBJECT_COMMIT)) }
            }
        }  // what is planned is in `missing`: its table goes before the packs are read
        if missing.count >= limits.wholePacksFrom || blobBytes(of: missing, atLeast: limits.wholePackBytes) {
            // The list made at its size (grown by doubling, it held 3 MB for 2 at a 100k-file
            // first sync's peak) and sorted where it is.
            var ids: [Oid] = []
            ids.reserveCapacity(missing.count)
            for (id, type) in missing where type != GIT_OBJECT_COMMIT { ids.append(id) }
            let wanted = SortedOids(sorting: consume ids)
            let taken = try takeWholePacks(wanted: wanted)
            if taken.contains(true) {
                missing.removeAll { $0.type != GIT_OBJECT_COMMIT && wanted.position(of: $0.id).map { taken[$0] } == true }
            }
        }
        // A copy of more objects than a small one writes loose goes into packs from its first
        // object: loose files would cost an fsync each (and one for each new fan-out directory)
        // before a ref may name them, a pack costs two.
        if missing.count > limits.looseLimit { loose = limits.looseLimit }
        for (id, type) in missing where !has(id) {
            if type == GIT_OBJECT_BLOB { try copyBlob(id) } else { try copyWhole(id, expecting: type) }
        }
        try flush()
    }

    /// The objects among `ids` this store lacks and the source has, each as its type says.
    mutating func copyByID(_ ids: [Oid]) throws(GitError) {
        for id in ids where !has(id) {
            var raw = id.raw
            var size = 0
            var type = GIT_OBJECT_INVALID
            guard git_odb_read_header(&size, &type, sourceOdb, &raw) == 0 else { continue }  // the source lacks it too
            if type == GIT_OBJECT_BLOB { try copyBlob(id) } else { try copyWhole(id, expecting: type) }
        }
        try flush()
    }

    /// Whether the blobs among `missing` hold at least `limit` bytes (their headers, read until
    /// the sum gets there).
    func blobBytes(of missing: [(id: Oid, type: git_object_t)], atLeast limit: Int) -> Bool {
        var sum = 0
        for (id, type) in missing where type == GIT_OBJECT_BLOB {
            sum += sourceSize(id) ?? 0  // (an unreadable one: the copy reports it)
            if sum >= limit { return true }
        }
        return false
    }

    /// An object's size in the peer's store, from its header; nil when it cannot be read.
    func sourceSize(_ id: Oid) -> Int? {
        var size = 0
        var kind = GIT_OBJECT_INVALID
        var raw = id.raw
        return git_odb_read_header(&size, &kind, sourceOdb, &raw) == 0 ? size : nil
    }

    /// A present object a new tree names: listed for the flush when it is a young loose file (then
    /// true: a young tree's own entries may be young too, and are looked at in turn).
    /// True only the first time an object is noted (each is listed, and looked into, once).
    @discardableResult
    mutating func noteRelied(_ id: Oid) -> Bool {
        guard !reliedSeen.contains(id), target.isYoungLoose(id) else { return false }
        report.reliedLoose.append(id)
        reliedSeen.insert(id)
        return true
    }

    /// The objects of a tree this repository lacks, in the order they may be written: everything
    /// a tree names before the tree (subtrees first). `whole`: trees found here are looked into
    /// too (the tree of a commit no ref reaches may itself lack what it names).
    /// A tree found here that is a young loose file (`noteRelied`) is looked into as well: another
    /// path of this store (a merge, a commit) may have just written it and what it names, none of
    /// it flushed yet, and a ref this copy moves would name them all (seed 9503, cut 65: a blob
    /// under such a tree was lost while the ref stayed).
    /// `base`: the tree of a commit here accounted for whole before this one (its first parent's): an
    /// entry with the same id at the same path in it is skipped, subtree and all. A one-file
    /// change then costs the directories on its path, not a look at each of the thousand files of
    /// the young trees beside it (a two-minute-old first sync made every fetch stat them all).
    mutating func planTree(_ root: Oid, reading planner: Repository, into missing: inout [(id: Oid, type: git_object_t)],
                           planned: inout Set<Oid>, whole: Bool = false, base: Oid? = nil) throws(GitError) {
        guard !planned.contains(root), whole || root != base else { return }
        // Trees found here and looked into: never copied, their entries checked.
        // A young tree looked into is not `planned`: a later commit copied `whole` (its history
        // not reached by a ref) must still look into its older subtrees.
        var present = Set<Oid>()
        if has(root) {
            guard noteRelied(root) || whole else { return }
            present.insert(root)
        }
        if whole || !present.contains(root) { planned.insert(root) }
        var stack: [(Oid, expanded: Bool, base: Oid?)] = [(root, false, whole ? nil : base)]
        while let (id, expanded, base) = stack.popLast() {
            if expanded {
                if !present.contains(id) { missing.append((id, GIT_OBJECT_TREE)) }
                continue
            }
            stack.append((id, true, nil))
            var tree: OpaquePointer?
            var raw = id.raw
            try check(git_tree_lookup(&tree, planner.handle, &raw), "git_tree_lookup(\(id)) in \(source.gitDir)")
            defer { git_tree_free(tree) }
            // A base the peer cannot read (a gap a cut left in its store) is no base: the old checks.
            var baseTree: OpaquePointer?
            if var raw = base?.raw, git_tree_lookup(&baseTree, planner.handle, &raw) != 0 { baseTree = nil }
            defer { git_tree_free(baseTree) }
            for i in 0..<git_tree_entrycount(tree) {
                guard let entry = git_tree_entry_byindex(tree, i) else { continue }
                let child = Oid(git_tree_entry_id(entry))
                let type = git_tree_entry_type(entry)
                guard type == GIT_OBJECT_TREE || type == GIT_OBJECT_BLOB else { continue }  // a submodule's commit is not ours
                // The same object at the same path in the base: accounted for with it.
                let inBase = baseTree.flatMap { git_tree_entry_byname($0, git_tree_entry_name(entry)) }
                if let inBase, Oid(git_tree_entry_id(inBase)) == child { continue }
                let childBase = type == GIT_OBJECT_TREE && inBase.map(git_tree_entry_type) == GIT_OBJECT_TREE
                    ? inBase.map { Oid(git_tree_entry_id($0)) } : nil
                guard !planned.contains(child) else { continue }
                if type == GIT_OBJECT_TREE, whole {
                    planned.insert(child)
                    if has(child) {
                        noteRelied(child)
                        present.insert(child)
                    }
                    stack.append((child, false, nil))
                    continue
                }
                guard !has(child) else {
                    if !present.contains(child), noteRelied(child), type == GIT_OBJECT_TREE {
                        present.insert(child)
                        stack.append((child, false, childBase))
                    }
                    continue
                }
                planned.insert(child)
                if type == GIT_OBJECT_TREE { stack.append((child, false, childBase)) } else { missing.append((child, type)) }
            }
        }
    }

    /// Takes whole the peer's packs that are mostly made of objects this copy needs (a big batch of
    /// new files sits in a few packs of exactly those blobs). Each is adopted with its index (or,
    /// holding a big object, goes through the indexer): every id is computed, and a pack that
    /// names objects neither in it nor here is refused: packs that
    /// need one another are tried again once others are in; one that still fails is left to the
    /// object-by-object copy (which then reports any damage). Returns which of the wanted ids were
    /// taken, by their position in `wanted`.
    mutating func takeWholePacks(wanted: SortedOids) throws(GitError) -> [Bool] {
        var candidates: [(transfer: PackTransfer, needed: Int, packs: Int)] = []
        for transfer in try PackTransfer.packs(of: source.gitDir) {
            let needed = transfer.ids.reduce(0) { $0 + (wanted.contains($1) ? 1 : 0) }
            // Mostly new here: whatever of it this store already has is stored twice until the
            // next roll-up of packs, which is cheaper than compressing the rest again.
            guard needed > 0, needed * 2 >= transfer.ids.count else { continue }
            if needed >= limits.wholePacksFrom || (transfer.bytes >= limits.wholePackBytes && mostlyWanted(transfer, wanted)) {
                candidates.append((transfer, needed, 1))
            }
        }
        let small = candidates.count { $0.transfer.bytes <= Self.combineBytes }
        let packDir = target.gitDir.appending("objects").appending("pack")
        let combining = small >= Self.combineFrom ? try? PackTransfer.temporaryFolder(in: packDir, prefix: "tmp_pack_combine_") : nil
        defer { if let combining { PackTransfer.removeFolder(combining) } }
        if let combining { candidates = combineSmall(candidates, in: combining) }
        var taken = [Bool](repeating: false, count: wanted.count)
        let progress = self.progress, snapshot = { [report] in report }
        var progressed = true
        while progressed, !candidates.isEmpty {
            progressed = false
            var rest: [(transfer: PackTransfer, needed: Int, packs: Int)] = []
            for candidate in candidates {
                do {
                    let bytes = try candidate.transfer.adopt(into: target.gitDir, has: { has($0) }) { progress(snapshot()) }
                        ?? candidate.transfer.index(into: target.gitDir) { progress(snapshot()) }
                    refreshLookups()  // the next pack's checks see this one
                    // What is here now, not what the listing said (the peer may have rolled its packs up).
                    for id in candidate.transfer.ids {
                        if let at = wanted.position(of: id), has(id) { taken[at] = true }
                    }
                    report.objects += candidate.needed
                    report.bytes += bytes
                    report.wholePacks += candidate.packs
                    progressed = true
                } catch {
                    guard progress(report) else { throw Self.cancelled(source) }
                    rest.append(candidate)
                }
            }
            candidates = rest
        }
        return taken
    }

    /// Packs a copy takes that many of, each this small (a bulk copy's, committed a slice at a
    /// time), are combined first, `combineObjects` objects at most into each.
    static let combineFrom = 8
    static let combineBytes = 4 << 20
    static let combineObjects = 32_768

    /// Many small packs of the peer's, combined into a few in `folder` (`PackRollUp`: the bytes
    /// copied as stored, each object's CRC-32 checked) before they are adopted, which checks the
    /// combined ones as it checks any pack. Read from 80 packs, a 100k-file first sync kept every
    /// pack's index mapped (6 MB more at its peak), and the roll-up after it held the list of
    /// all their objects beside the store's index. Packs that cannot be combined (damaged) are
    /// left as they were given, to be adopted, or refused, one by one.
    func combineSmall(_ candidates: [(transfer: PackTransfer, needed: Int, packs: Int)], in folder: FilePath)
        -> [(transfer: PackTransfer, needed: Int, packs: Int)] {
        let small = candidates.filter { $0.transfer.bytes <= Self.combineBytes }
        var result = candidates.filter { $0.transfer.bytes > Self.combineBytes }
        var group: [(transfer: PackTransfer, needed: Int, packs: Int)] = []
        var objects = 0
        func combine() {
            defer { group = []; objects = 0 }
            guard group.count >= 2 else { return result += group }
            let indexes = group.map { candidate -> FilePath in
                var index = candidate.transfer.pack
                index.extension = "idx"
                return index
            }
            guard let name = try? PackRollUp.combine(indexes, into: folder, deflating: false) else { return result += group }
            let pack = folder.appending("pack-\(name).pack")
            var st = stat()
            let bytes = pack.withPlatformString { lstat($0, &st) } == 0 ? Int(st.st_size) : 0
            var ids: [Oid] = []  // at its size (a flatMap grows it by doubling)
            ids.reserveCapacity(objects)
            for candidate in group { ids += candidate.transfer.ids }
            result.append((PackTransfer(pack: pack, ids: ids, bytes: bytes),
                           group.reduce(0) { $0 + $1.needed }, group.count))
        }
        for candidate in small {
            if !group.isEmpty, objects + candidate.transfer.ids.count > Self.combineObjects { combine() }
            group.append(candidate)
            objects += candidate.transfer.ids.count
        }
        combine()
        return result
    }

    /// Whether at least half of a pack of a few big objects (photos) is wanted, in bytes: a pack of
    /// ten photos of which this store has five would store those five twice (packs this big are
    /// never rolled up). Packs of more than 1,024 objects are judged by count alone.
    func mostlyWanted(_ transfer: PackTransfer, _ wanted: SortedOids) -> Bool {
        guard transfer.ids.count <= 1024 else { return true }
        var all = 0, needed = 0
        for id in transfer.ids {
            guard let size = sourceSize(id) else { return false }  // (the copy reports it)
            all += size
            if wanted.contains(id) { needed += size }
        }
        return needed * 2 >= all
    }

    mutating func copyBlob(_ id: Oid) throws(GitError) {
        var size = 0
        var type = GIT_OBJECT_INVALID
        var raw = id.raw
        try check(git_odb_read_header(&size, &type, sourceOdb, &raw), "git_odb_read_header(\(id)) in \(source.gitDir)")
        if size > limits.streamAbove, try copyStreaming(id, size: size) { return }
        try copyWhole(id, expecting: GIT_OBJECT_BLOB)
    }

    /// Read whole, written whole; libgit2 verifies the id on the read and we compare on the write.
    mutating func copyWhole(_ id: Oid, expecting type: git_object_t) throws(GitError) {
        var object: OpaquePointer?
        var raw = id.raw
        try check(git_odb_read(&object, sourceOdb, &raw), "git_odb_read(\(id)) in \(source.gitDir)")
        defer { git_odb_object_free(object) }
        guard git_odb_object_type(object) == type else {
            throw GitError.damagedObject("object \(id) is not the \(Self.name(type)) its parent names", call: "copy from \(source.gitDir)")
        }
        let size = git_odb_object_size(object)
        try write(git_odb_object_data(object), size, type, id)
        try count(bytes: size)
    }

    /// Copies a blob through a fixed buffer. False when the peer keeps it packed (libgit2 1.5 reads
    /// packed objects only whole); the caller then reads it whole.
    mutating func copyStreaming(_ id: Oid, size: Int) throws(GitError) -> Bool {
        if try linkLoose(id, size: size) { return true }
        // Opened at the first piece, which says whether the blob is worth compressing.
        var writer: UnsafeMutablePointer<git_odb_stream>?
        defer { if let writer { git_odb_stream_free(writer) } }
        var done = 0
        let found = try streamLoose(LooseObject.path(objects: source.gitDir.appending("objects"), id: id), of: id) { chunk in
            if writer == nil {
                try check(target.withLooseOdb(storing: Incompressible.looks(UnsafeRawBufferPointer(chunk))) {
                    git_odb_open_wstream(&writer, $0, git_object_size_t(size), GIT_OBJECT_BLOB)
                }, "git_odb_open_wstream(\(id))")
            }
            try check(chunk.withMemoryRebound(to: CChar.self) { git_odb_stream_write(writer, $0.baseAddress, $0.count) },
                      "git_odb_stream_write(\(id))")
            done += chunk.count
        }
        guard let found else { return false }
        try checkBlob(found, id, size: size)
        var out = git_oid()
        try check(git_odb_stream_finalize_write(&out, writer), "git_odb_stream_finalize_write(\(id)) after \(done) bytes")
        try verify(Oid(out), id)
        report.looseIds.append(id)
        if misses.packs != nil { misses.loose.insert(id) }
        report.streamed += 1
        try count(bytes: done)
        return true
    }

    /// A big blob the peer keeps loose (a photo it committed), when that file is on this file
    /// system, this user's and read-only: linked into this store instead of written again, so the
    /// receiving side writes its bytes once (into the data directory), not twice. The link is made
    /// first, under a temporary name, and its bytes are inflated and hashed through it: being this
    /// user's and read-only, nobody else can change the file afterwards (as for packs,
    /// `PackTransfer.linkOrCopy`). A file that does not hold the blob is unlinked and refused.
    /// False, with nothing done, when it cannot be linked (packed, another file system or owner).
    mutating func linkLoose(_ id: Oid, size: Int) throws(GitError) -> Bool {
        let from = LooseObject.path(objects: source.gitDir.appending("objects"), id: id)
        let final = LooseObject.path(objects: target.gitDir.appending("objects"), id: id)
        _ = final.removingLastComponent().withPlatformString { mkdir($0, 0o777) }  // (there already, mostly)
        // In `objects/` itself, where the start after a kill looks for `tmp_obj_*`.
        let temp = target.gitDir.appending("objects").appending("tmp_obj_link_\(getpid())_\(UInt64.random(in: 0...UInt64.max))")
        guard from.withPlatformString({ a in temp.withPlatformString { b in link(a, b) } }) == 0 else { return false }
        var placed = false
        defer { if !placed { _ = temp.withPlatformString { unlink($0) } } }
        var st = stat()
        guard temp.withPlatformString({ lstat($0, &st) }) == 0, (st.st_mode & S_IFMT) == S_IFREG,
              st.st_uid == geteuid(), st.st_mode & 0o222 == 0 else { return false }
        let sha = try StreamSHA1()
        Array("blob \(size)\0".utf8).withUnsafeBytes { sha.update($0) }
        var done = 0
        // (No file now, after the link: gone meanwhile, which is damage like any other.)
        let found = try streamLoose(temp, of: id) { chunk in
            sha.update(chunk)
            done += chunk.count
        } ?? (type: "missing object", size: 0)
        try checkBlob(found, id, size: size)
        var computed = git_oid()
        let digest = try sha.finish()
        withUnsafeMutableBytes(of: &computed.id) { $0.copyBytes(from: digest) }
        try verify(Oid(computed), id)
        guard temp.withPlatformString({ a in final.withPlatformString { b in rename(a, b) } }) == 0 else { return false }
        placed = true
        report.looseIds.append(id)
        if misses.packs != nil { misses.loose.insert(id) }
        report.linked += 1
        try count(bytes: done)
        return true
    }

    /// Reads the loose object file at `file` (the peer's, or a link to it) in pieces of 1 MiB for
    /// `body`, telling progress after each; its type and size, nil when there is no such file. A
    /// file that cannot be read or inflated is an error naming the object and the peer.
    func streamLoose(_ file: FilePath, of id: Oid, _ body: (UnsafeRawBufferPointer) throws -> Void) throws(GitError) -> (type: String, size: Int)? {
        do {
            return try LooseObject.stream(file: file, chunk: 1 << 20) { chunk in
                try body(chunk)
                guard progress(report) else { throw Self.cancelled(source) }
            }
        } catch let error as GitError {
            throw error
        } catch {
            // Reading the peer's loose object failed (the file system, or zlib on a damaged file).
            throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue), message: "\(error)",
                           call: "copy of \(id) from \(source.gitDir)")
        }
    }

    /// What a tree names as a blob of `size` bytes must be one.
    func checkBlob(_ found: (type: String, size: Int), _ id: Oid, size: Int) throws(GitError) {
        guard found.type == "blob", found.size == size else {
            throw GitError.damagedObject("object \(id) in \(source.gitDir) is a \(found.type) of \(found.size) bytes, not the blob its tree names",
                                         call: "copy from \(source.gitDir)")
        }
    }

    func verify(_ got: Oid, _ want: Oid) throws(GitError) {
        guard got == want else {
            throw GitError.damagedObject("object \(want) in \(source.gitDir) holds the content of \(got): the peer's store is damaged",
                                         call: "copy from \(source.gitDir)")
        }
    }

    mutating func count(bytes: Int) throws(GitError) {
        report.objects += 1
        report.bytes += bytes
        guard progress(report) else { throw Self.cancelled(source) }
    }

    static func cancelled(_ source: Repository) -> GitError {
        GitError.cancelled("copy from \(source.gitDir) cancelled", call: "copy")
    }

    static func name(_ type: git_object_t) -> String {
        switch type {
        case GIT_OBJECT_COMMIT: "commit"
        case GIT_OBJECT_TREE: "tree"
        default: "blob"
        }
    }
}

