import FileSystem
import Foundation
import Git
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
actor SyncEngine {
    private nonisolated let executor: ThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let config: Config
    private let store: Store
    private let logger: Logger
    private let guardRule: DeletionGuard
    /// The local watcher, when an agent runs (nil for one-shot commands: they scan instead).
    private var watcher: Watcher?
    private var ledger: PeerLedger
    /// Problems `status` shows until they go away, by topic.
    private var problems: [String: String] = [:]
    /// Deleted paths held for confirmation (`send --deletes`), and why.
    private var heldDeletes: Set<FilePath> = []
    private var hold: DeletionHold?
    /// The data directory's identity, to tell "moved away and back" from "replaced".
    private var rootIdentity: (device: UInt64, inode: UInt64)?
    /// A batch whose commit failed (disk full, ...), retried by `tick`.
    private var failedBatch: Set<FilePath> = []
    private var ticks = 0
    /// Paths handed over but not committed yet, for `status.pending`.
    private var inFlight = 0

    init(config: Config, store: sending Store, logger: Logger) {
        executor = ThreadExecutor(name: "syncagent-engine")
        self.config = config
        self.store = store
        self.logger = logger
        guardRule = DeletionGuard(settings: config.safety)
        ledger = PeerLedger.load(state: config.state)
        if let stat = try? FileStat.of(config.data) { rootIdentity = (stat.device, stat.inode) }
    }

    func attach(_ watcher: Watcher) { self.watcher = watcher }

    // MARK: local changes

    /// Commits one batch of changed paths (a full scan when `rescan`), holding accidental
    /// deletions back (SPEC "Safety holds").
    func commit(_ batch: WatchBatch, confirmDeletes: Bool = false) {
        var paths = batch.paths.union(failedBatch)
        failedBatch = []
        inFlight = paths.count
        defer { inFlight = 0 }
        guard rootIsPresent() else {
            failedBatch = paths  // kept for when the directory is back
            return
        }
        do {
            if batch.rescan { paths.formUnion(try store.changedSinceLastCommit()) }
            if !confirmDeletes {
                paths.formUnion(heldDeletes)
                if try holdDeletions(among: paths) {
                    paths.subtract(heldDeletes)
                } else if !heldDeletes.isEmpty {
                    releaseHold()  // under the threshold now, or the files came back
                }
            } else {
                paths.formUnion(heldDeletes)
                releaseHold()
            }
            let outcome = try store.commit(paths: paths)
            problems["commit"] = nil
            for (path, kind) in outcome.skipped {
                logger.warning("skipping \(kind) \(config.data.pushing(path).display): only regular files and symbolic links are synced")
            }
            if let id = outcome.commit {
                logger.info("committed \(id.hex.prefix(12)): \(outcome.summary.message(device: config.device, limit: 0).split(separator: "\n").first ?? "")")
            }
            if !outcome.retry.isEmpty { watcher?.report(outcome.retry) }
        } catch {
            let message = "cannot commit changes in \(config.data.display) into \(config.storePath.display): \(error). Nothing is lost: the files stay as they are and the commit is retried"
            if problems["commit"] != message { logger.error("\(message)") }
            problems["commit"] = message
            failedBatch = paths
        }
    }

    /// Applies the deletion guard to these paths; true (and `heldDeletes` set) when their
    /// deletions must wait for `send --deletes`.
    private func holdDeletions(among paths: Set<FilePath>) throws -> Bool {
        let gone = try store.deletions(among: paths)
        guard !gone.paths.isEmpty else { return false }
        let empty = ((try? Directory.entries(of: config.data)) ?? []).isEmpty
        guard let hold = guardRule.check(root: config.data, deleting: gone.files, tracked: try store.trackedCount(),
                                         rootIsEmpty: empty) else { return false }
        if self.hold == nil { logger.warning("\(hold.message)") }
        self.hold = hold
        problems["hold"] = hold.message
        heldDeletes = gone.paths
        return true
    }

    private func releaseHold() {
        if hold != nil { logger.notice("deletions are no longer held") }
        hold = nil
        heldDeletes = []
        problems["hold"] = nil
    }

    /// Whether the data directory is there; while it is not, nothing is committed or merged.
    private func rootIsPresent() -> Bool {
        guard let stat = try? FileStat.of(config.data), stat.kind == .directory else {
            let hold = DeletionHold.rootMissing(config.data)
            if self.hold != hold { logger.warning("\(hold.message)") }
            self.hold = hold
            problems["hold"] = hold.message
            return false
        }
        if case .rootMissing = hold {
            logger.notice("the data directory \(config.data.display) is back; rescanning it")
            hold = nil
            problems["hold"] = nil
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
    private func commitPendingLocal() async {
        if let watcher {
            let batch = await watcher.drain()
            if !batch.isEmpty || !failedBatch.isEmpty { commit(batch) }
        } else {
            commit(WatchBatch(rescan: true))
        }
    }

    /// `syncagent send --deletes`: commits the held deletions.
    func confirmDeletes() async -> String {
        guard rootIsPresent() else { return "not sent: \(DeletionHold.rootMissing(config.data).message)" }
        await commitPendingLocal()
        let count = heldDeletes.count
        commit(WatchBatch(paths: heldDeletes), confirmDeletes: true)
        return count == 0 ? "no deletions were held" : "sent \(count) held deletion\(count == 1 ? "" : "s")"
    }

    /// The start-up commit: what changed while the agent was stopped, in chunks, so a stop request
    /// is heard between them. The deletion guard sees the whole set first.
    func commitStartupChanges(stopping: @Sendable () -> Bool, chunk: Int = 5000) {
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
        let changed: [FilePath]
        do {
            changed = Array(try store.changedSinceLastCommit()).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        } catch {
            logger.error("cannot scan \(config.data.display) for changes made while stopped: \(error)")
            return
        }
        guard rootIsPresent() else { return }
        _ = try? holdDeletions(among: Set(changed))  // the guard sees the whole set, not chunks
        let rest = changed.filter { !heldDeletes.contains($0) }
        var start = 0
        while start < rest.count, !stopping() {
            let end = min(start + chunk, rest.count)
            commit(WatchBatch(paths: Set(rest[start..<end])))
            start = end
        }
        if start < rest.count {
            logger.notice("stopping: \(rest.count - start) changes made while stopped are left for the next start")
        }
    }

    /// Periodic care: notices the data directory coming back, retries a failed commit and paths a
    /// merge could not write.
    func tick() {
        guard rootIsPresent() else { return }
        if !failedBatch.isEmpty { commit(WatchBatch()) }
        ticks += 1
        guard ticks % 5 == 0, !store.unappliedPaths.isEmpty else { return }  // unwritten paths: every 5 s
        do {
            let report = try store.retryUnapplied()
            record(report, peer: nil)
        } catch {
            logger.debug("retrying unwritten paths failed: \(error)")
        }
    }

    // MARK: peers

    enum IntegrateResult: Sendable {
        case done(SyncOutcome)
        case paused(String)
        case failed(String)
    }

    /// Merges the fetched `main` of `peer`: local changes first, then the merge, then the paths
    /// the apply step found changed on disk are committed as local changes.
    func integrate(peer: String) async -> IntegrateResult {
        guard rootIsPresent() else { return .paused(DeletionHold.rootMissing(config.data).message) }
        await commitPendingLocal()
        if let hold { return .paused("merges wait while deletions are held: \(hold.message)") }
        if !heldDeletes.isEmpty {
            return .paused("merges wait while \(heldDeletes.count) deletions are held; confirm them with `syncagent send --deletes` or put the files back")
        }
        do {
            let outcome = try store.integrate(peer: peer)
            record(outcome.applied, peer: peer)
            compactPacks()
            return .done(outcome)
        } catch {
            return .failed("cannot merge \(peer): \(error)")
        }
    }

    /// Every fetch leaves one pack: roll the small ones up so that file descriptors, maps and
    /// lookups do not grow with the number of rounds. A failure only costs a later retry.
    private func compactPacks() {
        do {
            let combined = try store.compactPacks()
            if combined > 0 {
                logger.debug("combined \(combined) packs of \(config.storePath.display) into one")
                FreeMemory.returnToSystem()
            }
            problems["packs"] = nil
        } catch {
            let message = "cannot combine the pack files of \(config.storePath.display): \(error). Nothing is lost; it is retried after the next sync. Check the disk space and permissions of the store"
            if problems["packs"] != message { logger.warning("\(message)") }
            problems["packs"] = message
        }
    }

    private func record(_ report: ApplyReport, peer: String?) {
        if !report.localChanges.isEmpty {
            logger.info("\(report.localChanges.count) file(s) changed on disk while merging\(peer.map { " \($0)" } ?? ""); kept as local changes")
            commit(WatchBatch(paths: Set(report.localChanges)))
        }
        if !report.keptLocal.isEmpty {
            logger.warning("\(report.keptLocal.count) file(s) changed on disk while merging\(peer.map { " \($0)" } ?? ""): kept, each a conflict with the peer's version (see `syncagent conflicts`)")
        }
        for failure in report.failures.prefix(50) where problems["apply:\(failure.path.display)"] != failure.description {
            logger.warning("\(failure)")  // once per path and reason, not at every retry
        }
        for key in problems.keys where key.hasPrefix("apply:") { problems[key] = nil }
        for path in store.unappliedPaths.prefix(50) {
            let failure = report.failures.first { $0.path == path }
            problems["apply:\(path.display)"] = failure?.description
                ?? "cannot write \(path.display) into the data directory yet; it is retried"
        }
    }

    /// Updates what is known of a peer and keeps it on disk (for `status` while stopped).
    func notePeer(_ name: String, _ entry: PeerLedger.Entry) {
        guard ledger.peers[name] != entry else { return }
        ledger.peers[name] = entry
        ledger.save(state: config.state)
    }

    // MARK: conflicts

    func resolve(targets: [RecordTarget], all: Bool, choice: ResolveChoiceArgument) async -> [ResolveResult] {
        await commitPendingLocal()
        return store.resolve(targets: targets, all: all, choice: choice)
    }

    // MARK: status

    func status(pending: Int, peers: [String: PeerLedger.Entry]) -> StatusReport {
        var ledger = self.ledger
        for (name, entry) in peers { ledger.peers[name] = entry }
        return StatusBuilder.report(config: config, store: store, running: true, pid: getpid(),
                                    pending: pending + inFlight, ledger: ledger,
                                    problems: problems.sorted { $0.key < $1.key }.map(\.value),
                                    held: heldDeletes.count)
    }
}
