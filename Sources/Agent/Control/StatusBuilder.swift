import SystemPackage
import FileSystem
import FoundationEssentials
import Glibc
import SyncCore

/// Builds `status` the same way whether the agent runs (the engine passes its live view) or not
/// (the CLI opens the store and reads what the agent left on disk): `lastSync`, `ahead`, `behind`
/// and `conflicts.open` come from the store and the peer ledger either way.
public enum StatusBuilder {
    static func report(config: Config, store: Store?, running: Bool, pid: Int32?, pending: Int?,
                       ledger: PeerLedger, problems: [StatusProblem], heldDeletes: Int, measureStore: Bool = true) -> StatusReport {
        var problems = problems
        var head: String?
        var open = 0
        var held = heldDeletes
        var localChanges = 0
        if let store {
            let list = store.loadHeld()
            held += list.count
            localChanges = list.values.filter { $0.reason == .localChange }.count
            do {
                head = try store.headID()?.hex
                open = try store.conflicts().count
            } catch {
                problems.append(StatusProblem(.store, "cannot read the store \(config.storePath): \(error)", subject: config.storePath.display))
            }
        }
        var peers: [StatusReport.Peer] = []
        let pauses = PauseState.load(state: config.state)
        for peer in config.peers {
            let known = ledger.peers[peer.name]
            let counts = (try? store?.aheadBehind(peer: peer.name)) ?? nil
            var entry = StatusReport.Peer(name: peer.name, url: peer.url, reachable: known?.reachable,
                                          lastSync: known?.lastSync, ahead: counts?.ahead ?? 0, behind: counts?.behind ?? 0,
                                          lastError: known?.lastError)
            entry.lastChecked = known?.lastChecked
            entry.errorCode = known?.lastError == nil ? nil : known?.errorCode
            entry.notify = peer.notify == .poll ? nil : known?.notify
            if pauses.isPaused(peer.name) { entry.paused = true }
            guard peer.hub else {
                peers.append(entry)
                continue
            }
            entry.ahead = nil
            entry.behind = nil
            entry.lastPush = known?.lastPush
            entry.lastFetch = known?.lastSync
            peers.append(entry)
            // Every device seen through the hub at the last fetch.
            for device in (try? store?.hubDevices(hub: peer.name)) ?? [] {
                let name = Store.hubPeer(peer.name, device: device)
                let counts = (try? store?.aheadBehind(peer: name)) ?? nil
                var seen = StatusReport.Peer(name: device, url: peer.url, reachable: known?.reachable,
                                             lastSync: known?.lastSync,
                                             ahead: counts?.ahead ?? 0, behind: counts?.behind ?? 0, lastError: nil)
                seen.via = peer.name
                seen.lastChecked = known?.lastChecked
                seen.lastSeen = (try? store?.tipTime(peer: name)).flatMap { $0 }
                peers.append(seen)
            }
        }
        var report = StatusReport(device: config.device, running: running, pid: pid, data: config.data.string,
                                  store: config.storePath.string, head: head, pending: pending, held: held,
                                  peers: peers, conflicts: .init(open: open), problems: problems)
        report.mode = config.mode.rawValue
        report.localChanges = localChanges
        if measureStore { report.storeBytes = store?.diskBytes() }  // a walk of the store
        return report
    }

    /// The agent is stopped: open the store and count what start-up will commit.
    public static func offline(_ config: Config) -> StatusReport {
        var problems: [StatusProblem] = []
        var store: Store?
        var pending: Int?
        guard (try? FileStat.of(config.data))??.kind == .directory else {
            // The store cannot be opened onto a data directory that is not there: say that, not
            // that the store is damaged.
            // Nothing ever committed: there is nothing to delete, only a directory to make.
            let committed = RefSnapshot.read(gitDir: config.storePath).refs[Array(Store.mainRef.utf8)] != nil
            let message = committed ? DeletionHold.rootMissing(config.data).message
                : "the data directory \(config.data.display) does not exist, and nothing was ever committed from it; "
                    + "create it (`mkdir -p \(config.data.display)`) or fix `data` in \(config.file), then start the agent"
            problems.append(StatusProblem(committed ? .hold : .other, message, subject: config.data.display))
            return report(config: config, store: nil, running: false, pid: nil, pending: nil,
                          ledger: PeerLedger.load(state: config.state), problems: problems, heldDeletes: 0)
        }
        do {
            let s = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
            s.policy = config.policy
            // An index file behind `main` (the agent died before saving it) is put back in memory
            // only (nothing is written without the lock), so `pending` counts real changes alone.
            s.deferIndexWrites = true
            let putBack = (try? s.reconcileIndexWithHead()) ?? []
            let same = (try? s.holdingIndexVersion(putBack)) ?? []
            // What start-up will commit: changed paths the rules neither keep local nor hold back.
            let held = s.loadHeld()
            let policy = config.policy
            let candidates = try s.changedSinceLastCommit().filter { policy.materializes($0) && held[$0] == nil && !same.contains($0) }
            // (A file committed in the tick it changed has no stat data to compare: read it.)
            let changed = candidates.subtracting((try? s.unchangedWithoutStatData(among: candidates)) ?? [])
            pending = changed.count
            store = s
            // What a running agent would report, from what is on disk.
            problems += s.stuckPaths().map { StatusProblem(.apply, $0.description, subject: $0.path.display) }
            let gone = try s.deletions(among: changed)
            let empty = ((try? Directory.entries(of: config.data)) ?? []).isEmpty
            if let hold = DeletionGuard(settings: config.safety).check(root: config.data, deleting: gone.files,
                                                                            tracked: try s.trackedCount(), rootIsEmpty: empty) {
                problems.append(StatusProblem(.hold, "at its next start the agent holds these deletions: " + hold.message, subject: config.data.display))
            }
        } catch {
            let typed = SyncError(error)
            problems.append(StatusProblem(.store, "\(error)", subject: typed.subject))
        }
        return report(config: config, store: store, running: false, pid: nil, pending: pending,
                      ledger: PeerLedger.load(state: config.state), problems: problems, heldDeletes: 0)
    }
}
