import FileSystem
import Foundation
import Git
import Logging
import ServiceLifecycle
import Synchronization
import SyncCore
import SystemPackage
import Watcher

/// The long-running agent for one device: watches the data directory and commits every change.
/// Build it with `prepare`, which refuses to start (and changes nothing) on any problem.
public final class AgentService: Service, Sendable {
    public let config: Config
    private let logger: Logger
    private let lock: AgentLock
    private let store: StoreActor
    private let watcher: Watcher
    private let control: ControlServer?
    /// Paths handed over by the watcher and not yet committed.
    private let inFlight = InFlight()
    private let problems: ProblemList
    private let peers: [PeerSyncer]

    private init(config: Config, logger: Logger, lock: AgentLock, store: StoreActor, watcher: Watcher,
                 control: ControlServer?, problems: ProblemList) {
        self.config = config
        self.logger = logger
        self.lock = lock
        self.store = store
        self.watcher = watcher
        self.control = control
        self.problems = problems
        let logger = self.logger
        var syncers: [PeerSyncer] = []
        for peer in config.peers {
            let link = PeerLink(peer, configFile: config.file)
            syncers.append(PeerSyncer(link: link, config: config, store: store,
                                      logger: logger,
                                      flushLocal: { [watcher, inFlight] in
                                          await Self.waitForLocalCommits(watcher: watcher, inFlight: inFlight)
                                      }))
        }
        peers = syncers
    }

    /// Commits what the watcher holds now, and waits (briefly) until it is committed.
    private static func waitForLocalCommits(watcher: Watcher, inFlight: InFlight) async {
        watcher.flush()
        let deadline = ContinuousClock.now + .seconds(2)
        try? await Task.sleep(for: .milliseconds(5))
        while ContinuousClock.now < deadline,
              watcher.pendingCount > 0 || inFlight.count > 0 {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Checks the data directory, takes the state directory's lock, clears locks a killed agent left,
    /// opens (or creates) the store and installs the watches.
    /// - Parameter resolvers: conflict resolvers of a program that embeds the agent, asked before
    ///   the configured `[[resolver]]` strategies.
    public static func prepare(config: Config, logger: Logger, resolvers: [any ConflictResolver] = []) throws -> AgentService {
        guard let dataStat = try? FileStat.of(config.data), dataStat.kind == .directory else {
            throw AgentError("the data directory \(config.data) does not exist or is not a directory",
                             hint: "create it, or fix `data` in \(config.file)")
        }
        do {
            try FileManager.default.createDirectory(atPath: config.state.string, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw AgentError("cannot create the state directory \(config.state): \(error.localizedDescription)",
                             hint: "fix `state` in \(config.file) or the directory's permissions")
        }
        let lock = try AgentLock.acquire(config.lockPath)
        for stale in Store.clearStaleLocks(gitDir: config.storePath) {
            logger.warning("removed a stale lock left by a stopped agent", metadata: ["file": "\(stale)"])
        }
        let store = try Store.openOrCreate(device: config.device, data: config.data, gitDir: config.storePath)
        store.rules = config.resolvers
        store.resolvers = resolvers
        let problems = ProblemList()
        let problemLogger = logger
        let watcher = try Watcher(
            root: config.data,
            quiet: .milliseconds(config.watch.debounceMs),
            maxDelay: .milliseconds(config.watch.maxDelayMs),
            ignore: { PathRules.isIgnored($0) },
            onProblem: { problem in
                switch problem.kind {
                case .recovered:
                    problemLogger.notice("\(problem.message)")
                    problems.clear()
                default:
                    problemLogger.error("\(problem.message)")
                    problems.add(problem.message)
                }
            })
        var control: ControlServer?
        do {
            control = try ControlServer(path: config.socketPath)
        } catch {
            logger.warning("no control socket: \(error); `syncagent status` will show less detail")
        }
        return AgentService(config: config, logger: logger, lock: lock, store: StoreActor(store),
                            watcher: watcher, control: control, problems: problems)
    }

    public func run() async throws {
        logger.info("watching \(config.data.display)", metadata: [
            "device": "\(config.device)", "store": "\(config.storePath)", "pid": "\(getpid())",
        ])
        control?.start(handler: { [self] request in await self.answer(request) }, logger: logger)
        let stopping = Flag()
        await withGracefulShutdownHandler {
            // What changed while the agent was stopped (the watches are already in place, so nothing
            // that changes from now on is missed), in chunks so that a stop request is heard between
            // them; what is left is committed at the next start.
            await commitStartupChanges(stopping: stopping)
            watcher.start()
            await withTaskGroup(of: Void.self) { group in
                for peer in peers {
                    group.addTask { await peer.run() }
                }
                for await batch in watcher.batches {
                    await commit(batch)
                }
                group.cancelAll()
                for peer in peers { peer.doorbell.ring() }
            }
        } onGracefulShutdown: { [watcher] in
            stopping.set()
            watcher.stop()
        }
        control?.stop()
        logger.info("stopped; every change seen is committed")
    }

    private func commitStartupChanges(stopping: Flag, chunk: Int = 5000) async {
        let changed: [FilePath]
        do {
            changed = Array(try await store.changedSinceLastCommit())
        } catch {
            logger.error("cannot scan \(config.data.display) for changes made while stopped: \(error)")
            return
        }
        var start = 0
        while start < changed.count, !stopping.isSet {
            let end = min(start + chunk, changed.count)
            await commit(WatchBatch(paths: Set(changed[start..<end])))
            start = end
        }
        if start < changed.count {
            logger.notice("stopping: \(changed.count - start) changes made while stopped are left for the next start")
        }
    }

    private func commit(_ batch: WatchBatch) async {
        inFlight.set(batch.paths.count)
        defer { inFlight.set(0) }
        do {
            let outcome = try await store.commit(paths: batch.paths, fullScan: batch.rescan)
            for (path, kind) in outcome.skipped {
                logger.warning("skipping \(kind) \(config.data.pushing(path).display): only regular files and symbolic links are synced")
            }
            if let id = outcome.commit {
                logger.info("committed \(id.hex.prefix(12)): \(outcome.summary.message(device: config.device, limit: 0).split(separator: "\n").first ?? "")")
            }
            if !outcome.retry.isEmpty {
                logger.debug("files changed while being read; committing them again", metadata: ["count": "\(outcome.retry.count)"])
                watcher.report(outcome.retry)
            }
        } catch {
            logger.error("commit failed: \(error). The changes stay pending and are retried in 2 s.")
            try? await Task.sleep(for: .seconds(2))
            watcher.report(batch.paths)
            if batch.rescan { watcher.requestRescan() }
        }
    }

    private func answer(_ request: ControlRequest) async -> [UInt8] {
        switch request.command {
        case "status":
            let report = await status()
            return Array((try? JSONEncoder().encode(report)) ?? Data())
        case "resolve":
            await Self.waitForLocalCommits(watcher: watcher, inFlight: inFlight)
            let results = await store.resolve(targets: request.targets ?? [],
                                              choice: request.choice ?? .init(keep: nil, withFile: nil, delete: false))
            for r in results {
                if let error = r.error { logger.warning("resolve \(r.target): \(error)") }
                else { logger.info("resolved \(r.id ?? r.target) (\(r.path ?? ""))") }
            }
            for peer in peers { peer.doorbell.ring() }
            return Array((try? JSONEncoder().encode(results)) ?? Data())
        case "sync":
            var results: [SyncResult] = []
            for peer in peers where request.peer == nil || request.peer == peer.link.name {
                results.append(SyncResult(peer: peer.link.name, error: await peer.syncNow()))
            }
            if let wanted = request.peer, results.isEmpty {
                results.append(SyncResult(peer: wanted, error: "no peer named '\(wanted)' in \(config.file)"))
            }
            return Array((try? JSONEncoder().encode(results)) ?? Data())
        default:
            return Array(#"{"error":"unknown command"}"#.utf8)
        }
    }

    /// The live status of this agent.
    public func status() async -> StatusReport {
        let head = try? await store.head()
        var peerReports: [StatusReport.Peer] = []
        for peer in peers {
            let s = peer.snapshot
            let counts = try? await store.aheadBehind(peer: peer.link.name)
            peerReports.append(StatusReport.Peer(
                name: peer.link.name, url: peer.link.configuredURL, reachable: s.reachable ?? false,
                lastSync: s.lastSync.map { ISO8601DateFormatter().string(from: $0) },
                ahead: (counts ?? nil)?.ahead ?? 0, behind: (counts ?? nil)?.behind ?? 0, lastError: s.lastError))
        }
        let open = (try? await store.conflicts(all: false).count) ?? 0
        return StatusReport(
            device: config.device, running: true, pid: getpid(), data: config.data.string,
            store: config.storePath.string, head: (head ?? nil)?.hex,
            pending: watcher.pendingCount + inFlight.count,
            peers: peerReports, conflicts: .init(open: open), problems: problems.all)
    }
}

/// One peer's result of `syncagent sync`.
public struct SyncResult: Codable, Sendable {
    public var peer: String
    public var error: String?
}

/// A reason the agent cannot start, with what to do about it.
public struct AgentError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public let hint: String
    public init(_ message: String, hint: String) {
        self.message = message
        self.hint = hint
    }
    public var description: String { "\(message). \(hint)." }
}

/// Problems shown by `status` until they go away.
final class ProblemList: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ message: String) { list.withLock { if !$0.contains(message) { $0.append(message) } } }
    func clear() { list.withLock { $0.removeAll() } }
    var all: [String] { list.withLock { $0 } }
}

/// How many paths the agent is committing right now.
final class InFlight: Sendable {
    private let value = Atomic<Int>(0)
    func set(_ n: Int) { value.store(n, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// Set once, read from anywhere.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
