import FileSystem
import FoundationEssentials
import Glibc
import Logging
import Platform
import ServiceLifecycle
import Synchronization
import SyncCore
import SystemPackage
import Watcher

/// The long-running agent for one device: the watcher feeds local changes to the engine, one
/// `PeerSyncer` per peer fetches and asks the engine to merge, the control socket answers the CLI,
/// and a tick lets the engine retry what failed. Build it with `prepare`, which refuses to start
/// (and changes nothing) on any problem.
public final class AgentService: Service, Sendable {
    public let config: Config
    private let logger: Logger
    private let session: Startup.Session
    private var engine: SyncEngine { session.engine }
    private let watcher: Watcher
    private let control: ControlServer?
    private let problems: ProblemList
    private let peers: [PeerSyncer]
    private let pauses: PauseBoard
    private let hooks: [HookRunner]
    private var bus: EventBus { session.events }

    private init(config: Config, logger: Logger, session: Startup.Session, watcher: Watcher,
                 control: ControlServer?, problems: ProblemList) {
        self.config = config
        self.logger = logger
        self.session = session
        self.watcher = watcher
        self.control = control
        self.problems = problems
        hooks = config.hooks.map { HookRunner(hook: $0, bus: session.events, logger: logger) }
        let ledger = PeerLedger.load(state: config.state)
        let pauses = PauseBoard(state: config.state)
        self.pauses = pauses
        peers = config.peers.map { peer in
            PeerSyncer(link: PeerLink(peer, configFile: config.file, state: config.state), config: config, engine: session.engine,
                       logger: logger, known: ledger.peers[peer.name], pauses: pauses)
        }
    }

    /// Checks the data directory, takes the state directory's lock, clears locks a killed agent left,
    /// opens (or creates) the store and installs the watches.
    /// - Parameter resolvers: conflict resolvers of a program that embeds the agent, asked before
    ///   the configured `[[resolver]]` strategies.
    public static func prepare(config: Config, logger: Logger, resolvers: [any ConflictResolver] = []) async throws -> AgentService {
        signal(SIGPIPE, SIG_IGN)  // a hook or an `events` client that goes away must not kill the agent
        MallocArenas.limit()  // again, for a program that embeds the agent (`syncagent` sets it first)
        for warning in config.warnings { logger.warning("\(warning)") }
        let session = try Startup.openUnderLock(config: config, logger: logger, resolvers: resolvers)
        let problems = ProblemList()
        let problemLogger = logger
        let engine = session.engine
        let watcher = try Watcher(
            root: config.data,
            quiet: .milliseconds(config.watch.debounceMs),
            maxDelay: .milliseconds(config.watch.maxDelayMs),
            // A save after a quiet spell goes out 5 ms after its last file is closed (README
            // "What gets committed").
            settle: Debouncer.defaultSettle,
            handoff: true,
            ignore: { PathRules.isIgnored($0) },
            // What the apply lands (or swaps out) through its temporaries, it stages itself: 100k
            // such events were 6 MB of a first sync's peak, and a commit of nothing.
            recordedMoves: { AgentTemporary.isOwnLanding($0) },
            onProblem: { problem in
                switch problem.kind {
                case .recovered:
                    problemLogger.notice("\(problem.message)")
                    problems.clear()
                case .rootGone:
                    engine.careBell.ring()  // the engine looks, holds and says what to do
                case .unmounted:
                    // Its mount point stays, empty or holding what the mount hid: no watch reports
                    // anything there, and a scan now would take the mount point for the data. The
                    // next start scans what is there then, with its guard.
                    let text = "\(problem.message); mount it again, then restart the agent (syncagent run)"
                    problemLogger.error("\(text)")
                    problems.add(StatusProblem(.watch, text))
                default:
                    problemLogger.error("\(problem.message)")
                    problems.add(StatusProblem(.watch, problem.message))
                }
            })
        await engine.attach(watcher)
        return AgentService(config: config, logger: logger, session: session, watcher: watcher,
                            control: session.control, problems: problems)
    }

    /// Every event from now on (SPEC "Events"), until the agent stops: what `syncagent events
    /// --follow` prints, as values. Each call makes a new, independent sequence.
    public func events() -> AsyncStream<AgentEvent> { bus.stream() }

    public func run() async throws {
        logger.info("watching \(config.data.display)", metadata: [
            "device": "\(config.device)", "store": "\(config.storePath)", "pid": "\(getpid())",
        ])
        if Durability.disabled {
            logger.warning("SYNCAGENT_UNSAFE_NO_FSYNC=1: nothing is made durable (for benchmarks only); a power cut can lose or damage the store and files the agent wrote. Unset it for real data")
        }
        for hook in hooks { hook.start() }
        let desktop = ConflictNotifier.start(config: config, bus: bus, logger: logger)
        defer { desktop?.cancel() }
        bus.emit(AgentEvent(.started(message: "device \(config.device), pid \(getpid())")))
        control?.start(handler: { [self] request in await self.answer(request) }, logger: logger)
        // The watches are in place (`prepare`): from here on no change is missed, so systemd may
        // go on; the start-up commit that follows shows its progress in STATUS=.
        let notifier = SystemdNotifier()
        notifier?.send("READY=1\nSTATUS=starting: committing what changed while stopped\nMAINPID=\(getpid())")
        let stopping = Flag()
        let systemd = notifier.map { notifier in Task { [self] in await self.tellSystemd(notifier, stopping: stopping) } }
        defer { systemd?.cancel() }
        // A stop is a graceful shutdown (SIGTERM through the service group) or, for a program that
        // embeds the agent, the cancellation of the task running it: the same either way.
        await withTaskCancellationOrGracefulShutdownHandler {
            // What changed while the agent was stopped (the watches are already in place, so nothing
            // that changes from now on is missed), in chunks so that a stop request is heard between them.
            // Each peer's first fetch copies its new objects meanwhile; merging waits for the
            // peers' rounds, after the start-up commit.
            for peer in peers { peer.fetchEarly() }
            await engine.keepIndexInMemory()
            await engine.commitStartupChanges(stopping: { stopping.isSet })
            guard !stopping.isSet else {  // stopped during the start-up commit: no peer round begins
                for peer in peers { await peer.cancelEarlyFetch() }
                await engine.saveIndex(now: true)
                await engine.saveLedgerIfStale()
                return
            }
            watcher.start()
            // On a stop the group ends its services in reverse order: the local side first (its
            // last batch committed), then the timed work, then the peers.
            let services: [ServiceGroupConfiguration.ServiceConfiguration] = peers.map { .init(service: $0) } + [
                .init(service: IdleCareService(engine: engine)),
                .init(service: LocalChangesService(watcher: watcher, engine: engine),
                      successTerminationBehavior: .gracefullyShutdownGroup),
            ]
            do {
                try await ServiceGroup(configuration: .init(services: services, logger: logger)).run()
            } catch where !Task.isCancelled {
                logger.error("the agent's services stopped early: \(error); every change seen so far is committed")
            } catch {}
            for peer in peers { await peer.cancelEarlyFetch() }  // a peer whose loop never began
            await engine.saveIndex(now: true)
            await engine.saveLedgerIfStale()
        } onCancelOrGracefulShutdown: { [watcher] in
            notifier?.send("STOPPING=1\nSTATUS=stopping: committing the batch in hand")
            stopping.set()
            watcher.stop()
        }
        control?.stop()
        bus.emit(AgentEvent(.stopped))
        bus.finish()
        AgentSession.end(state: config.state)  // a clean stop: the next start looks for no damage
        logger.info("stopped; every change seen is committed")
    }

    private func answer(_ request: ControlRequest) async -> ControlAnswer {
        if case .events(let since, let follow) = request {
            let bus = self.bus
            return .stream { fd in EventStreaming.serve(fd, bus: bus, since: since, follow: follow) }
        }
        return .line(await answerLine(request))
    }

    /// Answers a control request in this process, as the control socket would: the JSON answer
    /// `ControlRequest` names (an `events` request answers nothing here: use `events()`). What a
    /// program embedding the agent uses instead of the socket.
    public func request(_ request: ControlRequest) async -> [UInt8] {
        await answerLine(request)
    }

    private func answerLine(_ request: ControlRequest) async -> [UInt8] {
        await performer.perform(request)
    }

    /// The one request path (`RequestPerformer`), with this agent's peers.
    private var performer: RequestPerformer {
        let peers = self.peers
        return RequestPerformer(
            engine: engine, config: config, logger: logger, peerNames: peers.map(\.link.name),
            syncPeer: { name in await peers.first { $0.link.name == name }?.syncNow() },
            changed: { for peer in peers { peer.doorbell.ring() } },
            status: { [self] in await status() }, pauses: pauses)
    }

    /// systemd's side: STATUS= whenever the one-line summary changes, and WATCHDOG=1 each half
    /// `WatchdogSec` while the engine answers (or long work reports progress): a stuck agent is
    /// restarted, a busy one is not.
    private func tellSystemd(_ notifier: SystemdNotifier, stopping: Flag) async {
        var lastLine = ""
        var lastPing = ContinuousClock.now
        let step: Duration = min(notifier.watchdogInterval ?? .seconds(2), .seconds(2))
        while !Task.isCancelled && !stopping.isSet {
            let (report, engineAnswered) = await liveStatus(measureStore: false, wait: step)
            let line = SystemdNotifier.statusLine(report)
            var message = line != lastLine ? "STATUS=\(line)" : ""
            lastLine = line
            if let interval = notifier.watchdogInterval, engineAnswered || session.progress.moved(within: interval),
               ContinuousClock.now - lastPing >= interval - step {
                message += (message.isEmpty ? "" : "\n") + "WATCHDOG=1"
                lastPing = ContinuousClock.now
            }
            if !message.isEmpty { notifier.send(message) }
            try? await Task.sleep(for: step)
        }
    }

    /// The live status of this agent. It never waits long for a busy engine: after a second, the
    /// answer comes from the store on disk, with `progress` saying what the engine is busy with.
    public func status(measureStore: Bool = true) async -> StatusReport {
        await liveStatus(measureStore: measureStore, wait: .seconds(1)).report
    }

    /// The status, and whether the engine itself answered (within `wait`).
    private func liveStatus(measureStore: Bool, wait: Duration) async -> (report: StatusReport, engineAnswered: Bool) {
        var entries: [String: PeerLedger.Entry] = [:]
        for peer in peers { entries[peer.link.name] = peer.ledgerEntry }
        let (engine, pending) = (self.engine, watcher.pendingCount)
        let fromEngine: StatusReport? = session.progress.current != nil ? nil : await firstWithin(wait) { [entries] in
            await engine.status(pending: pending, peers: entries, measureStore: measureStore)
        }
        var report: StatusReport
        if let fromEngine {
            report = fromEngine
        } else {
            // The engine is in the middle of long work: answer from the store on disk meanwhile.
            let config = self.config
            report = await onOwnThread("syncagent-status") { [entries] in
                var ledger = PeerLedger.load(state: config.state)
                for (name, entry) in entries { ledger.peers[name] = entry }
                let store = try? Store.open(device: config.device, data: config.data, gitDir: config.storePath)
                return StatusBuilder.report(config: config, store: store, running: true, pid: getpid(),
                                            pending: pending, ledger: ledger, problems: [], heldDeletes: 0,
                                            measureStore: measureStore)
            }
            report.progress = session.progress.current
        }
        for problem in problems.all where !report.problems.contains(problem) { report.problems.append(problem) }
        report.tasks = session.progress.all
        return (report, fromEngine != nil)
    }
}

/// The result of `operation`, or nil when it takes longer than `limit`. A late operation goes on,
/// unawaited (it is engine work that must finish: a status read, a commit); its result is dropped.
/// An operation in time cancels the timer, so no sleeping task is left behind.
public func firstWithin<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async -> T) async -> T? {
    let claimed = Mutex(false)
    let claim: @Sendable () -> Bool = { claimed.withLock { done in defer { done = true }; return !done } }
    return await withCheckedContinuation { (c: CheckedContinuation<T?, Never>) in
        let timer = Task {
            try? await Task.sleep(for: limit)
            if claim() { c.resume(returning: nil) }
        }
        Task {
            let value = await operation()
            if claim() {
                timer.cancel()
                c.resume(returning: value)
            }
        }
    }
}

/// One peer's result of `syncagent sync`.
public struct SyncResult: Codable, Sendable {
    public var peer: String
    public var error: String?
    /// `SyncError.Code`'s name for `error`, for programs.
    public var errorCode: String?

    init(peer: String, problem: SyncError?) {
        self.peer = peer
        error = problem?.message
        errorCode = problem?.code.rawValue
    }
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
    private let list = Mutex<[StatusProblem]>([])
    func add(_ problem: StatusProblem) { list.withLock { if !$0.contains(problem) { $0.append(problem) } } }
    func clear() { list.withLock { $0.removeAll() } }
    var all: [StatusProblem] { list.withLock { $0 } }
}

/// Set once, read from anywhere.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
