import Agent
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage
import FileSystem

/// How the kit reaches the agent: in this process, or through its control socket.
enum Connection: Sendable {
    case embedded(AgentService)
    case client(Config)

    /// Asks a control request and decodes its answer.
    func request<T: Decodable & Sendable>(_ request: ControlRequest, as type: T.Type) async throws -> T {
        let bytes: [UInt8]
        switch self {
        case .embedded(let service):
            bytes = await service.request(request)
        case .client(let config):
            // The socket blocks: a thread of its own, never Swift's cooperative pool.
            bytes = try await blocking("syncagent-kit-request") {
                do { return try ControlClient.send(request, to: config.socketPath, timeoutSeconds: 120) } catch let error as ControlError {
                    throw Self.problem(error, config: config)
                }
            }
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw SyncError(.other, "the agent's answer to \(request.commandName) could not be read (\(error)); is it the same version as this app?")
        }
    }

    /// Commits these keys now; with no agent running, a client commits under the agent's lock.
    func commit(_ keys: [String]) async throws -> CommitResult {
        let paths = keys.map { Array($0.utf8) }
        let result: CommitResult
        switch self {
        case .embedded:
            result = try await request(.commit(paths: paths), as: CommitResult.self)
        case .client(let config):
            // One at a time in this process: with no agent running, each takes the agent's lock,
            // and a second one in the same process would find it taken.
            do { result = try await oneShots.run { try await OneShot.commit(config: config, paths: paths) } } catch let error as ControlError {
                throw Self.problem(error, config: config)
            } catch {
                throw SyncError(error)
            }
        }
        if let error = result.error {
            throw SyncError(SyncError.Code(rawValue: result.errorCode ?? "") ?? .other, error)
        }
        return result
    }

    /// The socket's error as the app's: an agent that did not answer in time, or none at all.
    static func problem(_ error: ControlError, config: Config) -> SyncError {
        if error.timedOut {
            return SyncError(.timeout, "\(error.message); the agent is busy (`syncagent status --config \(config.file)` says with what)",
                             subject: config.socketPath.display)
        }
        return SyncError(.noAgent, "no syncagent runs for \(config.file) (\(error.message)); start it with `syncagent run --config \(config.file)`",
                         subject: config.socketPath.display)
    }

    /// Every event from now on, until the iteration ends.
    func events() -> AsyncStream<AgentEvent> {
        switch self {
        case .embedded(let service): service.events()
        case .client(let config): OneShot.follow(config: config)
        }
    }
}

/// Runs the kit's one-shot commands of this process one after the other.
actor OneShotQueue {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func run<T: Sendable>(_ work: @Sendable () async throws -> T) async throws -> T {
        while busy { await withCheckedContinuation { waiting.append($0) } }
        busy = true
        defer {
            busy = false
            if !waiting.isEmpty { waiting.removeFirst().resume() }
        }
        return try await work()
    }
}

let oneShots = OneShotQueue()

/// Runs blocking work (files, sockets, libgit2) on a thread of its own (`onOwnThread`) and returns
/// its result or throws its error.
func blocking<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onOwnThread(name) { Result { try body() } }.get()
}
