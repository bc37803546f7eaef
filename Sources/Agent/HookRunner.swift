import Foundation
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
        let thread = Thread { [self] in loop() }
        thread.name = "syncagent-hook"
        thread.start()
    }

    private func loop() {
        let wanted = Set(hook.events)
        while let (events, dropped) = queue.next(timeout: 60) {
            if dropped > 0 {
                logger.warning("hook \(hook.command[0]) fell behind: \(dropped) events were not given to it; make it faster or give it fewer event types")
            }
            for event in events where wanted.contains(event.type) { run(event) }
        }
        bus.unlisten(queue)
    }

    private func run(_ event: AgentEvent) {
        let name = hook.command[0]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = hook.command
        let stdin = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = stderr
        do {
            try process.run()
        } catch {
            logger.error("hook \(name) could not start for event \(event.seq ?? 0) (\(event.type)): \(error); check [[hook]] command in the config")
            return
        }
        // The event line, then EOF; a hook that does not read stdin must not block us.
        let line = Data(event.jsonLine + [UInt8(ascii: "\n")])
        let writer = stdin.fileHandleForWriting
        DispatchQueue.global().async {
            try? writer.write(contentsOf: line)
            try? writer.close()
        }
        let errors = ErrorTail()
        let reader = stderr.fileHandleForReading
        reader.readabilityHandler = { handle in errors.add(handle.availableData) }
        let deadline = Date(timeIntervalSinceNow: TimeInterval(hook.timeoutSeconds))
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            let grace = Date(timeIntervalSinceNow: 2)
            while process.isRunning && Date() < grace { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            reader.readabilityHandler = nil
            logger.warning("hook \(name) did not finish within \(hook.timeoutSeconds) s for event \(event.seq ?? 0) (\(event.type)); it was stopped. Raise timeout_seconds or make the hook faster")
            return
        }
        process.waitUntilExit()
        reader.readabilityHandler = nil
        if process.terminationStatus != 0 {
            logger.warning("hook \(name) exited \(process.terminationStatus) for event \(event.seq ?? 0) (\(event.type)): \(errors.text)")
        }
    }
}

/// The last 2 KB a hook wrote to stderr.
private final class ErrorTail: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func add(_ more: Data) {
        lock.lock()
        data.append(more)
        if data.count > 2048 { data = data.suffix(2048) }
        lock.unlock()
    }
    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
