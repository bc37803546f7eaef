import ServiceLifecycle
import Watcher

// The agent's parts that run until it stops, each a `Service` in one `ServiceGroup`
// (`AgentService.run`). On a stop the group ends them one at a time, in reverse order: the local
// side first (its last batch is committed), then the timed work, then the peers.

/// The local side: the watcher's batches into the engine. On a stop the watcher stops, and what
/// it holds is committed before this returns.
struct LocalChangesService: Service {
    let watcher: Watcher
    let engine: SyncEngine

    func run() async {
        await withTaskCancellationOrGracefulShutdownHandler {
            // The batches wait in the watcher until taken: here, or by the engine's drain before a
            // merge. Nothing is ever in transit between the two.
            for await _ in watcher.batches {
                let batch = watcher.takeReady()
                if !batch.isEmpty { await engine.commit(batch) }
            }
            let last = watcher.takeReady()
            if !last.isEmpty { await engine.commit(last) }
        } onCancelOrGracefulShutdown: { [watcher] in
            watcher.stop()
        }
    }
}

/// The engine's timed work by deadline (`IdleCare`): asked when due, or when the engine rings its
/// care bell. A stop rings it too, so it never waits for the next deadline.
struct IdleCareService: Service {
    let engine: SyncEngine

    func run() async {
        let bell = engine.careBell
        await cancelWhenGracefulShutdown { [engine] in
            await withTaskCancellationHandler {
                while !Task.isCancelled {
                    let next = await engine.care()
                    _ = await bell.wait(upTo: next.map { max(.zero, $0 - .now) } ?? .seconds(3600))
                }
            } onCancel: {
                bell.ring()
            }
        }
    }
}

/// One peer's rounds (`PeerSyncer.syncLoop`) until the agent stops; a stop wakes a waiting round.
extension PeerSyncer: Service {
    func run() async {
        let bell = doorbell
        await cancelWhenGracefulShutdown { [self] in
            await withTaskCancellationHandler {
                await self.syncLoop()
            } onCancel: {
                bell.ring()
            }
        }
    }
}
