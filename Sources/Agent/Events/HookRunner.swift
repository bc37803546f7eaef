import FoundationEssentials
import Glibc
import Platform
import Logging
import SyncCore

/// Runs one `[[hook]]`: a thread of its own takes the events it asked for and runs its command with
/// the event as one JSON line on stdin, one at a time, each with the hook's timeout. It never delays
/// the engine: events wait in the hook's queue, and a hook that falls 1,000 events behind loses the
/// oldest (logged). Failures and timeouts go to the log.
final class HookRunner: Sendable {
    let hook: HookConfig
    private let queue: EventQueue
    private let bus: EventBus
    private let logger: Logger

    init(hook: HookConfig, bus: EventBus, logger: Logger) {
        self.hook = hook
        self.bus = bus
        self.logger = logger
        queue = bus.listen(limit: 1000)
    }

    func start() {
        OwnThread.start(name: "syncagent-hook") { [self] in loop() }
    }

    private func loop() {
        let wanted = Set(hook.events)
        while let (events, dropped) = queue.next(timeout: 60) {
            if dropped > 0 {
                logger.warning("hook \(hook.command[0]) fell behind: \(dropped) events were not given to it; make it faster or give it fewer event types")
            }
            for event in events where wanted.contains(event.type.rawValue) { run(event) }
        }
        bus.unlisten(queue)
    }

    private func run(_ event: AgentEvent) {
        let name = hook.command[0]
        let what = "event \(event.seq ?? 0) (\(event.type))"
        switch ChildProcess.run(hook.command, stdin: event.jsonLine + [UInt8(ascii: "\n")], timeoutSeconds: hook.timeoutSeconds) {
        case .exited(0, _):
            break
        case .exited(let status, let stderr):
            let said = stderr.trimmed(newlines: true)
            logger.warning("hook \(name) exited \(status) for \(what)\(said.isEmpty ? "" : ": \(said)")")
        case .timedOut:
            logger.warning("hook \(name) did not finish within \(hook.timeoutSeconds) s for \(what); it was stopped (with what it started). Raise timeout_seconds in [[hook]] or make the hook faster")
        case .cannotStart(let why):
            logger.error("hook \(name) could not start for \(what): \(why); check [[hook]] command in the config")
        }
    }
}
