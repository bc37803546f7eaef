import Agent
import FoundationEssentials
import Glibc
import Logging
import ServiceLifecycle
import SyncCore
import SystemPackage

/// What went wrong, with a code a program can act on and a message that names the key, peer or
/// file and says what to do (`SyncError` of the agent).
public typealias SyncAgentError = SyncError
/// One piece of long work (`SyncAgent.progress()`), as `status --json` shows it in `tasks`.
public typealias SyncProgress = ProgressReport

/// The agent an app talks to: typed values at keys (`value(_:as:)`), live updates, conflicts
/// decided by the app (`onConflict`), per-key policies and status, and "sync now".
///
/// One API, two ways to run:
/// - ``embedding(configFile:policies:logger:)``: the agent runs inside the app's process. Start it
///   with ``run()`` (or put it in the app's `ServiceGroup`); it stops when that task is cancelled
///   or the group shuts down, with every change seen committed.
/// - ``client(configFile:logger:)``: a `syncagent run` already runs for that config; the app talks
///   to it through its control socket and event stream. With no agent running, `set` commits under
///   the agent's lock as `syncagent` commands do. ``run()`` then answers conflicts with the app's
///   resolvers until cancelled.
public final class SyncAgent: Service, Sendable {
    /// The agent's config (device name, data directory, peers, rules).
    public let config: Config
    let connection: Connection
    let resolvers: ResolverRegistry
    let logger: Logger

    private init(config: Config, connection: Connection, resolvers: ResolverRegistry, logger: Logger) {
        self.config = config
        self.connection = connection
        self.resolvers = resolvers
        self.logger = logger
    }

    /// Prepares the agent to run inside this process for the config at `configFile`. Nothing runs
    /// until ``run()``; conflict resolvers registered before or after are asked on every merge.
    /// - Parameter policies: per-key sync policies, before the config's own `[[rule]]`s (the first
    ///   match wins).
    /// - Throws: `SyncAgentError` naming the config, the lock holder or the store, and what to do.
    public static func embedding(configFile: String, policies: [KeyPolicy] = [],
                                 logger: Logger = Logger(label: "syncagent")) async throws -> SyncAgent {
        do {
            var config = try Config.load(file: FilePath(configFile))
            config.rules = policies.map(\.rule) + config.rules
            let registry = ResolverRegistry(logger: logger)
            let service = try await AgentService.prepare(config: config, logger: logger, resolvers: [registry])
            return SyncAgent(config: config, connection: .embedded(service), resolvers: registry, logger: logger)
        } catch {
            throw SyncError(error)
        }
    }

    /// Talks to the `syncagent run` of the config at `configFile` (or, while none runs, to its
    /// store under the agent's lock). Per-key policies are the config's `[[rule]]`s then.
    /// - Throws: `SyncAgentError` when the config cannot be read.
    public static func client(configFile: String, logger: Logger = Logger(label: "syncagent")) throws -> SyncAgent {
        do {
            let config = try Config.load(file: FilePath(configFile))
            return SyncAgent(config: config, connection: .client(config), resolvers: ResolverRegistry(logger: logger), logger: logger)
        } catch {
            throw SyncError(error)
        }
    }

    /// Embedded: runs the agent until this task is cancelled or its `ServiceGroup` shuts down.
    /// Client: answers conflicts with the registered resolvers (those open now, then each one the
    /// agent opens) until cancelled.
    public func run() async throws {
        switch connection {
        case .embedded(let service):
            try await service.run()
        case .client(let config):
            // Until cancelled, or until the app's `ServiceGroup` shuts down.
            await cancelWhenGracefulShutdown { [self] in
                let events = OneShot.follow(config: config)
                await resolveOpenConflicts()
                for await event in events where event.type == .conflictOpened {
                    await resolveOpenConflicts()
                }
            }
        }
    }

    /// The typed value at `key`: a path relative to the data directory (`settings.json`,
    /// `workouts/2026-11-26.json`), stored with `coder` (JSON by default).
    public func value<T: Codable & Sendable>(_ key: String, as type: T.Type = T.self,
                                             coder: ValueCoder<T> = .json) -> SyncedValue<T> {
        SyncedValue(key: key, agent: self, coder: coder)
    }

    /// Every key under `prefix` (a directory, `workouts/`): the current values first, then each
    /// change, local or received, until the iteration ends.
    public func updates<T: Codable & Sendable>(under prefix: String, as type: T.Type = T.self,
                                               coder: ValueCoder<T> = .json) -> AsyncStream<KeyUpdate<T>> {
        PrefixObservation(prefix: prefix, agent: self, coder: coder).stream()
    }

    /// Long work as it moves, for a progress bar: a transfer with a peer (`task` `receive` or
    /// `send`, objects and bytes), a merge or a commit of 100 paths or more, a first scan; each
    /// task at most once a second once it has a second or 100 units behind it, and its end (`done`
    /// equal to `total`). Nothing is asked of the agent while nobody iterates.
    public func progress() -> AsyncStream<ProgressReport> {
        let events = connection.events()
        return AsyncStream { continuation in
            let task = Task {
                for await event in events { if case .progress(let report) = event.kind { continuation.yield(report) } }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Asks every peer for a sync round now and waits for its end, at most `timeout`: each peer's
    /// result (nil error: synced). A peer out of reach answers with its error at once.
    /// - Throws: `SyncAgentError` with code `timeout` when no answer came within `timeout`, or
    ///   `no-agent` when a client finds no agent running.
    public func syncNow(timeout: Duration = .seconds(30)) async throws -> [PeerSyncResult] {
        let connection = self.connection
        let answer = try await firstWithin(timeout) {
            await Result(catching: { try await connection.request(.sync(peer: nil), as: [SyncResult].self) })
        }?.get()
        guard let answer else {
            throw SyncError(.timeout, "no sync round finished within \(timeout); the agent goes on trying (`syncagent status` says why)")
        }
        return answer.map { PeerSyncResult(peer: $0.peer, error: $0.error, errorCode: $0.errorCode) }
    }

    /// Shares held changes of these keys (`manual` policy, or over a size limit) now, as
    /// `syncagent send` does.
    public func send(_ keys: [String]) async throws {
        let result = try await connection.request(.send(paths: keys.map { Array($0.utf8) }, all: false), as: MessageResult.self)
        if let error = result.error {
            throw SyncError(SyncError.Code(rawValue: result.errorCode ?? "") ?? .other, error)
        }
    }
}

/// One peer's answer to ``SyncAgent/syncNow(timeout:)``.
public struct PeerSyncResult: Sendable, Equatable {
    /// The peer's name in the config.
    public let peer: String
    /// What went wrong, naming the peer and what to do; nil when the round succeeded.
    public let error: String?
    /// `SyncAgentError.Code`'s name for `error`.
    public let errorCode: String?
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
