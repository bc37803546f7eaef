import FileSystem
import FoundationEssentials
import Glibc
import Logging
import SyncCore
import SystemPackage
import Watcher

/// The one owner of the store. Every mutation goes through it, one at a time and in the order it
/// is asked: local batches, peer integrations, resolutions, confirmations; status reads too. Its
/// work runs on a thread of its own (`ThreadExecutor`), never on Swift's cooperative pool.
///
/// Order by construction: before it merges a peer or settles a record, it takes every change the
/// watcher has seen so far (`Watcher.drain`) and commits it; a file that changes after that is
/// caught by the apply step's per-path check and committed as a local change, never overwritten.
/// (A peer whose `main` this store holds already merges nothing and writes nothing: no drain.
/// A `sync` request commits what the watcher holds first, whatever its rounds find.)
actor SyncEngine {
    private nonisolated let executor: ThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Ends the engine's thread once its jobs in hand are run: for a one-shot command's engine,
    /// when the command is done (nothing may be asked of it afterwards).
    nonisolated func finishThread() { executor.finish() }

    let config: Config
    private let store: Store
    private let logger: Logger
    nonisolated let events: EventBus
    /// The deletion spell under way, if any (SPEC "Safety holds").
    private var spell: DeletionSpell
    /// The local watcher, when an agent runs (nil for one-shot commands: they scan instead).
    private var watcher: Watcher?
    private var ledger: PeerLedger
    /// When `ledger` was last written, and whether it holds checks not written yet (`notePeer`).
    private var ledgerSaved: Date?
    private var ledgerUnsaved = false
    /// Problems `status` shows until they go away, by topic.
    private var problems: [ProblemKey: String] = [:]
    /// Deleted paths not committed: waiting for their spell to end, or held (`hold`) until the
    /// user confirms (`send --deletes`) or brings them back (`restore --deletes`).
    private var heldDeletes: Set<FilePath> = []
    private var hold: DeletionHold?
    /// The deletions `judgeDeletions` said to send in this batch: tracked files, for the spell.
    private var sendingDeletions = 0
    /// Every path the spell under way deleted (sent or not): what `restore --deletes` brings back.
    private var spellPaths: Set<FilePath> = []
    /// The data directory's identity, to tell "moved away and back" from "replaced".
    private var rootIdentity: (device: UInt64, inode: UInt64)?
    /// A batch whose commit failed (disk full, ...), retried a second later (`IdleCare`).
    private var failedBatch: Set<FilePath> = []
    /// The timed work (retries, saving the index, packing) and when each is next due.
    private var schedule = IdleCare(now: .now)
    /// Rung whenever the schedule may have moved earlier; `AgentService` then asks `care()`.
    nonisolated let careBell = Doorbell()
    /// Paths handed over but not committed yet, for `status.pending`.
    private var inFlight = 0

    /// Long work in hand, for `status` while the engine is busy.
    nonisolated let progress: ProgressBoard

    /// The machine stopped under the last session (`AgentSession`): the start-up commit first looks
    /// for files a power cut damaged.
    private var afterPowerLoss: Bool

    init(config: Config, store: sending Store, logger: Logger, events: EventBus, progress: ProgressBoard, afterPowerLoss: Bool = false) {
        self.afterPowerLoss = afterPowerLoss
        self.progress = progress
        executor = ThreadExecutor(name: "syncagent-engine")
        self.config = config
        self.store = store
        self.logger = logger
        self.events = events
        spell = DeletionSpell(rule: DeletionGuard(settings: config.safety), root: config.data)
        ledger = PeerLedger.load(state: config.state)
        if let stat = try? FileStat.of(config.data) { rootIdentity = (stat.device, stat.inode) }
    }

    func attach(_ watcher: Watcher) { self.watcher = watcher }

    // MARK: local changes

    /// Commits one batch of changed paths (a full scan when `rescan`), holding accidental
    /// deletions back (SPEC "Safety holds").
    /// `deletionsJudged`: the start-up commit's chunks, whose deletions were judged as one set.
    func commit(_ batch: WatchBatch, confirmDeletes: Bool = false, send: Set<FilePath> = [], ahead: PrehashJob? = nil,
                deletionsJudged: Bool = false) {
        var paths = batch.paths.union(failedBatch)
        failedBatch = []
        schedule.commitFailedAt = nil
        defer { careBell.ring() }
        inFlight = paths.count
        defer { inFlight = 0 }
        guard rootIsPresent() else {
            failedBatch = paths  // kept for when the directory is back
            schedule.commitFailedAt = .now
            ahead?.cancel()
            return
        }
        do {
            // `.syncignore` changed: the rules are read again before this batch is committed, and
            // every path is looked at again (a pattern taken out lets files it kept back go).
            // (A rescan reads them again too: after a queue overflow the change may be in no batch.)
            let rulesChanged = (paths.contains(IgnoreFile.path) || batch.rescan) && reloadRules()
            if batch.rescan || rulesChanged {
                defer { progress.finish(Store.scanTask) }
                paths.formUnion(try store.changedSinceLastCommit())
            }
            // New files a power cut left empty, still so: not committed (`putBackPowerCutDamage`).
            let leftEmpty = store.stillAsPowerCutLeft(among: paths, release: send)
            if !leftEmpty.isEmpty { paths.subtract(leftEmpty) }
            notePowerCutLeft()
            // A merge's own writes read back: one lstat each here, and nothing more below.
            let ownWrites = try store.unchangedOwnWrites(among: paths)
            if config.mode == .receiveOnly {
                // Nothing is committed: the store holds every local edit back (`localChanges`).
            } else if deletionsJudged {
                // Judged with the whole start-up set; what was held is not among these paths.
            } else if !confirmDeletes {
                paths.formUnion(heldDeletes)
                // (A rescan after an inotify overflow mid-`rm -rf` still waits for quiet: only a
                // process with no watcher has seen every deletion there is.)
                try judgeDeletions(among: paths.subtracting(ownWrites), wholeSeen: watcher == nil)
                paths.subtract(heldDeletes)
            } else {
                paths.formUnion(heldDeletes)
                spell.confirm()
                releaseHold()
            }
            // Big new files (a folder of photos) go in as several commits, each slice hashed on
            // other threads while the one before is committed: a peer fetches and writes the first
            // while the rest is hashed, instead of waiting for the whole batch.
            let sliceable = ahead == nil && send.isEmpty && !batch.rescan && !confirmDeletes && config.mode != .receiveOnly
            // (A merge's own writes read back are looked at no further: they go with the first.)
            var slices = sliceable ? store.slicesBySize(paths.subtracting(ownWrites)) : []
            if slices.count > 1 {
                slices[0].formUnion(ownWrites)
                try store.commit(slices: slices, send: send, unchanged: ownWrites) { finishCommit($0) }
            } else {
                finishCommit(try store.commit(paths: paths, send: send, ahead: ahead, unchanged: ownWrites))
            }
            setProblem(.commit, nil)  // (after the last slice: one that fails again keeps it)
            if sendingDeletions > 0 {
                spell.sent(sendingDeletions, now: .now)
                sendingDeletions = 0
            }
            // A big batch (a bulk copy, or a big merge's own writes read back): its sets are gone.
            if paths.count >= Store.prehashThreshold, ahead == nil { FreeMemory.returnToSystem() }
        } catch {
            let message = "cannot commit changes in \(config.data.display) into \(config.storePath.display): \(error). Nothing is lost: the files stay as they are and the commit is retried"
            if problems[.commit] != message { logger.error("\(message)") }
            setProblem(.commit, message)
            failedBatch = paths
            schedule.commitFailedAt = .now
        }
    }

    /// What follows a commit: the schedule told, held paths, skipped obstacles and the new
    /// commit logged and announced.
    private func finishCommit(_ outcome: CommitOutcome) {
        if outcome.commit != nil {
            schedule.lastActivity = .now
            schedule.packPending = true
            schedule.commitsSincePack += 1
        }
        for change in outcome.newlyHeld.prefix(AgentEvent.maxPaths) {
            events.emit(.held(path: change.path.display, reason: change.reason))
            if change.reason != .localChange {
                logger.info("holding \(change.path.display) (\(change.reason.rawValue)); share it with `syncagent send \(change.path.display)`")
            }
        }
        for obstacle in outcome.skipped {
            logger.warning("skipping \(config.data.pushing(obstacle.path).display): it is \(obstacle.what); only regular files, symbolic links and directories this user can read are synced, and it is never removed")
        }
        if let id = outcome.commit {
            logger.info("committed \(id.hex.prefix(12)): \(outcome.summary.message(device: config.device, limit: 0).split(separator: "\n").first ?? "")")
            let summary = outcome.summary
            let paths = (summary.added + summary.modified + summary.deleted + summary.renamed.map(\.to)).prefix(AgentEvent.maxPaths)
            events.emit(.committed(commit: id.hex, paths: paths.map(\.display), count: summary.count))
        }
        if !outcome.retry.isEmpty { watcher?.report(outcome.retry) }
    }

    /// Judges the deletions among these paths as part of their spell (`DeletionSpell`): sets
    /// `heldDeletes` to those that must not be committed now (waiting for the spell to end, or held),
    /// and `sendingDeletions` to the files of those that go.
    private func judgeDeletions(among paths: Set<FilePath>, wholeSeen: Bool) throws {
        sendingDeletions = 0
        let gone = try store.deletions(among: paths)
        let grew = !gone.paths.subtracting(heldDeletes).isEmpty
        let now = ContinuousClock.now
        let decision: DeletionSpell.Decision
        if gone.paths.isEmpty {
            decision = spell.observe(now: now, deleted: 0, grew: false, tracked: 0, rootIsEmpty: false, wholeSeen: wholeSeen, head: nil)
        } else {
            let empty = ((try? Directory.entries(of: config.data)) ?? []).isEmpty
            decision = spell.observe(now: now, deleted: gone.files, grew: grew, tracked: try store.trackedCount(), rootIsEmpty: empty,
                                     wholeSeen: wholeSeen, head: ((try? store.headID()) ?? nil)?.hex)
        }
        if spell.current == nil { spellPaths = [] } else { spellPaths.formUnion(gone.paths) }
        switch decision {
        case .send:
            if hold != nil { releaseHold() }  // the files came back
            heldDeletes = []
            sendingDeletions = gone.files
            schedule.spellEnds = nil
        case .wait(let until):
            if hold != nil { releaseHold() }
            heldDeletes = gone.paths
            schedule.spellEnds = until
        case .hold(let hold):
            if self.hold == nil {
                logger.warning("\(hold.message)")
                for path in gone.paths.prefix(AgentEvent.maxPaths) { events.emit(.held(path: path.display, reason: .massDelete)) }
            }
            self.hold = hold
            setProblem(.hold, hold.message)
            heldDeletes = gone.paths
            schedule.spellEnds = nil
        }
    }

    private func releaseHold() {
        if hold != nil { logger.notice("deletions are no longer held") }
        hold = nil
        heldDeletes = []
        problems[.hold] = nil
        schedule.spellEnds = nil
    }

    /// Sets (or clears, with nil) the problem `status` shows under `key`; a new one is an event too.
    private func setProblem(_ key: ProblemKey, _ message: String?) {
        guard problems[key] != message else { return }
        problems[key] = message
        if let message { events.emit(.problem(message)) }
    }

    /// Whether the data directory is there; while it is not, nothing is committed or merged.
    private func rootIsPresent() -> Bool {
        guard let stat = try? FileStat.of(config.data), stat.kind == .directory else {
            let hold = DeletionHold.rootMissing(config.data)
            if self.hold != hold { logger.warning("\(hold.message)") }
            self.hold = hold
            setProblem(.hold, hold.message)
            return false
        }
        if case .rootMissing = hold {
            logger.notice("the data directory \(config.data.display) is back; rescanning it")
            hold = nil
            problems[.hold] = nil
            watcher?.requestRescan()
        }
        if let id = rootIdentity, id.device != stat.device || id.inode != stat.inode {
            // Another directory now stands at the path: watch it from scratch and rescan it.
            logger.notice("the data directory \(config.data.display) was replaced; watching the new one")
            watcher?.rewatch()
        }
        rootIdentity = (stat.device, stat.inode)
        return true
    }

    /// Commits what the watcher has seen so far (or, with no watcher, what a scan finds).
    /// - Parameter keepingOpen: files written to and still open stay pending (before a merge: the
    ///   apply leaves a file changed on disk as it is). A merge that changes such a path still
    ///   commits the file as it stands then, as a local change meeting the peer's (a conflict).
    private func commitPendingLocal(keepingOpen: Bool = false) async {
        if let watcher {
            let batch = await watcher.drain(keepingOpen: keepingOpen)
            if !batch.isEmpty || !failedBatch.isEmpty { commit(batch) }
        } else {
            commit(WatchBatch(rescan: true))
        }
    }

    /// What the watcher holds, committed now (`sync`: "commit and sync now"); files still open for
    /// writing stay pending, as before a merge.
    func commitPendingNow() async {
        guard rootIsPresent() else { return }
        await commitPendingLocal(keepingOpen: true)
    }

    /// An app's `set` (`ControlRequest.commit`): what the watcher holds, then these paths, committed
    /// now. Says which commit `main` points at afterwards, and which of the paths the rules hold.
    func commitNow(paths: [FilePath]) async -> CommitResult {
        // An embedding app's `set` before `run()`: the watcher is not started, and the start-up
        // commit will take whatever else changed; only these paths go now.
        if watcher?.hasStarted != false { await commitPendingLocal() }
        commit(WatchBatch(paths: Set(paths)))
        if let problem = problems[.commit] {
            return CommitResult(commit: nil, error: problem, errorCode: SyncError.Code.io.rawValue)
        }
        let wanted = Set(paths)
        let held = store.loadHeld().keys.filter { wanted.contains($0) }.map(\.display).sorted()
        let local = paths.filter { store.policy.rule(for: $0)?.sync == .never }.map(\.display).sorted()
        return CommitResult(commit: ((try? store.headID()) ?? nil)?.hex, held: held, local: local, error: nil)
    }

    /// `syncagent send --deletes`: commits the held deletions.
    func confirmDeletes() async -> MessageResult {
        guard rootIsPresent() else {
            return MessageResult(message: "not sent", error: DeletionHold.rootMissing(config.data).message,
                                 errorCode: SyncError.Code.noSuchPath.rawValue)
        }
        await commitPendingLocal()
        let count = heldDeletes.count
        commit(WatchBatch(paths: heldDeletes), confirmDeletes: true)
        return MessageResult(message: count == 0 ? "no deletions were held" : "sent \(count) held deletion\(count == 1 ? "" : "s")", error: nil)
    }

    /// The start-up commit: what changed while the agent was stopped, in chunks, so a stop request
    /// is heard between them (each chunk's blobs go into one pack per core). The deletion guard sees
    /// the whole set first.
    func commitStartupChanges(stopping: @Sendable () -> Bool, chunk: Int = 5000) {
        do {
            let fixed = try store.reconcileIndexWithHead().count
            if fixed > 0 {
                logger.notice("the store's index was behind main (the agent stopped before saving it): \(fixed) entries put back at main; their files are read again")
            }
        } catch {
            logger.warning("cannot check the store's index against main: \(error); the start-up scan reads every file whose stat data differs")
        }
        followRules()
        let removed = AgentTemporary.removeLeftovers(under: config.data)
        if !removed.isEmpty { logger.notice("removed \(removed.count) temporary files a stopped agent left in \(config.data.display)") }
        do {
            if let report = try store.finishInterruptedApply() {
                logger.notice("finished a merge the agent was writing when it stopped (\(report.written) written, \(report.removed) removed)")
                record(report, peer: nil)
            }
        } catch {
            logger.error("cannot finish the merge the agent was writing when it stopped: \(error); its files are committed as local changes")
        }
        var rest: [FilePath]
        do {
            rest = try store.changedSinceLastCommit().sortedInBytes()
            progress.finish(Store.scanTask)
        } catch {
            progress.finish(Store.scanTask)
            logger.error("cannot scan \(config.data.display) for changes made while stopped: \(error)")
            return
        }
        guard rootIsPresent() else { return }
        if afterPowerLoss {
            afterPowerLoss = false
            putBackPowerCutDamage(&rest)
            AgentSession.confirm(state: config.state)  // checked: the next start need not
        }
        // The guard sees the whole set as one spell, not chunks.
        do {
            try judgeDeletions(among: Set(rest), wholeSeen: true)
        } catch {
            logger.error("cannot look for deletions in \(config.data.display): \(error); none is committed until it can")
            let gone = Set(rest.filter { (try? FileStat.of(config.data.pushing($0))) ?? nil == nil })
            heldDeletes.formUnion(gone)
        }
        if sendingDeletions > 0 {
            spell.sent(sendingDeletions, now: .now)
            sendingDeletions = 0
        }
        if !heldDeletes.isEmpty { rest.removeAll { heldDeletes.contains($0) } }
        let total = rest.count
        // Each chunk's files are hashed on other threads while the chunk before is committed.
        func hashAhead() -> PrehashJob? {
            rest.isEmpty ? nil : store.prehashAhead(Set(rest.prefix(chunk)))
        }
        var ahead = hashAhead()
        while !rest.isEmpty, !stopping() {
            if total > chunk { progress.update("start-up commit", done: total - rest.count, total: total) }
            let batch = Set(rest.prefix(chunk))
            // A committed chunk's paths are dropped as the index takes them: at 100k files the
            // whole list (5 MB) no longer sits beside the full index at the end.
            rest.removeFirst(batch.count)
            // (and its buffer with them, once half of it is unused)
            if rest.count < rest.capacity / 2 { rest = rest.withUnsafeBufferPointer { Array($0) } }
            let next = hashAhead()
            commit(WatchBatch(paths: batch), ahead: ahead, deletionsJudged: true)
            // The chunk's sets and hashes are freed while the index grows: without handing the
            // pages back now, the heap's holes added 10 MB to the peak of a 100k-file start.
            if total > chunk { FreeMemory.returnToSystem() }
            ahead = next
        }
        ahead?.cancel()  // a stop came: no thread writes into the store once this returns
        progress.finish("start-up commit")
        if !rest.isEmpty {
            logger.notice("stopping: \(rest.count) changes made while stopped are left for the next start")
        }
        if total >= Store.prehashThreshold { FreeMemory.returnToSystem() }  // the scan's sets are gone
        retryUnapplied()  // what stood in the way may have gone while the agent was stopped
    }

    /// After a power cut: files emptied, cut short or older than their committed version are not
    /// committed over what the peers hold; the committed version goes back on disk and what the
    /// disk held is kept in the store (`refs/syncagent/kept`).
    private func putBackPowerCutDamage(_ rest: inout [FilePath]) {
        do {
            let leftEmpty = try store.newFilesAPowerCutMayHaveBroken(among: rest, bootTime: AgentSession.bootTime())
            if !leftEmpty.isEmpty {
                store.holdPowerCutLeft(leftEmpty)
                let set = Set(leftEmpty)
                rest.removeAll { set.contains($0) }
                logger.warning("after the machine stopped, \(leftEmpty.count) new file(s) in \(config.data.display) are empty, hold only zeros, or end on a 4 KiB page as a write the power cut short does (\(leftEmpty.prefix(5).map(\.display).joined(separator: ", "))): a program made them and may not have flushed all their bytes. They are left on disk and not sent until they change; check one and share it as it is with `syncagent send PATH`. If another device brings its version of one, that version is written over it and these bytes are kept in the store")
                notePowerCutLeft()
            }
            var damaged = try store.powerCutDamage(among: rest, bootTime: AgentSession.bootTime())
            // Gone files by the thousand (a data disk not mounted yet after the cut, an emptied
            // directory) are the deletion guard's to judge, never written back into an empty mount point.
            let gone = damaged.filter { ((try? FileStat.of(config.data.pushing($0))) ?? nil) == nil }
            let empty = ((try? Directory.entries(of: config.data)) ?? []).isEmpty
            if !gone.isEmpty, empty || DeletionGuard(settings: config.safety).check(root: config.data, deleting: gone.count,
                                                                                   tracked: (try? store.trackedCount()) ?? 0, rootIsEmpty: empty) != nil {
                logger.warning("\(gone.count) files in \(config.data.display) are gone since the machine stopped; too many to be a power cut's doing alone, so the deletion guard judges them")
                let goneSet = Set(gone)
                damaged.removeAll { goneSet.contains($0) }
            }
            guard !damaged.isEmpty else { return }
            let (report, kept) = try store.putBackCommitted(damaged)
            if !report.failures.isEmpty { logger.warning("\(report.failures.count) of them could not be written back yet: \(report.failures[0])") }
            let put = Set(damaged).subtracting(report.localChanges)
            rest.removeAll { put.contains($0) }
            let names = damaged.prefix(5).map(\.display).joined(separator: ", ") + (damaged.count > 5 ? ", ..." : "")
            var message = "after the machine stopped (a power cut or a system crash), \(damaged.count) file(s) in \(config.data.display) were gone, empty, cut short, older than the version committed before, or back after a deletion committed before (\(names)): a program wrote, or removed, them without flushing that to the disk. Each is as committed again instead of being sent to the other devices as an edit"
            if let kept { message += "; what the disk held is kept: `git --git-dir=\(config.storePath) show --stat \(kept.hex)`" }
            message += ". `syncagent history PATH` lists every version"
            logger.warning("\(message)")
            events.emit(.problem(message))
        } catch {
            logger.error("cannot check the files changed before the machine stopped for damage: \(error); they are committed as they are")
        }
    }

    /// Objects the data directory still needs that the store lacks (a power cut took them while
    /// a ref named their commit: no fetch brings them again, and every write failed) are copied
    /// from stores on this machine that have them (peers and hubs reached by path).
    private func healMissingObjects() {
        guard let missing = try? store.missingUnappliedObjects(), !missing.isEmpty else { return }
        let dirs = config.peers.compactMap { $0.localPath(configFile: config.file) }
        let copied = store.copyObjects(missing, fromLocal: dirs)
        let text = "\(missing.count) object(s) the data directory still needs were missing from \(config.storePath.display) (a power cut took them while a ref named them): \(copied) copied again from peers on this machine"
            + (copied < missing.count ? "; the others are looked for at every retry (a peer over the network cannot send them: `git --git-dir=\(config.storePath.display) fsck`)" : "")
        if text != lastMissingReport { logger.warning("\(text)") }
        lastMissingReport = text
    }

    /// The last report of `healMissingObjects` (told once while it stays the same).
    private var lastMissingReport: String?

    /// Reads the rules again (`.syncignore` changed); true when they differ from the store's.
    private func reloadRules() -> Bool {
        let policy = config.policy
        guard policy != store.policy else { return false }
        store.policy = policy
        // What a pattern taken out leaves to this device again is written first (a peer's file
        // under it is in the index but not on disk: the scan below would take it for a deletion).
        followRules()
        let patterns = max(0, IgnoreFile.rules(in: config.data).count - 1)
        logger.notice("\(config.data.pushing(IgnoreFile.path).display) changed: \(patterns) pattern(s) of paths this device keeps to itself; every path is looked at again")
        return true
    }

    /// The problem `status` shows while new files a power cut left empty are kept back.
    private func notePowerCutLeft() {
        let left = store.powerCutLeft()
        setProblem(.powerCut, left.isEmpty ? nil : "\(left.count) new file(s) came back empty, zero-filled or ending on a 4 KiB page (a write the power may have cut short) after the machine stopped (\(left.prefix(5).map(\.display).joined(separator: ", "))\(left.count > 5 ? ", ..." : "")) and are not sent: write them again, delete them, or share one as it is with `syncagent send PATH` (another device's version of one, when it comes, is written over it and these bytes kept in the store)")
    }

    /// Writes the paths an earlier merge could not write, where that is possible now.
    private func retryUnapplied() {
        guard store.hasUnappliedPaths else { return }
        healMissingObjects()
        do {
            let report = try store.retryUnapplied()
            record(report, peer: nil)
        } catch {
            logger.debug("retrying unwritten paths failed: \(error)")
        }
    }

    /// The timed work that is due now (`IdleCare`): noticing the data directory gone or back,
    /// retrying a failed commit and paths a merge could not write, saving the index, packing.
    /// Returns when to ask again; nil: not before the next event (`careBell`).
    func care() -> ContinuousClock.Instant? {
        let now = ContinuousClock.now
        let present = rootIsPresent()
        schedule.lastRootCheck = now
        refreshSchedule()
        guard present else { return schedule.next() }
        for job in schedule.due(at: now) {
            switch job {
            case .checkRoot: break  // done above
            case .retryCommit, .deletionSpell: commit(WatchBatch())
            case .saveIndex: saveIndex()
            case .pack: packWhenIdle()
            case .retryUnapplied:
                schedule.lastUnappliedTry = now
                retryUnapplied()
            }
        }
        refreshSchedule()
        return schedule.next()
    }

    /// What the schedule reads from the store and the holds.
    private func refreshSchedule() {
        schedule.indexDirty = store.indexIsDirty
        schedule.unappliedWaiting = store.hasUnappliedPaths
        if case .rootMissing = hold { schedule.rootMissing = true } else { schedule.rootMissing = false }
    }

    /// A running agent keeps the store's index in memory from here on and saves it when idle
    /// (`saveIndex`) and when it stops: a commit no longer rewrites the whole index file.
    func keepIndexInMemory() { store.deferIndexWrites = true }

    /// Saves the index when the store has been quiet for a second, at least every 30 s while
    /// changes never stop (`IdleCare` says when), and always with `now` (the agent stops).
    func saveIndex(now: Bool = false) {
        guard store.indexIsDirty else { return }
        do {
            try store.flushIndex()
            schedule.lastIndexSave = .now
            setProblem(.index, nil)
        } catch {
            let message = "cannot save the index of \(config.storePath.display): \(error). Nothing is lost (main holds every commit; the next start reads the files the index missed); it is retried. Check the disk space and permissions of the store"
            if problems[.index] != message { logger.warning("\(message)") }
            setProblem(.index, message)
        }
    }

    // MARK: peers

    enum IntegrateResult: Sendable {
        case done(SyncOutcome)
        case paused(String)
        /// The merge failed: its code from what was thrown (`SyncError(_:)`), the peer named.
        case failed(SyncError)
    }

    /// Merges the fetched `main` of `peer`: local changes first, then the merge, then the paths
    /// the apply step found changed on disk are committed as local changes.
    /// A hub's devices with new commits: those that join cleanly are merged in one step
    /// (`Store.foldJoins`, then one integrate of the fold). Nil when there was nothing to fold;
    /// the devices are merged one by one afterwards either way (what was folded is then up to date).
    func integrateFolded(hub: String, devices: [String]) async -> (peer: String, result: IntegrateResult)? {
        guard devices.count > 1, rootIsPresent() else { return nil }
        await commitPendingLocal(keepingOpen: true)
        guard let peer = try? store.foldJoins(hub: hub, devices: devices) else { return nil }
        // Events and logs name the hub: the fold's pseudo-peer is no device a user knows.
        return (peer, await integrate(peer: peer, shownAs: hub))
    }

    /// Whether the hub already holds all `main` stands for (`Store.hubHoldsMain`); false when
    /// that cannot be read (then the push goes out as usual).
    func hubHoldsMain(hub: String) -> Bool {
        (try? store.hubHoldsMain(hub: hub)) ?? false
    }

    /// `integrate` for each of these peers in turn, in one visit to the engine: a hub's round
    /// merges every device that moved, and with 100 devices a hop onto the engine's thread and
    /// back for each was a twelfth of an agent's system calls in a burst.
    func integrate(peers: [String]) async -> [IntegrateResult] {
        var results: [IntegrateResult] = []
        results.reserveCapacity(peers.count)
        for peer in peers { results.append(await integrate(peer: peer)) }
        return results
    }

    /// `shownAs`: the name events and logs give the peer (default: `peer`).
    func integrate(peer: String, shownAs: String? = nil) async -> IntegrateResult {
        defer { progress.finish(Store.mergeTask) }  // also when it fails half-way
        guard rootIsPresent() else { return .paused(DeletionHold.rootMissing(config.data).message) }
        // A peer this store holds already (most, each round, with many devices): nothing to
        // merge, so no local change to commit first.
        if hold == nil, heldDeletes.isEmpty, let same = try? store.upToDateWith(peer: peer) { return .done(same) }
        await commitPendingLocal(keepingOpen: true)
        if let hold { return .paused("merges wait while deletions are held: \(hold.message)") }
        if !heldDeletes.isEmpty {
            return .paused("merges wait until the deletion spell under way ends: \(heldDeletes.count) deleted paths go once no deletion has come for \(DeletionSpell.quiet)")
        }
        do {
            let outcome = try store.integrate(peer: peer)
            // Nothing new (most peers, most rounds, with many devices): no store care to schedule.
            guard outcome.action != .upToDate || !outcome.opened.isEmpty || !outcome.resolved.isEmpty else { return .done(outcome) }
            schedule.lastActivity = .now
            schedule.packPending = true
            careBell.ring()
            record(outcome.applied, peer: shownAs ?? peer)
            announce(outcome, peer: shownAs ?? peer)
            // A big merge's lists are gone: their pages go back before the packs are rolled up.
            if outcome.applied.touchedCount >= Store.prehashThreshold { FreeMemory.returnToSystem() }
            compactPacks()
            return .done(outcome)
        } catch {
            let typed = SyncError(error)
            return .failed(SyncError(typed.code, "cannot merge \(shownAs ?? peer): \(error)", subject: typed.subject ?? shownAs ?? peer,
                                     cause: typed.cause ?? typed))
        }
    }

    /// The events of one merge: what it wrote into the data directory, records opened and settled.
    private func announce(_ outcome: SyncOutcome, peer: String) {
        let touched = outcome.applied.touched
        if !touched.isEmpty {
            events.emit(.received(peer: peer, commit: outcome.head?.hex, paths: touched.prefix(AgentEvent.maxPaths).map(\.display),
                                  count: outcome.applied.touchedCount))
        }
        for record in outcome.opened { events.emit(.conflictOpened(id: record.id, path: record.path)) }
        for record in outcome.resolved {
            events.emit(.conflictResolved(id: record.id, path: record.path, strategy: record.resolution?.strategy, by: record.resolution?.by))
        }
        if !outcome.applied.replacedLocal.isEmpty, let kept = outcome.applied.keptCommit {
            logger.notice("\(outcome.applied.replacedLocal.count) local edit(s) replaced by \(peer)'s changes (receive-only); the local bytes are kept in the store: `git --git-dir=\(config.storePath) show --stat \(kept.hex)`")
        }
    }

    /// Idle care: one slice of loose objects into a pack, once the store has been quiet for 2 s
    /// (written beside the engine: a commit never waits for it), or every 500 commits on a
    /// device whose changes never pause that long (`IdleCare` says when). Nothing is ever removed
    /// from the store: objects only move from loose files into packs.
    private func packWhenIdle() {
        guard !schedule.packing, schedule.packPending else { return }
        schedule.commitsSincePack = 0
        schedule.packing = true
        let gitDir = config.storePath, started = ContinuousClock.now
        // The pack is written on a thread of its own (a slice takes up to a second at 100k files,
        // and a change made meanwhile must not wait for it); the engine then removes the loose
        // files it holds.
        Task {
            let written = await onOwnThread("syncagent-pack") { () -> Result<Store.WrittenLoosePack, StoreFailure> in
                do { return .success(try Store.writeLoosePack(gitDir: gitDir)) } catch { return .failure(StoreFailure("\(error)")) }
            }
            finishPacking(written, started: started)
        }
    }
    private func finishPacking(_ written: Result<Store.WrittenLoosePack, StoreFailure>, started: ContinuousClock.Instant) {
        schedule.packing = false
        defer { careBell.ring() }
        do {
            let slice = try store.finishLoosePack(try written.get())
            schedule.packPending = slice.more
            if slice.packed > 0 {
                logger.info("packed \(slice.packed) loose objects of \(config.storePath.display) in \(ContinuousClock.now - started)\(slice.more ? "; more to go" : "")")
                FreeMemory.returnToSystem()
            }
            compactPacks()  // (at rest now: also what waits to be deflated)
            setProblem(.loosePack, nil)
        } catch {
            let message = "cannot pack the loose objects of \(config.storePath.display): \(error). Nothing is lost (objects stay loose); it is retried after the next change. Check the disk space and permissions of the store"
            if problems[.loosePack] != message { logger.warning("\(message)") }
            setProblem(.loosePack, message)
            schedule.packPending = false
        }
    }

    /// Every fetch leaves one pack: roll the small ones up so that file descriptors, maps and
    /// lookups do not grow with the number of rounds. The new pack is written on a thread of its
    /// own (tens of packs after a big start-up take seconds, and commits must not wait for them);
    /// the engine then removes what it holds. A failure only costs a later retry.
    /// At rest (no commit or merge for `IdleCare.packIdle`), the roll-up also deflates what
    /// commits and fetches of many files left in stored blocks, and when there is nothing to roll
    /// up, one such pack is rewritten deflated (`Store.packToDeflate`), then the next: the time
    /// deflate takes is spent after the files reached the other devices, not before.
    private func compactPacks() {
        guard !combining else { return }
        var chosen = store.packsToCombine()
        let atRest = ContinuousClock.now - schedule.lastActivity >= IdleCare.packIdle
        if chosen.isEmpty, atRest, let pack = store.packToDeflate(judged: &deflateJudged) { chosen = [pack] }
        guard !chosen.isEmpty else { return }
        let packs = chosen
        combining = true
        let gitDir = config.storePath
        Task {
            let written = await onOwnThread("syncagent-packs") { () -> Result<String, any Error> in
                Result { try Store.writeCombinedPack(gitDir: gitDir, of: packs, deflating: atRest) }
            }
            finishCompaction(packs, written, deflated: atRest)
        }
    }
    private var combining = false
    /// Packs found not worth deflating, or written deflated by this agent (`Store.packToDeflate`).
    private var deflateJudged: Set<String> = []

    /// A failure on a helper thread, as text (errors are not Sendable).
    struct StoreFailure: Error, Sendable, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private func finishCompaction(_ packs: [FilePath], _ written: Result<String, any Error>, deflated: Bool) {
        combining = false
        do {
            let name = try written.get()
            let before = deflated ? packs.reduce(Int64(0)) { $0 + ((try? FileStat.of($1.addingToName(".pack")))??.size ?? 0) } : 0
            try store.finishCombining(packs, into: name)
            if deflated {
                deflateJudged.insert("pack-" + name)
                let dir = packs[0].removingLastComponent()
                let after = (try? FileStat.of(dir.appending("pack-\(name).pack")))??.size ?? 0
                logger.info("rewrote \(packs.count) pack(s) of \(config.storePath.display) at rest, deflated: \(before >> 10) KiB -> \(after >> 10) KiB")
            }
            logger.debug("combined \(packs.count) packs of \(config.storePath.display) into one")
            FreeMemory.returnToSystem()
            setProblem(.rollUp, nil)
            compactPacks()  // a roll-up takes at most `PackPlan.maxObjects` objects: the next ones now
        } catch {
            // A pack that could not be rewritten at rest is not tried again by this agent: the
            // next would meet the same damage or the same full disk, and the others would wait.
            if deflated { for pack in packs { deflateJudged.insert(pack.lastComponent?.string ?? "") } }
            let message = "cannot combine the pack files of \(config.storePath.display): \(error). Nothing is lost; \(deflated && packs.count == 1 ? "the pack stays as it is, and the agent tries again when it next starts" : "it is retried after the next sync"). Check the disk space and permissions of the store"
            if problems[.rollUp] != message { logger.warning("\(message)") }
            setProblem(.rollUp, message)
        }
    }

    private func record(_ report: ApplyReport, peer: String?) {
        var report = report
        if !report.localChanges.isEmpty { takeIncomingOverPowerCutLeft(&report, peer: peer) }
        if !report.localChanges.isEmpty {
            logger.info("\(report.localChanges.count) file(s) changed on disk while merging\(peer.map { " \($0)" } ?? ""); kept as local changes")
            commit(WatchBatch(paths: Set(report.localChanges)))
        }
        if !report.keptLocal.isEmpty {
            logger.warning("\(report.keptLocal.count) file(s) changed on disk while merging\(peer.map { " \($0)" } ?? ""): kept, each a conflict with the peer's version (see `syncagent conflicts`)")
        }
        for failure in report.failures.prefix(50) where problems[.apply(failure.path)] != failure.description {
            logger.warning("\(failure)")  // once per path and reason, not at every retry
        }
        var now: [ProblemKey: String] = [:]
        for path in store.unappliedPaths.prefix(50) {
            let failure = report.failures.first { $0.path == path }
            now[.apply(path)] = failure?.description
                ?? "cannot write \(path.display) into the data directory yet; it is retried"
        }
        for key in problems.keys where key.isApply && now[key] == nil { setProblem(key, nil) }
        for (key, message) in now { setProblem(key, message) }
    }

    /// New files a power cut left empty or cut short, held, that a merge brought another device's
    /// version of: that version goes on disk, and the disk's bytes are kept in the store.
    private func takeIncomingOverPowerCutLeft(_ report: inout ApplyReport, peer: String?) {
        do {
            guard let taken = try store.takeIncomingOverPowerCutLeft(report.localChanges) else { return }
            let put = Set(taken.paths).subtracting(taken.report.localChanges)
            report.localChanges.removeAll { put.contains($0) }
            report.failures += taken.report.failures
            let names = taken.paths.prefix(5).map(\.display).joined(separator: ", ") + (taken.paths.count > 5 ? ", ..." : "")
            var message = "\(taken.paths.count) new file(s) a power cut left empty or cut short in \(config.data.display) (\(names)) now hold the version \(peer.map { "\($0) brought" } ?? "the store holds") instead"
            if let kept = taken.kept { message += "; what the disk held is kept: `git --git-dir=\(config.storePath) show --stat \(kept.hex)`" }
            message += ". `syncagent history PATH` lists every version"
            logger.warning("\(message)")
            events.emit(.problem(message))
            notePowerCutLeft()
        } catch {
            logger.warning("cannot put the incoming version over files a power cut left empty: \(error); they stay on disk as they are, held")
        }
    }

    /// Updates what is known of a peer and keeps it on disk (for `status` while stopped): at once
    /// when more than its times changed, else with the next write, at most every 30 minutes, and at
    /// a clean stop (`PeerLedger.note`, `saveLedgerIfStale`).
    func notePeer(_ name: String, _ entry: PeerLedger.Entry) {
        let now = Date()
        if ledger.note(name, entry, now: now, lastSaved: ledgerSaved) {
            saveLedger(now)
        } else {
            ledgerUnsaved = true
        }
    }

    /// A write that fails leaves the times unwritten: the next note tries again.
    private func saveLedger(_ now: Date) {
        if ledger.save(state: config.state) {
            ledgerSaved = now
            ledgerUnsaved = false
        } else {
            ledgerSaved = nil
            ledgerUnsaved = true
        }
    }

    /// At a clean stop, and after a one-shot command's rounds: the times noted only in memory go
    /// to `peers.json`.
    func saveLedgerIfStale() {
        if ledgerUnsaved { saveLedger(Date()) }
    }

    // MARK: conflicts

    func resolve(targets: [RecordTarget], all: Bool, choice: ResolveChoiceArgument) async -> [ResolveResult] {
        await commitPendingLocal()
        let results = store.resolve(targets: targets, all: all, choice: choice)
        for result in results where result.error == nil {
            let record = result.id.flatMap { id in try? store.anyRecord(RecordTarget(text: id)) }
            events.emit(.conflictResolved(id: result.id ?? result.target, path: result.path ?? "",
                                          strategy: record?.resolution?.strategy, by: record?.resolution?.by ?? config.device))
        }
        return results
    }

    // MARK: held changes

    /// `syncagent held`: every change this device keeps back, with the reason.
    func heldList() -> [HeldEntry] {
        HeldEntry.list(heldDeletes: hold == nil ? [] : heldDeletes, held: store.loadHeld())
    }

    /// `syncagent send PATH... | --all`: commits the held changes at these paths (or under these
    /// directories) as they are on disk now.
    func send(paths: [FilePath], all: Bool) async -> MessageResult {
        if config.mode == .receiveOnly {
            return MessageResult(message: "not sent", error: "this device is receive-only (mode in \(config.file)): its local edits never leave it; `syncagent revert` puts the store's version back",
                                 errorCode: SyncError.Code.badConfig.rawValue)
        }
        await commitPendingLocal()
        let leftEmpty = store.powerCutLeft().filter { p in all || paths.contains { p == $0 || p.starts(with: $0) } }
        let held = store.sendable([]) + leftEmpty
        let chosen = all ? held : held.filter { h in paths.contains { h == $0 || h.starts(with: $0) } }
        if !all, chosen.isEmpty {
            let names = paths.map(\.display).joined(separator: ", ")
            return MessageResult(message: "not sent", error: "nothing is held at \(names); `syncagent held` lists what is",
                                 errorCode: SyncError.Code.noSuchPath.rawValue)
        }
        commit(WatchBatch(paths: Set(chosen)), send: Set(chosen))
        let left = Set(store.sendable([]))
        let sent = chosen.filter { !left.contains($0) }
        return MessageResult(message: "sent \(sent.count) held change\(sent.count == 1 ? "" : "s")", error: nil)
    }

    /// `syncagent revert [PATH...]` (receive-only): the store's version back at each locally edited
    /// path; the local bytes are kept in the store.
    func revert(paths: [FilePath]) async -> MessageResult {
        guard config.mode == .receiveOnly else {
            return MessageResult(message: "not reverted", error: "revert is for receive-only devices (mode = \"receive-only\" in \(config.file)); this one commits and shares its edits",
                                 errorCode: SyncError.Code.badConfig.rawValue)
        }
        await commitPendingLocal()
        let edited = store.loadHeld().values.filter { $0.reason == .localChange }.map(\.path)
        let chosen = paths.isEmpty ? edited : edited.filter { e in paths.contains { e == $0 || e.starts(with: $0) } }
        guard !chosen.isEmpty else {
            return MessageResult(message: paths.isEmpty ? "no local changes to revert" : "not reverted",
                                 error: paths.isEmpty ? nil : "no local change at \(paths.map(\.display).joined(separator: ", ")); `syncagent held` lists them",
                                 errorCode: paths.isEmpty ? nil : SyncError.Code.noSuchPath.rawValue)
        }
        do {
            let (reverted, kept) = try store.revert(chosen)
            let where_ = kept.map { "; the local bytes are kept in the store: `git --git-dir=\(config.storePath) show --stat \($0.hex)`" } ?? ""
            logger.notice("reverted \(reverted.count) local change(s)\(where_)")
            return MessageResult(message: "reverted \(reverted.count) local change\(reverted.count == 1 ? "" : "s")\(where_)", error: nil)
        } catch {
            return MessageResult(message: "not reverted", error: "cannot revert: \(SyncError(error).message). Nothing was lost",
                                 errorCode: SyncError(error).code.rawValue)
        }
    }

    /// `syncagent restore PATH [--at]`: the chosen version of PATH (every file under it, for a
    /// directory) back in the data directory, committed as a new change that syncs like any other.
    /// Files added since are removed (their versions stay in the history).
    func restore(path: FilePath, at: String?) async -> MessageResult {
        await commitPendingLocal()
        do {
            let point = try store.restorePoint(for: path, at: at)
            let changes = try store.restoreChanges(path, to: point)
            guard !changes.isEmpty else {
                return MessageResult(message: "\(path.display) already is as it was at \(point.why); nothing to restore", error: nil)
            }
            let report = try store.writeRestored(changes)
            commit(WatchBatch(paths: Set(changes.paths)))
            var message = "restored \(path.display) as of \(point.why): \(report.written) written, \(report.removed) removed"
            if report.removed > 0 { message += " (their versions stay in the store: `syncagent history PATH`)" }
            message += restoreDetails(report)
            if config.mode == .receiveOnly { message += "; this device is receive-only, so the restored files are held (`syncagent held`), not sent" }
            logger.notice("\(message)")
            return MessageResult(message: message, error: nil)
        } catch {
            // A store error names the path itself: said once.
            let why = (error as? StoreError).map { "\($0.message). \($0.hint)" } ?? SyncError(error).message
            return MessageResult(message: "not restored", error: "cannot restore \(path.display): \(why)",
                                 errorCode: SyncError(error).code.rawValue)
        }
    }

    /// `syncagent restore --deletes`: every file the deletion spell under way (or held) took, back
    /// on disk from the version `main` had when the spell began, whether its deletions were
    /// committed or not. The files that had left are added again (a change that syncs); the hold
    /// ends by itself, since nothing is deleted any more.
    func restoreDeletes() async -> MessageResult {
        await commitPendingLocal()
        // A spell that went out whole and is over (5 s without a deletion) is no longer undone here.
        let live = spell.current.map { $0.held != nil || !heldDeletes.isEmpty || ContinuousClock.now - $0.lastDeletionAt < DeletionSpell.quiet } ?? false
        guard live, let start = spell.current?.startCommit else {
            return MessageResult(message: "no deletions are held or waiting; `syncagent restore DIR --at TIME` brings a directory back as it was at a time", error: nil)
        }
        do {
            let changes = try store.missingSince(start, under: spellPaths)
            guard !changes.isEmpty else {
                return MessageResult(message: "every file there was when the deletions began is on disk; nothing to restore", error: nil)
            }
            let report = try store.writeRestored(changes)
            commit(WatchBatch(paths: Set(changes.paths)))
            var message = "restored \(report.written) file\(report.written == 1 ? "" : "s") as of \(start.prefix(12)) (when the deletions began)"
            message += restoreDetails(report)
            if hold != nil || !heldDeletes.isEmpty {
                message += "; \(heldDeletes.count) deleted paths are still missing, so deletions stay held: `syncagent held` lists them"
            }
            logger.notice("\(message)")
            return MessageResult(message: message, error: nil)
        } catch {
            let why = (error as? StoreError).map { "\($0.message). \($0.hint)" } ?? SyncError(error).message
            return MessageResult(message: "not restored", error: "cannot restore the deleted files: \(why). Nothing was lost: `syncagent restore DIR --at TIME` can bring a directory back",
                                 errorCode: SyncError(error).code.rawValue)
        }
    }

    /// What a restore's message adds: files changed meanwhile (left as they are), files not written.
    private func restoreDetails(_ report: ApplyReport) -> String {
        var text = ""
        if !report.localChanges.isEmpty {
            text += "; \(report.localChanges.count) changed on disk meanwhile and were left as they are: \(report.localChanges.prefix(5).map(\.display).joined(separator: ", "))"
        }
        if let first = report.failures.first {
            text += "; \(report.failures.count) could not be written (\(first.path.display): \(first.errno)); retried like a merge's, see `syncagent status`"
        }
        return text
    }

    /// At start-up: the data directory follows rules that changed since the last run.
    func followRules() {
        do {
            let result = try store.followRules()
            if result.written + result.removed > 0 {
                logger.notice("the [[rule]] devices lists changed: wrote \(result.written) file(s) this device now keeps, took \(result.removed) out of \(config.data.display) (they stay in the store)")
            }
            for path in result.leftAlone.prefix(20) {
                logger.warning("\(path.display) is no longer this device's to keep ([[rule]] in \(config.file)), but it differs from the store's version, so it was left in place")
            }
        } catch {
            logger.error("cannot bring the data directory in line with the [[rule]]s: \(error)")
        }
    }

    // MARK: status

    func status(pending: Int, peers: [String: PeerLedger.Entry], measureStore: Bool = true) -> StatusReport {
        var ledger = self.ledger
        for (name, entry) in peers {
            var live = entry  // the live view, with when it was last noted
            live.lastChecked = live.lastChecked ?? ledger.peers[name]?.lastChecked
            ledger.peers[name] = live
        }
        return StatusBuilder.report(config: config, store: store, running: true, pid: getpid(),
                                    pending: pending + inFlight + (hold == nil ? heldDeletes.count : 0), ledger: ledger,
                                    problems: problems.sorted { $0.key.precedes($1.key) }.map { StatusProblem($0.key.code, $0.value, subject: $0.key.subject) },
                                    heldDeletes: hold == nil ? 0 : heldDeletes.count, measureStore: measureStore)
    }
}

/// What a problem in `status` is about: one of each kind at a time, one per path for writes that wait.
enum ProblemKey: Hashable, Sendable {
    /// Committing failed (disk full, store unwritable...).
    case commit
    /// Deletions or merges held (`DeletionHold`), or the data directory gone.
    case hold
    /// The index could not be saved or read.
    case index
    /// A slice of loose objects could not be packed.
    case loosePack
    /// Packs could not be rolled up.
    case rollUp
    /// New files a power cut left empty, kept back.
    case powerCut
    /// An incoming version that cannot be written at this path yet.
    case apply(FilePath)

    var isApply: Bool { if case .apply = self { true } else { false } }

    /// What kind of problem `status` calls it.
    var code: StatusProblem.Code {
        switch self {
        case .commit: .commit
        case .hold: .hold
        case .index: .index
        case .loosePack, .rollUp: .packing
        case .powerCut: .powerCut
        case .apply: .apply
        }
    }

    /// The path it is about, as messages show it.
    var subject: String? { if case .apply(let path) = self { path.display } else { nil } }

    /// The order `status` lists them in: the store's problems first, then paths in byte order.
    func precedes(_ other: ProblemKey) -> Bool {
        switch (self, other) {
        case (.apply(let a), .apply(let b)): a.precedesInBytes(b)
        case (.apply, _): false
        case (_, .apply): true
        default: rank < other.rank
        }
    }

    private var rank: Int {
        switch self {
        case .commit: 0
        case .hold: 1
        case .index: 2
        case .loosePack: 3
        case .rollUp: 4
        case .powerCut: 5
        case .apply: 6
        }
    }
}
