import FoundationEssentials
import Logging
import SyncCore
import SystemPackage
import FileSystem

/// The one mapping from a control request to the engine, whatever carries it: the control socket
/// and an app embedding the agent (`AgentService`), or a command run under the agent's lock when
/// no agent runs (`OneShot`). Only how peers are synced and woken differs between them.
struct RequestPerformer: Sendable {
    let engine: SyncEngine
    let config: Config
    let logger: Logger
    /// The configured peers' names, in config order.
    let peerNames: [String]
    /// Syncs with one peer now: the running agent's syncer, or a one-shot round under the lock.
    let syncPeer: @Sendable (String) async -> SyncError?
    /// After a request that may have changed `main`: wakes the peers (nothing under the lock,
    /// where there are none to wake).
    let changed: @Sendable () -> Void
    /// The status report (`status`); nil where it is built elsewhere (under the lock, `syncagent
    /// status` reads the store itself).
    let status: (@Sendable () async -> StatusReport)?
    /// The pauses (`pause`, `resume`; a paused peer is not synced).
    let pauses: PauseBoard

    /// What a sync with a paused peer answers.
    static func pausedError(_ peer: String) -> SyncError {
        SyncError(.paused, "peer \(peer) is paused: nothing is fetched, merged or pushed until `syncagent resume \(peer)`", subject: peer)
    }

    /// The JSON answer `request` names. (`events` is a stream: its carrier serves it.)
    func perform(_ request: ControlRequest) async -> [UInt8] {
        let encoder = JSONEncoder()
        func encoded(_ value: some Encodable) -> [UInt8] { Array((try? encoder.encode(value)) ?? Data()) }
        switch request {
        case .events:
            return []
        case .held:
            return encoded(await engine.heldList())
        case .progress:
            return encoded(engine.progress.all)
        case .status:
            guard let status else { return encoded(MessageResult(message: "", error: "no status here: ask `syncagent status`")) }
            return encoded(await status())
        case .send(let paths, let all):
            defer { changed() }
            return encoded(await engine.send(paths: paths.map { FilePath(bytes: $0) }, all: all))
        case .revert(let paths):
            return encoded(await engine.revert(paths: paths.map { FilePath(bytes: $0) }))
        case .restore(let path, let at):
            defer { changed() }
            return encoded(await engine.restore(path: FilePath(bytes: path), at: at))
        case .restoreDeletes:
            defer { changed() }
            return encoded(await engine.restoreDeletes())
        case .resolve(let targets, let all, let choice):
            let results = await engine.resolve(targets: targets, all: all, choice: choice)
            for r in results {
                if let error = r.error { logger.warning("resolve \(r.target): \(error)") }
                else { logger.info("resolved \(r.id ?? r.target) (\(r.path ?? ""))") }
            }
            changed()
            return encoded(results)
        case .sync(let wanted):
            if let wanted, !peerNames.contains(wanted) {
                return encoded([SyncResult(peer: wanted, problem: SyncError(.badConfig, "no peer named '\(wanted)' in \(config.file)", subject: wanted))])
            }
            // "Commit and sync now": what was written before the request is committed first,
            // whatever the rounds then find (a merge with nothing to do no longer asks for it).
            await engine.commitPendingNow()
            var results: [SyncResult] = []
            for name in peerNames where wanted == nil || wanted == name {
                if pauses.isPaused(name) {
                    results.append(SyncResult(peer: name, problem: Self.pausedError(name)))
                    continue
                }
                results.append(SyncResult(peer: name, problem: await syncPeer(name)))
            }
            return encoded(results)
        case .pause(let peer, let paused):
            if let peer, !peerNames.contains(peer) {
                let error = SyncError(.badConfig, "no peer named '\(peer)' in \(config.file)", subject: peer)
                return encoded(PauseResult(paused: pauses.snapshot.paused(among: peerNames), message: "", error: error.description,
                                           errorCode: error.code.rawValue))
            }
            do {
                let now = try pauses.set(peer, paused: paused, names: peerNames)
                let which = peer ?? "every peer"
                let message = paused
                    ? "paused \(which): no fetch, merge or push with \(peer == nil ? "any peer" : peer!) until `syncagent resume\(peer.map { " " + $0 } ?? "")`; local changes are still committed"
                    : "resumed \(which)" + (now.isEmpty ? "" : "; still paused: \(now.joined(separator: ", "))")
                logger.notice("\(message)")
                engine.events.emit(AgentEvent(paused ? .paused(peer: peer) : .resumed(peer: peer)))
                changed()  // a resumed peer syncs at once
                return encoded(PauseResult(paused: now, message: message))
            } catch {
                let error = SyncError(.io, "cannot save the pause in \(PauseState.file(state: config.state).display): \(error). Nothing changed; check the state directory's permissions and free space", subject: peer)
                return encoded(PauseResult(paused: pauses.snapshot.paused(among: peerNames), message: "", error: error.description,
                                           errorCode: error.code.rawValue))
            }
        case .commit(let paths):
            defer { changed() }
            return encoded(await engine.commitNow(paths: paths.map { FilePath(bytes: $0) }))
        case .sendDeletes:
            defer { changed() }
            return encoded(await engine.confirmDeletes())
        }
    }
}
