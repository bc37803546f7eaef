import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// What integrating a peer's `main` did.
public struct SyncOutcome: Sendable {
    public enum Action: Sendable, Equatable {
        case upToDate, fastForward, merged, adoptedEqualTree
    }
    public var action: Action
    public var head: ObjectID?
    /// Conflicts this merge found or joined (each recorded, the winner's bytes in the data directory).
    public var newConflicts: [ConflictRecord] = []
    /// Why automatic strategies declined, for the log.
    public var notes: [String] = []
    /// What writing the result into the data directory did, path by path.
    public var applied = ApplyReport()
    /// Records open now that were not open in this device's book before (found here or by a peer).
    public var opened: [ConflictRecord] = []
    /// Records that were open here and are resolved now (here or by a peer).
    public var resolved: [ConflictRecord] = []
    /// What the peer's tracking refs named when this merge read them (its `main`, its records):
    /// what is now merged, whatever they name by the time the caller looks.
    public var peerMain: ObjectID?
    public var peerRecords: ObjectID?

    init(action: Action, head: Oid?, newConflicts: [ConflictRecord] = [], notes: [String] = [], applied: ApplyReport = ApplyReport()) {
        self.action = action
        self.head = head?.id
        self.newConflicts = newConflicts
        self.notes = notes
        self.applied = applied
    }
}

/// A peer's history the agent refuses to apply, naming the paths and why.
public struct SyncRefusal: Error, Sendable, CustomStringConvertible {
    public let peer: String
    public let reasons: [String]
    public var description: String {
        "refused \(peer)'s history: " + reasons.joined(separator: "; ")
            + ". Nothing was written; fix or remove those paths on \(peer)."
    }
}

extension Store {
    /// What `integrate(peer:)` returns when it has nothing to do (`main` holds the peer's and the
    /// records are the same), else nil. Reads refs and the commit graph only: nothing of the data
    /// directory, so the caller need not commit local changes first (with 100 devices through a
    /// hub, a round asked the watcher's thread for them once per device, to merge nothing).
    public func upToDateWith(peer: String) throws -> SyncOutcome? {
        let theirBookTip = try repo.resolveReference(ConflictBook.peerRef(peer))
        let theirMain = try repo.resolveReference(Self.trackingRef(peer))
        guard var same = try alreadyHeld(peer: peer, theirs: theirMain, theirBookTip: theirBookTip) else { return nil }
        (same.peerMain, same.peerRecords) = (theirMain?.id, theirBookTip?.id)
        return same
    }

    /// Merges the fetched `main` of `peer` into ours, writes the result into the data directory path
    /// by path, and merges the peer's conflict records into ours. Local changes must be committed
    /// first; a file that changed on disk since is left as it is (see `ApplyReport.localChanges`).
    public func integrate(peer: String, now: Date = Date()) throws -> SyncOutcome {
        if let same = try upToDateWith(peer: peer) { return same }
        let theirBookTip = try repo.resolveReference(ConflictBook.peerRef(peer))
        let theirMain = try repo.resolveReference(Self.trackingRef(peer))
        let ourBook = try ConflictBook.load(repo)
        var book = ConflictBook.union(ourBook, try ConflictBook.load(repo, ref: ConflictBook.peerRef(peer)))
        var outcome = try integrateMain(peer: peer, theirs: theirMain, book: &book, now: Int64(now.timeIntervalSince1970))
        (outcome.peerMain, outcome.peerRecords) = (theirMain?.id, theirBookTip?.id)
        try ConflictBook.save(repo, book, device: device, message: "\(device): conflict records from \(peer)",
                              adopt: theirBookTip.map { [$0] } ?? [])
        let madeHere = Set(outcome.newConflicts.map(\.id))
        for (id, record) in book.sorted(by: { $0.key < $1.key }) {
            let wasOpen = ourBook[id]?.status == .open
            if record.status == .open, !wasOpen { outcome.opened.append(record) }
            // Settled here by a strategy, or elsewhere while open here.
            if record.status == .resolved, wasOpen || (madeHere.contains(id) && ourBook[id]?.status != .resolved) {
                outcome.resolved.append(record)
            }
        }
        return outcome
    }

    /// Nothing to do: `main` already holds the peer's, and its conflict records are ours (the same
    /// tree). Checked before any book is read, so a device among many idle ones costs two ref
    /// reads and an ancestry check per peer, not a load and a rewrite of every record.
    private func alreadyHeld(peer: String, theirs: Oid?, theirBookTip: Oid?) throws -> SyncOutcome? {
        let ours = try head()
        if let theirs {
            guard let ours, try covers(ours, theirs) else { return nil }
        }
        if let theirBookTip {
            guard let ourBookTip = try repo.resolveReference(ConflictBook.ref) else { return nil }
            guard try ourBookTip == theirBookTip || repo.commit(ourBookTip).tree == repo.commit(theirBookTip).tree else { return nil }
        }
        return SyncOutcome(action: .upToDate, head: ours)
    }

    private func integrateMain(peer: String, theirs: Oid?, book: inout [String: ConflictRecord], now: Int64) throws -> SyncOutcome {
        let ours = try head()
        // A fold made on this very `main` (nothing committed since): its tree is ours with whole
        // entries of the folded tips added, and its parents hold every real tip behind ours, so
        // taking it is a fast-forward of content. (A three-way merge of it reached the same join
        // through libgit2's merge bases: with many devices, every common tip a base, merged
        // pairwise into a virtual one.)
        let foldOnOurs = lastFold.map { $0.base == ours && $0.join == theirs } ?? false
        let step = try MergeStep.decide(
            hasOurs: ours != nil, hasTheirs: theirs != nil,
            covered: { try covers(ours!, theirs!) },
            fastForward: { try foldOnOurs || repo.isDescendant(theirs!, of: ours!) },
            sameTree: { try repo.commit(ours!).tree == repo.commit(theirs!).tree })
        switch step {
        case .upToDate:
            return SyncOutcome(action: .upToDate, head: ours)
        case .fastForward:
            return try fastForward(peer: peer, ours: ours, theirs: theirs!, book: &book, now: now)
        case .join:
            return try join(peer: peer, ours: ours!, theirs: theirs!)
        case .merge:
            return try merge(peer: peer, ours: ours!, theirs: theirs!, book: &book, now: now)
        }
    }

    /// `main` moves to the peer's commit, whose history holds ours; what changed is written into
    /// the data directory path by path.
    private func fastForward(peer: String, ours: Oid?, theirs: Oid, book: inout [String: ConflictRecord], now: Int64) throws -> SyncOutcome {
        let theirTree = try repo.commit(theirs).tree
        let ourTree = try ours.map { id throws in try repo.commit(id).tree }
        var applied: ApplyReport
        if ourTree == nil {
            // A first sync: every path is new. The peer's tree is walked twice (checked whole,
            // then written in chunks) instead of its list of paths being held.
            // No tree it reads is cached (`withoutCachingTrees`): each is read once a walk (the
            // check's lookups included: `checkSafe` keeps the trees it looks into open).
            var total = 0
            applied = try Libgit2.withoutCachingTrees {
                try checkSafe(tree: theirTree, peer: peer) { look in
                    try repo.walkDiff(nil, theirTree) { change in
                        total += 1
                        try look(change)
                    }
                }
                beginApply(target: theirs, expected: ours, peer: peer)
                return try applyWhole(theirTree, total: total)
            }
        } else {
            let changes = try repo.diffTrees(ourTree, theirTree)
            try checkSafe(changes, tree: theirTree, peer: peer)
            beginApply(target: theirs, expected: ours, peer: peer)
            applied = try apply(changes)
        }
        defer { endApply() }
        let heldBack = splitHeldBack(&applied)
        guard !applied.localChanges.isEmpty else {
            // What a fast-forward reaches came with a fetch or a copy, or is a fold (`foldJoins`),
            // flushed then: nothing new to flush.
            try moveRef(Store.mainRef, to: theirs, expected: ours, message: "syncagent: fast-forward to \(peer)", written: [])
            applied.localChanges = heldBack
            return SyncOutcome(action: .fastForward, head: theirs, applied: applied)
        }
        // Files changed on disk meanwhile: they go on top of the peer's commit, each one a
        // conflict with the peer's version of it.
        var records: [ConflictRecord] = []
        let head = try commitKeptLocal(&applied, target: theirTree, baseTree: ourTree, parents: [theirs], expected: ours,
                                       peer: peer, theirTip: theirs, book: &book, records: &records, now: now)
        applied.localChanges += heldBack
        return SyncOutcome(action: .merged, head: head, newConflicts: records, applied: applied)
    }

    /// Makes a fold's join and the trees it holds that `ourTree` does not durable, before any ref
    /// names them (whichever way the fold is then merged): an fsync each for those that are loose
    /// files (the others are in packs, made durable when written or copied), the whole file
    /// system when that cannot be done. The join itself must be a loose file (a join found in a
    /// pack came from elsewhere: the file system is flushed then). Its blobs are the folded tips',
    /// copied and flushed before any ref named them.
    private func flushFold(_ join: Oid, tree: Oid, over ourTree: Oid) {
        guard (try? FileStat.of(repo.looseObjectPath(join))) != nil,
              let trees = try? repo.treesDiffering(ourTree, tree), trees.count < Repository.writeLogLimit,
              Durability.flushExistingImmutable((trees + [join]).map(repo.looseObjectPath),
                                                andDirectories: [gitDir.appending("objects")]) else {
            return Durability.flushFileSystem(containing: gitDir)
        }
    }

    /// The same files, histories apart: one join commit.
    private func join(peer: String, ours: Oid, theirs: Oid) throws -> SyncOutcome {
        let ourTree = try repo.commit(ours).tree
        // Same content, histories apart (e.g. both merged each other): join them. The join's
        // parents are the set of real (non-join) tips behind both sides, so the join of joins is
        // the join of their tips: every device that has seen the same tips makes the very same
        // commit (sorted parents, fixed signature, the latest time), the set only grows, and the
        // devices converge without dropping any device's commit from `main`.
        let tips = try joinTips([ours, theirs])
        guard tips.count > 1 else {
            guard let only = tips.first, only != ours else { return SyncOutcome(action: .upToDate, head: ours) }
            try moveRef(Store.mainRef, to: only, expected: ours, message: "syncagent: adopt \(peer)'s equal history")
            return SyncOutcome(action: .adoptedEqualTree, head: only)
        }
        var join = try makeJoin(tips: tips, tree: ourTree)
        // A join of the very same tips and files made with other words (an agent of another
        // version): the smaller id, on every device.
        for other in [ours, theirs] where other < join {
            let info = try repo.commit(other)
            if info.author.email == Self.joinEmail, info.parents == tips, info.tree == ourTree { join = other }
        }
        guard join != ours else { return SyncOutcome(action: .upToDate, head: ours) }
        try moveRef(Store.mainRef, to: join, expected: ours, message: "syncagent: join \(peer)'s equal history")
        return SyncOutcome(action: .adoptedEqualTree, head: join)
    }

    /// Both sides changed: libgit2's merge, each conflicted path decided by the policy (the pure
    /// plan), the records saved, then the result written into the data directory path by path.
    private func merge(peer: String, ours: Oid, theirs: Oid, book: inout [String: ConflictRecord], now: Int64) throws -> SyncOutcome {
        let ourTree = try repo.commit(ours).tree
        let theirTree = try repo.commit(theirs).tree
        // What the peer changed must be safe before libgit2 even merges it (it refuses some names
        // with a less helpful message).
        try checkSafe(try repo.diffTrees(ourTree, theirTree), tree: theirTree, peer: peer)
        let merge = try repo.mergeCommits(ours: ours, theirs: theirs)
        let policy = ConflictPolicy(device: device, rules: rules, resolvers: resolvers)
        // Read what each conflicted path's sides are, then decide them all (`MergePlan`, pure),
        // then carry the plan out in libgit2's merge index.
        let conflicts = merge.conflicts
        var inputs: [MergePlan.Input] = []
        for conflict in conflicts {
            let ourSide = try side(of: conflict.path, tip: ours, tree: ourTree)
            let theirSide = try side(of: conflict.path, tip: theirs, tree: theirTree)
            let fromJoin = try ourSide.device == theirSide.device && repo.commit(ourSide.commit).author.email == Self.joinEmail
            inputs.append(MergePlan.Input(path: conflict.path, base: conflict.ancestor, ours: ourSide, theirs: theirSide, oursFromJoin: fromJoin))
        }
        let planned = MergePlan.decide(inputs, book: book, policy: policy, now: now, content: blobContent,
                                       complete: { plan in completeExternal(plan, policy: policy, now: now) })
        try carryOut(planned, in: merge)
        // libgit2 1.5 can drop a file one side made where the other side made (or filled) a
        // directory, with no conflict entry (seen when the base held the directory empty): every
        // version either side made must survive, so such a path becomes the type-changed conflict
        // it is (the directory keeps the path, the file goes beside it, one record). Looked for in
        // the merge index once the conflicts are settled.
        let conflicted = Set(conflicts.map(\.path))
        var lost: [MergePlan.Input] = []
        for path in try filesLostToDirectories(merge, ours: ours, theirs: theirs, ourTree: ourTree, theirTree: theirTree)
        where !conflicted.contains(path) {
            lost.append(MergePlan.Input(path: path, base: nil, ours: try side(of: path, tip: ours, tree: ourTree),
                                        theirs: try side(of: path, tip: theirs, tree: theirTree), lostToDirectory: true))
        }
        let lostPlan = MergePlan.decide(lost, book: planned.book, policy: policy, now: now, content: blobContent,
                                        complete: { plan in completeExternal(plan, policy: policy, now: now) })
        try carryOut(lostPlan, in: merge)
        book = lostPlan.book
        var records = planned.records + lostPlan.records
        let notes = planned.notes + lostPlan.notes
        let baseTree = try repo.mergeBase(ours, theirs).map { id throws in try repo.commit(id).tree }
        _ = try dropEmptiedMarkers(merge, baseTree: baseTree, sides: [ourTree, theirTree])
        var tree = try merge.writeTree()
        var changes = try repo.diffTrees(ourTree, tree)
        if try dropStaleMarkers(merge, changes: changes) {
            tree = try merge.writeTree()
            changes = try repo.diffTrees(ourTree, tree)
        }
        try checkSafe(changes, tree: tree, peer: peer)
        var message = "\(device): merge \(peer)"
        if !records.isEmpty {
            message += ", \(records.count) conflict\(records.count == 1 ? "" : "s")\n\n"
                + records.map { "conflict \($0.id): \($0.kind.rawValue) \($0.filePath.display) (holding \($0.current ?? "-"))" }
                    .joined(separator: "\n")
        }
        let commit: Oid
        if records.isEmpty, notes.isEmpty, let join = try cleanJoin(ours: ours, theirs: theirs, tree: tree, theirTree: theirTree, changes: changes) {
            commit = join
        } else {
            let sig = Signature(name: device, email: "\(device)@syncagent", time: now)
            commit = try repo.createCommit(tree: tree, parents: [ours, theirs], author: sig, committer: sig,
                                           message: message + "\n", updateRef: nil)
        }
        // The records go into the book before the data directory is touched, so a stop (or a
        // kill) after `main` moves can never lose them.
        try ConflictBook.save(repo, book, device: device, message: "\(device): conflict records of a merge with \(peer)")
        beginApply(target: commit, expected: ours, peer: peer)
        defer { endApply() }
        var applied = try apply(changes)
        let heldBack = splitHeldBack(&applied)
        if !applied.localChanges.isEmpty {
            let head = try commitKeptLocal(&applied, target: tree, baseTree: ourTree, parents: [ours, theirs], expected: ours,
                                           peer: peer, theirTip: theirs, book: &book, records: &records, now: now,
                                           message: message)
            applied.localChanges += heldBack
            return SyncOutcome(action: .merged, head: head, newConflicts: records, notes: notes, applied: applied)
        }
        try moveRef(Store.mainRef, to: commit, expected: ours, message: "syncagent: merge \(peer)",
                    written: mergeWrites(ours: ourTree, theirs: theirTree, result: tree, changes: changes, commit: commit))
        applied.localChanges = heldBack
        return SyncOutcome(action: .merged, head: commit, newConflicts: records, notes: notes, applied: applied)
    }

    /// The objects a merge's ref move makes durable instead of the whole file system: the trees
    /// and blobs of the result that neither side holds at the same path (what libgit2 merged from
    /// both sides' edits of one text is a new blob), and the commit. What ours holds is durable
    /// (`main` reaches it), and so is what theirs holds (a fetch or a copy flushes what it brought
    /// before the peer's ref names it). The rest is passed on as it is: one that is not a loose file
    /// (found in a pack libgit2 saw first, which may be one nobody flushed yet) makes `moveRef`
    /// flush the file system. nil, the file system, when they are many.
    func mergeWrites(ours ourTree: Oid, theirs theirTree: Oid, result tree: Oid, changes: [TreeChange], commit: Oid) -> [Oid]? {
        guard changes.count < Repository.writeLogLimit,
              let vsOurs = try? repo.treesDiffering(ourTree, tree), vsOurs.count < Repository.writeLogLimit,
              let vsTheirs = try? repo.treesDiffering(theirTree, tree),
              let blobsVsTheirs = try? repo.diffTrees(theirTree, tree) else { return nil }
        let trees = Set(vsOurs).intersection(vsTheirs)
        let blobs = Set(changes.compactMap { $0.new?.oid }).intersection(blobsVsTheirs.compactMap { $0.new?.oid })
        return Array(trees.union(blobs).union([commit]))
    }

    /// Files that changed on disk after the merge was planned were left as they are: their bytes
    /// join the merge result (they are the newest version), and each one whose peer version differs
    /// becomes a conflict record holding both, so neither is lost or silently overridden.
    func commitKeptLocal(_ applied: inout ApplyReport, target: Oid, baseTree: Oid?, parents: [Oid], expected: Oid?,
                                 peer: String, theirTip: Oid, book: inout [String: ConflictRecord],
                                 records: inout [ConflictRecord], now: Int64, message: String? = nil) throws -> Oid {
        let index = try liveIndex()
        var kept: [FilePath] = []
        for path in applied.localChanges {
            // Only a regular file or link the user wrote takes the path. A deletion (or a directory)
            // is left to the commit path and its safety rules; the peer's version stays in `main`,
            // as "a modification beats a deletion" wants. Special files are never read (a FIFO blocks).
            let lookedAt = WriteStamp.coarseNow()
            guard let stat = try? FileStat.of(data.pushing(path)), stat.isStorable else { continue }
            guard case .written(let blob) = try blobFromDisk(path, stat: stat) else { continue }
            if let settled = Self.settledStat(stat, lookedAt: lookedAt) {
                try index.add(path, blob: blob, mode: Self.gitMode(stat), stat: settled)
            } else {
                try index.add(path, blob: blob, mode: Self.gitMode(stat))
            }
            kept.append(path)
        }
        applied.localChanges = kept
        guard !kept.isEmpty else {
            let sig = Signature(name: device, email: "\(device)@syncagent", time: now)
            let commit = parents.count == 1 ? parents[0]
                : try repo.createCommit(tree: target, parents: parents, author: sig, committer: sig,
                                        message: (message ?? "\(device): merge \(peer)") + "\n", updateRef: nil)
            try moveRef(Store.mainRef, to: commit, expected: expected, message: "syncagent: merge \(peer)")
            return commit
        }
        let tree = try index.writeTree()
        try saveIndex(index)
        let sig = Signature(name: device, email: "\(device)@syncagent", time: now)
        let text = (message ?? "\(device): fast-forward to \(peer)") + "\n\nkept \(applied.localChanges.count) file(s) changed on disk during the merge\n"
        let commit = try repo.createCommit(tree: tree, parents: parents, author: sig, committer: sig, message: text, updateRef: nil)
        let policy = ConflictPolicy(device: device, rules: [], resolvers: [])
        for path in applied.localChanges {
            let local = try repo.entry(at: path, inTree: tree)
            let theirs = try repo.entry(at: path, inTree: target)
            guard local != theirs else { continue }
            let base = try baseTree.flatMap { t throws in try repo.entry(at: path, inTree: t) }
            let mine = SideVersion(device: device, commit: commit, time: now, entry: local)
            let origin = try repo.origin(of: path, from: theirTip)
            let their = SideVersion(device: origin.author.name, commit: origin.id, time: origin.author.time, entry: theirs)
            guard their.device != device else { continue }
            let fileBase = base?.mode == EntryMode.tree ? nil : base
            let slot = MergePlan.recordSlot(book, path: path, base: fileBase)
            var plan = policy.plan(PathConflict(path: path, base: fileBase, ours: mine, theirs: their),
                                   existing: slot.existing, generation: slot.generation, now: now, content: { _ in nil })
            plan.record.current = device  // the disk holds the local bytes
            book[plan.record.id] = plan.record
            records.append(plan.record)
        }
        try moveRef(Store.mainRef, to: commit, expected: expected, message: "syncagent: merge \(peer), keeping local changes")
        applied.keptLocal = applied.localChanges
        applied.localChanges = []
        return commit
    }

    /// Local changes the rules hold back (manual, over max_bytes), and new files a power cut may
    /// have broken (`holdPowerCutLeft`: empty, zeros, cut short), that met an incoming change: they
    /// stay on disk and held, never shared through the merge; the incoming version is in `main`
    /// (nothing is lost either way). Returns them; `applied.localChanges` keeps the rest.
    /// (Seed 103 of the power-cut suite, cut 6: the phone committed a new file, the watch fetched
    /// it, the cut took back the phone's ref move and emptied the file; the fast-forward to the
    /// watch met the emptied file and kept it, so `main` and the watch took an empty file.)
    private func splitHeldBack(_ applied: inout ApplyReport) -> [FilePath] {
        guard !applied.localChanges.isEmpty else { return [] }
        let cutLeft = stillAsPowerCutLeft(among: Set(applied.localChanges))
        guard !cutLeft.isEmpty || !policy.rules.isEmpty || policy.mode == .receiveOnly else { return [] }
        let heldBack = applied.localChanges.filter { path in
            if cutLeft.contains(path) { return true }
            let stat = (try? FileStat.of(data.pushing(path))) ?? nil
            return policy.holdReason(path, size: stat?.isStorable == true ? stat?.size : nil) != nil
        }
        applied.localChanges.removeAll { heldBack.contains($0) }
        return heldBack
    }

    /// A blob's bytes for the strategies, nil when this device does not have it.
    private func blobContent(_ id: Oid) -> [UInt8]? {
        repo.hasObject(id) ? try? repo.blobData(id) : nil
    }

    /// Runs the program a plan asks for (the `command` strategy; the plan itself never spawns) and
    /// completes the plan with its result.
    private func completeExternal(_ plan: PathPlan, policy: ConflictPolicy, now: Int64) -> PathPlan {
        guard let request = plan.external else { return plan }
        return policy.completing(plan, with: ExternalMerge.run(request), now: now)
    }

    /// Carries a merge plan out in libgit2's merge index: each path takes what the plan chose, and
    /// the copies go beside it.
    private func carryOut(_ plan: MergePlan, in merge: MergeResult) throws {
        for step in plan.steps {
            switch step {
            case .none: break
            case .later(let path, let take):
                try settle(merge, path, take: take)
            case .conflict(let path, let pathPlan, let lostToDirectory):
                if lostToDirectory {
                    if merge.hasEntry(path) { try merge.remove(path) }
                } else {
                    try settle(merge, path, take: pathPlan.take)
                }
                for copy in pathPlan.copies { try merge.add(copy.path, blob: copy.entry.oid, mode: copy.entry.mode) }
            }
        }
    }

    /// Paths where one side made or changed a file (or link) since the merge base, and the merged
    /// result holds a directory there, with no conflict. Costs the two sides' changes.
    private func filesLostToDirectories(_ merge: MergeResult, ours: Oid, theirs: Oid, ourTree: Oid, theirTree: Oid) throws -> [FilePath] {
        let baseTree = try repo.mergeBase(ours, theirs).map { id throws in try repo.commit(id).tree }
        return try filesLostToDirectories(merge, baseTree: baseTree, sides: [ourTree, theirTree])
    }

    /// `changes`: each side's changes since the base, when the caller has them (`foldJoins`).
    private func filesLostToDirectories(_ merge: MergeResult, baseTree: Oid?, sides: [Oid], changes: [[TreeChange]]? = nil) throws -> [FilePath] {
        var lost: Set<FilePath> = []
        for (i, tree) in sides.enumerated() {
            for change in try changes?[i] ?? repo.diffTrees(baseTree, tree) {
                guard let new = change.new, new.mode != EntryMode.tree, !DirectoryMarker.isMarker(change.path) else { continue }
                // (The merged index may even hold the file and the directory's files together;
                // writing its tree then keeps only the directory.)
                if merge.hasEntries(under: change.path, except: change.path) {
                    lost.insert(change.path)
                }
            }
        }
        return lost.sortedInBytes()
    }

    /// One side emptied a directory that the other deleted whole: the marker the emptying side's
    /// commit added (the directory still stood there, with nothing left in it) is no change of its
    /// own, since the base held the directory with files and that side only deleted in it. The whole
    /// deletion wins, as it does for every file the directory held (Mutagen: a partial deletion
    /// yields to the full one), so no device keeps a directory neither wanted. A directory one side
    /// made, emptied while the other kept it, or that the other turned into a file (a conflict of
    /// its own) keeps its marker. Either side's markers, so every device merging the same tips drops
    /// the same ones. Costs both sides' changes since the base. True when any went.
    private func dropEmptiedMarkers(_ merge: MergeResult, baseTree: Oid?, sides: [Oid], changes: [[TreeChange]]? = nil) throws -> Bool {
        guard let baseTree, sides.count == 2 else { return false }
        var dropped = false
        for (i, tree) in sides.enumerated() {
            for change in try changes?[i] ?? repo.diffTrees(baseTree, tree)
            where change.old == nil && change.new != nil && DirectoryMarker.isMarker(change.path) {
                let dir = DirectoryMarker.directory(of: change.path)
                guard merge.hasEntry(change.path), !merge.hasEntries(under: dir, except: change.path),
                      try repo.entry(at: dir, inTree: baseTree)?.mode == EntryMode.tree,
                      try deletedWhole(dir, in: sides[1 - i]) else { continue }
                try merge.remove(change.path)
                dropped = true
            }
        }
        return dropped
    }

    /// Whether `dir` is gone from `tree` with a directory: nothing there, or a directory above it
    /// gone. (A file or link standing at it or above it is a type change, settled as a conflict.)
    private func deletedWhole(_ dir: FilePath, in tree: Oid) throws -> Bool {
        var prefix = FilePath("")
        for component in dir.components {
            prefix.append(component)
            guard let entry = try repo.entry(at: prefix, inTree: tree) else { return true }
            if entry.mode != EntryMode.tree { return false }
        }
        return false  // the directory is there
    }

    /// One side made a directory that the other filled: the merged directory holds files, so its
    /// `DirectoryMarker` goes (every device merging the same tips drops the same markers). True
    /// when any went.
    private func dropStaleMarkers(_ merge: MergeResult, changes: [TreeChange]) throws -> Bool {
        var dirs: Set<FilePath> = []
        for change in changes { dirs.formUnion(DirectoryMarker.candidates(for: change.path)) }
        var dropped = false
        for dir in dirs {
            let marker = DirectoryMarker.marker(of: dir)
            if merge.hasEntry(marker), merge.hasEntries(under: dir, except: marker) {
                try merge.remove(marker)
                dropped = true
            }
        }
        return dropped
    }

    /// The pseudo-peer whose tip is the fold of a hub's devices (`foldJoins`): "." is in no device name.
    public static func foldedPeer(_ hub: String) -> String { "\(hub)/all.devices" }

    /// Many devices through a hub, each with new commits (a burst): their tips that join cleanly
    /// with `main` are folded into one join here, objects only (no ref moved, nothing applied),
    /// so the data directory takes them in one apply instead of one merge and apply per device.
    /// A tip that does not join cleanly (a conflict, a file lost to a directory, a directory
    /// marker to drop, an emptied directory the other side deleted) is left out: it is merged on its own afterwards, as before. Returns the
    /// pseudo-peer to integrate (`foldedPeer`, tracking the fold), or nil when fewer than two tips
    /// were folded. `byMerges`: every tip through a three-way merge (the reference the tests hold
    /// the shortcut for disjoint tips to).
    public func foldJoins(hub: String, devices: [String], byMerges: Bool = false) throws -> String? {
        guard let ours = try head() else { return nil }
        var moved: [Oid] = []
        for device in devices {
            guard let tip = try repo.resolveReference(Self.trackingRef(Self.hubPeer(hub, device: device))),
                  !moved.contains(tip), try !covers(ours, tip) else { continue }
            moved.append(tip)
        }
        // A device's tip that is a join (its own fold, pushed) stands for the real tips behind it,
        // each folded on its own: a few files each, not the join's whole set of changes, which
        // repeats what the other tips bring (100 devices: each device's join, a three-way merge and
        // a tree written per device, was most of an agent's work in a burst). Sorted: every device
        // folds the same tips in the same order.
        let real = try joinTips(moved)
        let held = try repo.reachable(real, fromAny: [ours])
        let tips = real.filter { !held.contains($0) }
        guard tips.count > 1, let base = try repo.mergeBase(of: [ours] + tips) else { return nil }
        // Every tip's changes since the common version, added one after the other: trees only.
        let baseTree = try repo.commit(base).tree
        var tree = try repo.commit(ours).tree
        var folded: [Oid] = []
        // A tip that only adds or rewrites files no one else changed, or the very same file another
        // tip brought (`FoldPlan.newChanges`), merges cleanly, taken whole, with no marker to drop:
        // its entries wait in `pending` and every such tip goes into the tree in one update, not one
        // merge and tree write each (100 devices: a fifth of each agent's work in a burst).
        // The folded tree's changes since the base, read again only when the tree moved: a merge
        // below looks at both sides' changes twice (100 devices: O(devices x changes) diffs).
        var treeChanges = (tree: tree, changes: try repo.diffTrees(baseTree, tree))
        func changesOfTree() throws -> [TreeChange] {
            if treeChanges.tree != tree { treeChanges = (tree, try repo.diffTrees(baseTree, tree)) }
            return treeChanges.changes
        }
        var touched = FoldPlan(changes: treeChanges.changes)
        var pending: [(path: FilePath, edit: TreeEdit)] = []
        for tip in tips {
            let tipTree = try repo.commit(tip).tree
            let tipChanges = try repo.diffTrees(baseTree, tipTree)
            if !byMerges, let new = touched.newChanges(tipChanges), try !marksDirectory(of: new, in: [tree, tipTree]) {
                pending += new.map { ($0.path, TreeEdit.entry($0.new!)) }
                touched.add(new)
                folded.append(tip)
                continue
            }
            if !pending.isEmpty {
                tree = try repo.updateTree(tree, edits: pending)
                pending = []
            }
            let merge = try repo.mergeTrees(ancestor: baseTree, ours: tree, theirs: tipTree)
            guard merge.conflicts.isEmpty else { continue }
            let sides = [try changesOfTree(), tipChanges]
            guard try filesLostToDirectories(merge, baseTree: baseTree, sides: [tree, tipTree], changes: sides).isEmpty,
                  try !dropEmptiedMarkers(merge, baseTree: baseTree, sides: [tree, tipTree], changes: sides) else { continue }
            let merged = try merge.writeTree()
            let changes = try repo.diffTrees(tree, merged)
            guard try !dropStaleMarkers(merge, changes: changes), try takesWhole(changes, from: tipTree) else { continue }
            touched.add(tipChanges.map(\.path) + changes.map(\.path))
            tree = merged
            folded.append(tip)
        }
        if !pending.isEmpty { tree = try repo.updateTree(tree, edits: pending) }
        guard folded.count > 1 else { return nil }
        let parents = try joinTips([ours] + folded)
        guard parents.count > 1 else { return nil }
        let join = try makeJoin(tips: parents, tree: tree)
        flushFold(join, tree: tree, over: try repo.commit(ours).tree)
        lastFold = (ours, join)
        let peer = Self.foldedPeer(hub)
        try repo.setReference(Self.trackingRef(peer), to: join, message: "syncagent: \(folded.count) devices of \(hub) folded")
        return peer
    }

    /// Whether a directory above one of these changed paths holds a `DirectoryMarker` in any of
    /// these trees (a merge would then drop it: no fold without a merge).
    private func marksDirectory(of changes: [TreeChange], in trees: [Oid]) throws -> Bool {
        var dirs: Set<FilePath> = []
        for change in changes { dirs.formUnion(DirectoryMarker.candidates(for: change.path.removingLastComponent())) }
        for dir in dirs {
            for tree in trees where try repo.entry(at: DirectoryMarker.marker(of: dir), inTree: tree) != nil { return true }
        }
        return false
    }

    /// A merge with nothing to decide (no conflict, every path it changes taken whole from their
    /// side) becomes the same join commit on every device: its parents are the real tips behind
    /// both sides (`joinTips`), its signature fixed, its time the latest of theirs. Devices that
    /// merged the same changes in other orders, or each other's merges, therefore end on one
    /// commit instead of merging merges for ever (many devices through one hub). Nil when the
    /// merge is not that simple: a device-signed merge commit records it instead.
    private func cleanJoin(ours: Oid, theirs: Oid, tree: Oid, theirTree: Oid, changes: [TreeChange]) throws -> Oid? {
        guard try takesWhole(changes, from: theirTree) else { return nil }
        let tips = try joinTips([ours, theirs])
        guard tips.count > 1 else { return nil }
        return try makeJoin(tips: tips, tree: tree)
    }

    /// Whether every path these changes touch is exactly what `tree` holds there (nothing made by
    /// merging contents, nothing from the other side).
    private func takesWhole(_ changes: [TreeChange], from tree: Oid) throws -> Bool {
        for change in changes where try repo.entry(at: change.path, inTree: tree) != change.new { return false }
        return true
    }

    /// The join commit of these tips with this tree: the same bytes on every device (sorted
    /// parents, fixed signature and message, the latest of the tips' times). Every join, of equal
    /// trees or of a merge with nothing to decide, has the same message: one id for one content.
    private func makeJoin(tips: [Oid], tree: Oid) throws -> Oid {
        var time: Int64 = 0
        for tip in tips { time = max(time, try repo.commit(tip).author.time) }
        let sig = Signature(name: "syncagent", email: Self.joinEmail, time: time)
        return try repo.createCommit(tree: tree, parents: tips, author: sig, committer: sig,
                                     message: "syncagent: join equal histories\n", updateRef: nil)
    }

    /// The author email of join commits: a device name never holds a '.', so no device's own.
    static let joinEmail = "syncagent.join@syncagent"

    /// The real tips behind these commits: a join commit stands for its parents; a tip that is an
    /// ancestor of another is left out. Sorted, so the same set gives the same list everywhere.
    func joinTips(_ commits: [Oid]) throws -> [Oid] {
        try repo.independent(Array(try realTips(commits))).sorted()
    }

    /// The commits behind these, each join replaced by its parents (recursively).
    private func realTips(_ commits: [Oid]) throws -> Set<Oid> {
        var tips: Set<Oid> = []
        var stack = commits
        while let c = stack.popLast() {
            let info = try repo.commit(c)
            if info.author.email == Self.joinEmail && info.parents.count > 1 {
                stack.append(contentsOf: info.parents)
            } else {
                tips.insert(c)
            }
        }
        return tips
    }

    /// Whether `ours` already holds everything `theirs` stands for: `theirs` itself is in its
    /// history, or every real tip behind the join `theirs` is. (A join of some of the tips another
    /// join holds is no ancestor of it, but brings nothing: merging it would only make the same
    /// join again.)
    func covers(_ ours: Oid, _ theirs: Oid) throws -> Bool {
        if try repo.isReachable(theirs, fromAny: [ours]) { return true }
        // Two joins of the same tips with different trees (merged in orders that came out
        // differently): not the same, so they merge and end on one join.
        let (a, b) = (try repo.commit(ours), try repo.commit(theirs))
        // Two joins of the same tips and files but other bytes (another version's message): the
        // smaller id is kept everywhere, so the larger one is not covered.
        if a.author.email == Self.joinEmail, b.author.email == Self.joinEmail, a.parents == b.parents,
           a.tree != b.tree || theirs < ours { return false }
        // One walk for every tip (a join of 100 devices asked once per tip, each a walk of the
        // 100 parents of `ours`: with 100 devices, a tenth of each agent's work in a burst).
        let tips = try realTips([theirs])
        return try repo.reachable(Array(tips), fromAny: [ours]).count == tips.count
    }

    /// One side's version of `path`, credited to the device whose commit made it.
    private func side(of path: FilePath, tip: Oid, tree: Oid) throws -> SideVersion {
        let origin = try repo.origin(of: path, from: tip)
        return SideVersion(device: origin.author.name, commit: origin.id, time: origin.author.time,
                           entry: try repo.entry(at: path, inTree: tree))
    }

    private func settle(_ merge: MergeResult, _ path: FilePath, take: PathPlan.Take) throws {
        switch take {
        case .entry(let side): try merge.settle(path, with: side)
        case .directory: try merge.settle(path, with: nil)
        case .bytes(let bytes, let mode): try merge.settle(path, with: ConflictSide(oid: try repo.createBlob(bytes), mode: mode))
        }
    }

    /// Refuses changes that would write outside the data directory: entries named `.`, `..` or
    /// `.git`, and paths that pass through a symbolic link of the new tree. Costs the changed paths.
    func checkSafe(_ changes: [TreeChange], tree: Oid, peer: String) throws {
        try checkSafe(tree: tree, peer: peer) { look in for change in changes { try look(change) } }
    }

    /// The same check, of changes `feed` hands over one by one (a walk of the tree, never held).
    func checkSafe(tree: Oid, peer: String, feed: (_ look: (TreeChange) throws -> Void) throws -> Void) throws {
        var reasons: [String] = []
        var linkCache: [FilePath: Bool] = [:]
        // The directories above a path are looked at once per directory, not once per path.
        var throughLink: [FilePath: FilePath?] = [:]  // a parent directory: the link above it, if any
        // Each directory's entry is looked up in its parent's tree, found by the lookup before
        // (not from the root again for each directory: a first sync reads with no tree cached,
        // `withoutCachingTrees`). The entries of the trees looked into are kept, a few dozen trees'.
        let root = try repo.entriesByName(tree)
        var treeOf: [FilePath: Oid] = [FilePath(""): tree]  // the directories of `tree` found so far
        var read: [Oid: [[UInt8]: [ConflictSide]]] = [tree: root]
        func byName(_ id: Oid) throws -> [[UInt8]: [ConflictSide]] {
            if let known = read[id] { return known }
            if read.count >= 64 { read = [tree: root] }
            let made = try repo.entriesByName(id)
            read[id] = made
            return made
        }
        try feed { change in
            guard change.new != nil else { return }
            let bytes = change.path.bytes
            // What the index would refuse to stage (`IndexFile.isValidPath`), refused here by name.
            if !IndexFile.isValidPath(bytes) {
                reasons.append("\(change.path.display): a '.', '..', '.git' or empty entry")
                return
            }
            let parent = change.path.removingLastComponent()
            guard !parent.isEmpty else { return }
            if throughLink[parent] == nil {
                var found: FilePath?
                var prefix = FilePath("")
                for component in parent.components {
                    let up = prefix
                    prefix.append(component)
                    let isLink: Bool
                    if let known = linkCache[prefix] { isLink = known } else {
                        // Under what is not a directory of the tree there is nothing. A link of the
                        // directory's own name beside it (a hand-made tree) counts, wherever the
                        // tree lists it.
                        let entries = try treeOf[up].map { try byName($0)[component.bytes] ?? [] } ?? []
                        isLink = entries.contains { $0.mode == EntryMode.link }
                        if let subtree = entries.first(where: { $0.mode == EntryMode.tree }) { treeOf[prefix] = subtree.oid }
                        linkCache[prefix] = isLink
                    }
                    if isLink {
                        found = prefix
                        break
                    }
                }
                throughLink[parent] = .some(found)
            }
            if case .some(.some(let link)) = throughLink[parent] {
                reasons.append("\(change.path.display): would be written through the symbolic link \(link.display)")
            }
        }
        if !reasons.isEmpty { throw SyncRefusal(peer: peer, reasons: Array(reasons.prefix(20))) }
    }

    /// Open (or all) conflict records, newest detection first.
    public func conflicts(includeResolved: Bool = false) throws -> [ConflictRecord] {
        try ConflictBook.load(repo).values
            .filter { includeResolved || $0.status == .open }
            .sorted { ($0.detectedAt, $0.id) > ($1.detectedAt, $1.id) }
    }

    public func aheadBehind(peer: String) throws -> (ahead: Int, behind: Int)? {
        guard let ours = try head(), let theirs = try repo.resolveReference(Self.trackingRef(peer)) else { return nil }
        return try repo.aheadBehind(local: ours, upstream: theirs)
    }
}
