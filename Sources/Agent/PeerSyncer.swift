import Foundation
import Git
import Logging
import Synchronization
import SyncCore
import SystemPackage
import Watcher

/// Keeps one peer in sync: fetch (on its own thread, with a timeout), then merge through the engine.
/// Wakes on the peer's ref changes (local peers, through inotify), on `poll_seconds`, or on `sync`.
final class PeerSyncer: Sendable {
    struct State: Sendable {
        var reachable: Bool?
        var lastSync: Date?
        var lastError: String?
        var rounds = 0
        var inProgress = false
        /// Reachability last told as an event (nil: not yet this run).
        var announced: Bool?
    }

    let link: PeerLink
    let doorbell = Doorbell()
    private let state = Mutex(State())
    private let config: Config
    private let engine: SyncEngine
    private let logger: Logger
    private let fetchTimeout: Duration = .seconds(20)
    private let maxBackoff: Duration = .seconds(60)
    /// Abandoned fetches whose thread is still blocked in libgit2 (it has no I/O timeout).
    private let stuck = Mutex<[FetchRunner.Attempt]>([])

    init(link: PeerLink, config: Config, engine: SyncEngine, logger: Logger, known: PeerLedger.Entry?) {
        self.link = link
        self.config = config
        self.engine = engine
        self.logger = logger
        if let known {
            state.withLock {
                $0.reachable = known.reachable
                $0.lastSync = known.lastSync.flatMap { ISO8601DateFormatter().date(from: $0) }
                $0.lastError = known.lastError
            }
        }
    }

    var snapshot: State { state.withLock { $0 } }

    var ledgerEntry: PeerLedger.Entry {
        let s = snapshot
        return PeerLedger.Entry(lastSync: s.lastSync.map { ISO8601DateFormatter().string(from: $0) },
                                reachable: s.reachable, lastError: s.lastError)
    }

    /// Runs until the task is cancelled.
    func run() async {
        var backoff: Duration = .seconds(1)
        var refWatcher: Watcher?
        while !Task.isCancelled {
            if refWatcher == nil { refWatcher = watchRefs() }
            let ok = await round() == nil
            backoff = ok ? .seconds(1) : min(backoff * 2, maxBackoff)
            let wait = ok ? Duration.seconds(link.pollSeconds) : min(backoff, .seconds(link.pollSeconds))
            await doorbell.wait(upTo: wait)
        }
        refWatcher?.stop()
    }

    /// Waits until a sync round that started after this call has finished; returns its error, if any.
    func syncNow(timeout: Duration = .seconds(90)) async -> String? {
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

    /// One fetch + merge; nil when it succeeded, else what went wrong.
    func round() async -> String? {
        state.withLock { $0.inProgress = true }
        defer { state.withLock { $0.inProgress = false } }
        let blocked = stuck.withLock { list -> Int in
            list.removeAll { $0.finished.load(ordering: .acquiring) }
            return list.count
        }
        if blocked >= 3 {
            return await finish(error: "\(blocked) fetches from \(link.fetchURL) are still stuck; waiting for one to give up. Check that the peer's host is up and reachable.",
                                unreachable: true)
        }
        let attempt = FetchRunner.Attempt()
        do {
            if link.localGitDir == nil { try await FetchRunner.probe(url: link.fetchURL, timeout: .seconds(5)) }
            try await FetchRunner.fetch(gitDir: config.storePath, data: config.data, peer: link.name,
                                        url: link.fetchURL, localGitDir: link.localGitDir,
                                        timeout: fetchTimeout, attempt: attempt)
        } catch {
            // Only a fetch abandoned after its timeout can still have a thread blocked in libgit2. A
            // probe that failed started none: counting it as stuck made three refused connections
            // stop every later retry of that peer.
            if error is FetchRunner.Abandoned, !attempt.finished.load(ordering: .acquiring) {
                stuck.withLock { $0.append(attempt) }
            }
            return await finish(error: describe(fetchError: error), unreachable: true)
        }
        state.withLock { $0.reachable = true }
        switch await engine.integrate(peer: link.name) {
        case .done(let outcome):
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
            }
            return await finish(error: nil, unreachable: false)
        case .paused(let why):
            return await finish(error: why, unreachable: false)
        case .failed(let why):
            return await finish(error: why, unreachable: false)
        }
    }

    /// Ends a round: notes the error (logged once per distinct message), persists what is known.
    private func finish(error: String?, unreachable: Bool) async -> String? {
        let (first, wasReachable) = state.withLock { s -> (Bool, Bool?) in
            let changed = s.lastError != error
            let was = s.announced
            s.lastError = error
            if unreachable { s.reachable = false }
            s.announced = s.reachable
            s.rounds += 1
            return (changed, was)
        }
        let now = snapshot.reachable
        if let now, now != wasReachable {
            engine.events.emit(.peer(link.name, reachable: now, error: now ? nil : error))
        }
        if first, let error { logger.warning("peer \(link.name): \(error)") }
        await engine.notePeer(link.name, ledgerEntry)
        return error
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
