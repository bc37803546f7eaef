import FoundationEssentials
import Platform
import SyncCore
import Synchronization
import SystemPackage

/// Asks for the long work in hand a few times a second, on a thread of its own, while a command
/// waits for its answer (`syncagent sync`), and hands it to `sink`; `stop` ends it after one last
/// look (finished work stays on the board a few seconds at 100 %, so the last look shows its end).
/// Nothing runs for it when nobody asked for progress.
final class ProgressPoller: Sendable {
    private let condition = Condition()
    private let state = Mutex<(stopping: Bool, running: Bool)>((false, true))
    private let source: @Sendable () -> [ProgressReport]
    private let sink: @Sendable ([ProgressReport]) -> Void

    static let interval = 0.25

    init(source: @escaping @Sendable () -> [ProgressReport], sink: @escaping @Sendable ([ProgressReport]) -> Void) {
        self.source = source
        self.sink = sink
        OwnThread.start(name: "syncagent-progress") { [self] in
            condition.lock()
            while !state.withLock({ $0.stopping }) {
                condition.unlock()
                sink(source())
                condition.lock()
                if state.withLock({ $0.stopping }) { break }
                _ = condition.wait(until: Deadline(in: Self.interval))
            }
            state.withLock { $0.running = false }
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Stops the thread, waits for it, then shows the last look.
    func stop() {
        condition.lock()
        state.withLock { $0.stopping = true }
        condition.broadcast()
        while state.withLock({ $0.running }) { condition.wait() }
        condition.unlock()
        sink(source())
    }

    /// The long work of the agent that answers at `socket` (`[]` when it cannot tell: an agent of
    /// an older version, or gone).
    static func fromAgent(socket: FilePath) -> @Sendable () -> [ProgressReport] {
        {
            guard let line = try? ControlClient.send(.progress, to: socket, timeoutSeconds: 5) else { return [] }
            return (try? JSONDecoder().decode([ProgressReport].self, from: Data(line))) ?? []
        }
    }
}
