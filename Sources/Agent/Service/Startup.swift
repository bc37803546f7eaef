import FileSystem
import FoundationEssentials
import Glibc
import Platform
import Logging
import SyncCore
import SystemPackage

/// The one start-up sequence, shared by `run` and by the commands that work under the lock when no
/// agent runs (`sync`, `resolve`, `send`): check the data directory, take the state directory's
/// lock, clear what a killed agent left, open (or create) the store, and hand it to an engine.
enum Startup {
    struct Session: Sendable {
        let lock: AgentLock
        let engine: SyncEngine
        let events: EventBus
        let progress: ProgressBoard
        /// The agent's control socket, listening from the moment the lock is held (a command that
        /// finds the lock held reaches the agent, and waits in the backlog until it answers).
        var control: ControlServer? = nil
    }

    /// `command`: the one-shot command taking the lock, nil for the agent itself (which waits for
    /// a one-shot command that holds it, and never for another agent).
    static func openUnderLock(config: Config, logger: Logger, resolvers: [any ConflictResolver] = [],
                              command: String? = nil) throws -> Session {
        guard let dataStat = try? FileStat.of(config.data), dataStat.kind == .directory else {
            throw AgentError("the data directory \(config.data) does not exist or is not a directory",
                             hint: "create it, or fix `data` in \(config.file)")
        }
        do {
            try FileManager.default.createDirectory(atPath: config.state.string, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw AgentError("cannot create the state directory \(config.state): \(reason(of: error))",
                             hint: "fix `state` in \(config.file) or the directory's permissions")
        }
        let lock = try AgentLock.acquire(config.lockPath, role: command ?? AgentLock.agentRole, waitForCommands: true) { pid, command in
            logger.notice("waiting for `syncagent \(command)` (pid \(pid)) to finish with \(config.state) before starting")
        }
        var control: ControlServer?
        if command == nil {
            do {
                control = try ControlServer(path: config.socketPath)
            } catch {
                logger.warning("no control socket: \(error); `syncagent status` will show less detail")
            }
        }
        for stale in Store.clearStaleLocks(gitDir: config.storePath) {
            logger.warning("removed a stale lock left by a stopped agent", metadata: ["file": "\(stale)"])
        }
        // The machine stopped under the last process that held the store (a power cut): what was
        // never flushed may be damaged, in the store and in the data directory.
        let powerLoss = AgentSession.begin(state: config.state)
        if powerLoss {
            logger.warning("the machine stopped while syncagent was using \(config.storePath) (a power cut or a crash of the system): checking the store, and the files changed since the last commit, for damage")
        }
        let repair = StoreRepair.repair(gitDir: config.storePath, checkObjects: powerLoss)
        for line in repair.lines { logger.warning("\(config.storePath): \(line)") }
        for peer in config.peers where peer.hub {
            guard let hubDir = PeerLink(peer, configFile: config.file).localGitDir else { continue }
            for stale in Store.clearStaleHubLocks(hubGitDir: hubDir, device: config.device) {
                logger.warning("removed a lock a push of this device left in hub \(peer.name) when the agent stopped", metadata: ["file": "\(stale)"])
            }
        }
        Store.limitMemory(config.memory)
        let store = try Store.openOrCreate(device: config.device, data: config.data, gitDir: config.storePath)
        if powerLoss, let dropped = try? store.dropMirrorRefsToMissingObjects(), !dropped.isEmpty {
            logger.warning("\(config.storePath): removed \(dropped.count) ref(s) mirroring a peer whose commit the power cut took (\(dropped.prefix(3).joined(separator: ", "))); the next fetch sets them again")
        }
        store.rules = config.resolvers
        store.resolvers = resolvers
        store.policy = config.policy
        let events = EventBus(state: config.state)
        let progress = ProgressBoard(logger: logger)
        store.onProgress = { task, done, total in progress.update(task, done: done, total: total) }
        progress.onReport { [events] report in events.emitLive(AgentEvent(.progress(report))) }
        return Session(lock: lock, engine: SyncEngine(config: config, store: store, logger: logger, events: events, progress: progress,
                                                      afterPowerLoss: powerLoss),
                       events: events, progress: progress, control: control)
    }
}

/// One-shot commands log only warnings and errors, to stderr.
let quietLogger: Logger = {
    var logger = Logger(label: "syncagent") { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = .warning
    return logger
}()
