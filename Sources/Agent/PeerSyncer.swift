import Foundation
import Git
import Logging
import Synchronization
import SyncCore
import SystemPackage
import Watcher

/// Keeps one peer in sync: fetch (on its own thread, with a timeout), then merge on the store actor.
/// Wakes on the peer's ref changes (local peers, through inotify), on `poll_seconds`, or on `sync`.
final class PeerSyncer: Sendable {
    struct State: Sendable {
        var reachable: Bool?
        var lastSync: Date?
        var lastError: String?
        var rounds = 0
        var inProgress = false
    }

    let link: PeerLink
    let doorbell = Doorbell()
    private let state = Mutex(State())
    private let config: Config
    private let store: StoreActor
    private let logger: Logger
    private let flushLocal: @Sendable () async -> Void
    private let fetchTimeout: Duration = .seconds(20)
    private let maxBackoff: Duration = .seconds(60)

    init(link: PeerLink, config: Config, store: StoreActor, logger: Logger,
         flushLocal: @escaping @Sendable () async -> Void) {
        self.link = link
        self.config = config
        self.store = store
        self.logger = logger
        self.flushLocal = flushLocal
    }

    var snapshot: State { state.withLock { $0 } }

    /// Runs until the task is cancelled.
    func run() async {
        var backoff: Duration = .seconds(1)
        var refWatcher: Watcher?
        // Abandoned fetches whose thread is still blocked in libgit2 (it has no I/O timeout); a few
        // may pile up against a peer that accepts and never answers, then we wait for one to end.
        var stuck: [FetchRunner.Attempt] = []
        while !Task.isCancelled {
            if refWatcher == nil { refWatcher = watchRefs() }
            var ok = false
            stuck.removeAll { $0.finished.load(ordering: .acquiring) }
            if stuck.count >= 3 {
                record(error: "\(stuck.count) fetches from \(link.fetchURL) are still stuck; waiting for one to give up",
                       unreachable: true)
            } else {
                let attempt = FetchRunner.Attempt()
                ok = await syncOnce(attempt: attempt)
                if !attempt.finished.load(ordering: .acquiring) { stuck.append(attempt) }
            }
            backoff = ok ? .seconds(1) : min(backoff * 2, maxBackoff)
            let wait = ok ? Duration.seconds(link.pollSeconds) : min(backoff, .seconds(link.pollSeconds))
            await doorbell.wait(upTo: wait)
        }
        refWatcher?.stop()
    }

    /// Waits until a sync round that started after this call has finished; returns its error, if any.
    func syncNow(timeout: Duration = .seconds(60)) async -> String? {
        // A round already under way may have fetched before our changes: wait for the one after it.
        let target = state.withLock { $0.rounds + ($0.inProgress ? 2 : 1) }
        doorbell.ring()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let s = snapshot
            if s.rounds >= target { return s.lastError }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return "no sync round with \(link.name) finished within \(timeout)"
    }

    private func syncOnce(attempt: FetchRunner.Attempt) async -> Bool {
        state.withLock { $0.inProgress = true }
        defer { state.withLock { $0.inProgress = false } }
        do {
            if link.localGitDir == nil { try FetchRunner.probe(url: link.fetchURL, timeout: .seconds(5)) }
            try await FetchRunner.fetch(gitDir: config.storePath, data: config.data, peer: link.name,
                                        url: link.fetchURL, timeout: fetchTimeout, attempt: attempt)
        } catch {
            record(error: describe(fetchError: error), unreachable: true)
            return false
        }
        state.withLock { $0.reachable = true }
        for _ in 0..<3 {
            await flushLocal()
            do {
                let outcome = try await store.integrate(peer: link.name)
                switch outcome.action {
                case .upToDate: break
                case .fastForward: logger.info("updated from \(link.name) to \(outcome.head?.hex.prefix(12) ?? "-")")
                case .adoptedEqualTree: logger.debug("adopted \(link.name)'s equal commit")
                case .merged: logger.info("merged \(link.name): \(outcome.head?.hex.prefix(12) ?? "-")")
                }
                for note in outcome.notes { logger.warning("\(note)") }
                for record in outcome.newConflicts where record.status == .resolved {
                    logger.info("conflict \(record.id) at \(record.path) resolved automatically by \(record.resolution?.strategy ?? "?")")
                }
                for record in outcome.newConflicts where record.status == .open {
                    logger.warning("conflict \(record.id): \(record.kind.rawValue) \(record.path); holding \(record.current ?? "-")'s version. See `syncagent conflicts`.")
                }
                state.withLock {
                    $0.lastSync = Date()
                    $0.lastError = nil
                    $0.rounds += 1
                }
                return true
            } catch is UnseenChanges {
                logger.debug("local changes arrived during the merge with \(link.name); committing them first")
                try? await Task.sleep(for: .milliseconds(Int64(config.watch.debounceMs) + 50))
            } catch let error as GitError where error.code == GitError.Code.modified {
                // A file changed on disk (or HEAD moved) after the merge was computed: commit it, retry.
                logger.debug("local changes arrived during the merge with \(link.name); committing them first")
                try? await Task.sleep(for: .milliseconds(Int64(config.watch.debounceMs) + 50))
            } catch {
                record(error: "cannot merge \(link.name): \(error)", unreachable: false)
                return false
            }
        }
        record(error: "local files kept changing while merging \(link.name); will retry", unreachable: false)
        return false
    }

    /// Notes a failed round; `unreachable` says whether the peer itself could not be reached (a merge
    /// problem happens after a successful fetch, so the peer stays reachable).
    private func record(error: String, unreachable: Bool) {
        let first = state.withLock { s -> Bool in
            let changed = s.lastError != error
            s.lastError = error
            if unreachable { s.reachable = false }
            s.rounds += 1
            return changed
        }
        if first { logger.warning("peer \(link.name): \(error)") }
    }

    private func describe(fetchError error: any Error) -> String {
        if let git = error as? GitError {
            return "cannot fetch from \(link.configuredURL): \(git.message). Check the peer's url in \(config.file) and that its store exists."
        }
        return "\(error)"
    }

    /// For a peer on this machine: an inotify watch on its refs, so its commits are seen at once.
    private func watchRefs() -> Watcher? {
        guard let gitDir = link.localGitDir else { return nil }
        // Its own refs only (main and the conflict records): never refs/remotes, which changes when
        // it fetches from us, or two idle agents would wake each other for ever.
        guard let watcher = try? Watcher(root: gitDir.appending("refs"), quiet: .milliseconds(10),
                                         maxDelay: .milliseconds(50),
                                         ignore: { $0.string == "remotes" || $0.string == "tags" }) else { return nil }
        let bell = doorbell
        watcher.start()
        Task {
            for await _ in watcher.batches { bell.ring() }
        }
        return watcher
    }
}
