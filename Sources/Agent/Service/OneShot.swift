import FoundationEssentials
import Platform
import Glibc
import SyncCore
import SystemPackage
import FileSystem

/// Commands that change the store while no agent runs: they take the agent lock themselves, so
/// there is still only one writer per store, and go through the same start-up and engine as `run`.
public enum OneShot {
    /// Asks the running agent, or does the work here under the lock when none runs. Every fetch has
    /// the agent's timeout, so a black-holed peer fails the command instead of hanging it.
    /// `progress` (when given) gets the long work in hand a few times a second meanwhile, and
    /// once more at the end (`ProgressPoller`).
    public static func sync(config: Config, peer: String?,
                            progress: (@Sendable ([ProgressReport]) -> Void)? = nil) async throws -> [SyncResult] {
        if let peer, !config.peers.contains(where: { $0.name == peer }) {
            return [SyncResult(peer: peer, problem: SyncError(.badConfig, "no peer named '\(peer)' in \(config.file)", subject: peer))]
        }
        return try await viaAgentOrLock(config, .sync(peer: peer), as: [SyncResult].self, progress: progress)
    }

    /// `syncagent send --deletes`: through the running agent, or under the lock.
    public static func sendDeletes(config: Config) async throws -> MessageResult {
        try await viaAgentOrLock(config, .sendDeletes, as: MessageResult.self)
    }

    /// The one way a command that changes the store runs: asks the running agent over its socket,
    /// or, when none runs, takes the lock and performs it here (`RequestPerformer`, after committing what changed on
    /// disk, unless `commitFirst` is false). An agent that takes the lock between the two looks is
    /// asked after all.
    static func viaAgentOrLock<T: Decodable>(_ config: Config, _ request: ControlRequest, as: T.Type,
                                             commitFirst: Bool = true,
                                             progress: (@Sendable ([ProgressReport]) -> Void)? = nil) async throws -> T {
        // The socket, the lock and the store's files block: each runs on a thread of its own, never on
        // Swift's cooperative pool (an app's `set` comes here from its own tasks).
        func ask() async throws -> T {
            let poller = progress.map { ProgressPoller(source: ProgressPoller.fromAgent(socket: config.socketPath), sink: $0) }
            defer { poller?.stop() }
            let line = try await onOwnThread("syncagent-ask") {
                Result { try ControlClient.send(request, to: config.socketPath, timeoutSeconds: 120) }
            }.get()
            return try JSONDecoder().decode(T.self, from: Data(line))
        }
        // An agent answers on its socket; a one-shot command holding the lock (another `send`, an
        // app's `set` whose thread still holds its session a moment) is waited for below.
        if AgentLock.agentHolder(of: config.lockPath) != nil { return try await ask() }
        let opened = await onOwnThread("syncagent-open") {
            Result { try Startup.openUnderLock(config: config, logger: quietLogger, command: request.commandName) }
        }
        let session: Startup.Session
        do {
            session = try opened.get()
        } catch let error as LockError where error.holder != nil {
            return try await ask()  // an agent started meanwhile: it listens from the moment it holds the lock
        }
        let answer: Result<T, any Error>
        do {
            answer = .success(try await underLock(session, config: config, request: request, commitFirst: commitFirst, progress: progress))
        } catch {
            answer = .failure(error)
        }
        // The lock is not captured here: the thread may hold its closure a moment after it answers,
        // and an app's next `set` must find the lock free.
        let (events, engine) = (session.events, session.engine)
        await onOwnThread("syncagent-close") {
            events.finish()  // every event written before the lock is let go
            engine.finishThread()  // waits for the engine's thread: an app's `set`s would otherwise leave a thread each
            AgentSession.end(state: config.state)
        }
        withExtendedLifetime(session) {}  // the lock is let go here: after the above, before the answer
        return try answer.get()
    }

    /// A command's work with the lock held and the store open (`viaAgentOrLock`).
    private static func underLock<T: Decodable>(_ session: Startup.Session, config: Config, request: ControlRequest,
                                                commitFirst: Bool, progress: (@Sendable ([ProgressReport]) -> Void)?) async throws -> T {
        let board = session.progress
        let poller = progress.map { ProgressPoller(source: { board.all }, sink: $0) }
        defer { poller?.stop() }
        if commitFirst { await session.engine.commitStartupChanges(stopping: { false }) }
        let engine = session.engine
        let ledger = PeerLedger.load(state: config.state)
        let pauses = PauseBoard(state: config.state)
        // The same request path as the agent's (`RequestPerformer`); a sync is one round per peer.
        let performer = RequestPerformer(
            engine: engine, config: config, logger: quietLogger, peerNames: config.peers.map(\.name),
            syncPeer: { name in
                guard let peerConfig = config.peers.first(where: { $0.name == name }) else { return nil }
                let link = PeerLink(peerConfig, configFile: config.file, state: config.state)
                let syncer = PeerSyncer(link: link, config: config, engine: engine, logger: quietLogger, known: ledger.peers[link.name],
                                        pauses: pauses)
                return await syncer.round()
            },
            changed: {}, status: nil, pauses: pauses)
        let answer = await performer.perform(request)
        await engine.saveLedgerIfStale()  // a sync's rounds noted their peers' times in memory only
        return try JSONDecoder().decode(T.self, from: Data(answer))
    }

    /// `syncagent held`: through the running agent, else read from the store (mass deletions are
    /// only known while an agent runs: a stopped one finds them again when it starts).
    public static func held(config: Config) throws -> [HeldEntry] {
        if AgentLock.holder(of: config.lockPath) != nil {
            let line = try ControlClient.send(.held, to: config.socketPath)
            return try JSONDecoder().decode([HeldEntry].self, from: Data(line))
        }
        let store = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
        return HeldEntry.list(heldDeletes: [], held: store.loadHeld())
    }

    /// `syncagent send PATH... | --all`.
    public static func send(config: Config, paths: [[UInt8]], all: Bool) async throws -> MessageResult {
        try await viaAgentOrLock(config, .send(paths: paths, all: all), as: MessageResult.self)
    }

    /// `syncagent pause [PEER]` (`paused` true) or `resume [PEER]`: through the running agent, or
    /// under the lock (nothing is committed first).
    public static func pause(config: Config, peer: String?, paused: Bool) async throws -> PauseResult {
        try await viaAgentOrLock(config, .pause(peer: peer, paused: paused), as: PauseResult.self, commitFirst: false)
    }

    /// `syncagent revert [PATH...]`.
    public static func revert(config: Config, paths: [[UInt8]]) async throws -> MessageResult {
        try await viaAgentOrLock(config, .revert(paths: paths), as: MessageResult.self)
    }

    /// `syncagent restore PATH [--at]`: through the running agent, or under the lock.
    public static func restore(config: Config, path: [UInt8], at: String?) async throws -> MessageResult {
        try await viaAgentOrLock(config, .restore(path: path, at: at), as: MessageResult.self)
    }

    /// `syncagent restore --deletes`: through the running agent, or under the lock.
    public static func restoreDeletes(config: Config) async throws -> MessageResult {
        try await viaAgentOrLock(config, .restoreDeletes, as: MessageResult.self)
    }

    /// Every event from now on (or after `since`), as values, for a program that is a client of the
    /// agent: across agent restarts, until the iteration ends, which closes the connection at once.
    public static func follow(config: Config, since: Int? = nil) -> AsyncStream<AgentEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AgentEvent.self)
        // From the log's last event as of now, not from whenever the connection is made: an event
        // between this call and the agent hearing the request is not missed.
        let since = since ?? EventLog(state: config.state).lastSeq
        let cancel = ControlCancel()
        continuation.onTermination = { _ in cancel.cancel() }
        OwnThread.start(name: "syncagent-follow") {
            try? events(config: config, since: since, follow: true, cancel: cancel) { bytes in
                if let event = try? JSONDecoder().decode(AgentEvent.self, from: Data(bytes)) { continuation.yield(event) }
                return !cancel.isCancelled
            }
            continuation.finish()
        }
        return stream
    }

    /// An app's `set` when it is a client of the agent: through the running agent, else committed
    /// here under the lock.
    public static func commit(config: Config, paths: [[UInt8]]) async throws -> CommitResult {
        try await viaAgentOrLock(config, .commit(paths: paths), as: CommitResult.self)
    }

    /// `syncagent history PATH` and `restore --to`: read from the store; no lock needed.
    public static func readStore(config: Config) throws -> Store {
        try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
    }

    /// `syncagent events`: the kept events after `since` (from the running agent, or from the log
    /// when none runs); with `follow`, every new one for as long as `line` returns true, through
    /// agent restarts (it waits for the agent to come back and goes on after the last seen).
    /// - Parameter cancel: ends it from another thread, at once.
    public static func events(config: Config, since: Int?, follow: Bool, cancel: ControlCancel? = nil,
                              line: ([UInt8]) -> Bool) throws {
        var last = since
        var first = true
        while cancel?.isCancelled != true {
            var unanswered = false
            if AgentLock.holder(of: config.lockPath) != nil {
                var open = true
                do {
                    try ControlClient.stream(.events(since: last, follow: follow), to: config.socketPath, cancel: cancel) { bytes in
                        if let event = try? JSONDecoder().decode(AgentEvent.self, from: Data(bytes)), let seq = event.seq {
                            last = seq
                        }
                        open = line(bytes)
                        return open
                    }
                    first = false
                    if !follow || !open { return }
                } catch where !first {
                    // The agent went away between the check and the connection: wait for it.
                    unanswered = true
                } catch {
                    if !follow { throw error }
                    unanswered = true
                }
            } else {
                if follow && last == nil {
                    last = EventLog.read(state: config.state, since: nil).last?.seq ?? 0  // --follow alone: new events only
                } else {
                    for event in EventLog.read(state: config.state, since: last) {
                        if let seq = event.seq { last = seq }
                        if !line(event.jsonLine) { return }
                    }
                }
                first = false
                if !follow { return }
            }
            // Following while no agent runs: wait for one to start.
            waitForAgent(config, cancel: cancel, unanswered: unanswered)
        }
    }

    /// Returns once an agent holds the state directory's lock: woken when it creates its control
    /// socket there (inotify, watched before the lock is looked at, so no start is missed); the lock
    /// is looked at every 5 s too, should the directory itself be replaced.
    /// With `unanswered` (the lock is held but nothing answered on the socket: a one-shot command
    /// holds it, or an agent is starting or stopping), it returns at the next change in the state
    /// directory, at the latest a second later, so the caller tries again without spinning.
    static func waitForAgent(_ config: Config, cancel: ControlCancel? = nil, unanswered: Bool = false) {
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        defer { if fd >= 0 { close(fd) } }
        if fd >= 0 {
            _ = config.state.withPlatformString { inotify_add_watch(fd, $0, UInt32(IN_CREATE | IN_MOVED_TO)) }
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var waited = false
        while cancel?.isCancelled != true {
            if AgentLock.holder(of: config.lockPath) != nil, !unanswered || waited { return }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: cancel?.wake ?? -1, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, unanswered ? 1000 : 5000) > 0, fds[0].revents != 0 { _ = read(fd, &buffer, buffer.count) }
            waited = true
        }
    }
}
