import Glibc
import ServiceLifecycle
import Synchronization

/// The stop signal (SIGTERM or SIGINT) that arrived before the service group listened, 0 if none.
private let earlyStop = Atomic<Int32>(0)

private func noteStopSignal(_ signo: Int32) {
    earlyStop.store(signo, ordering: .relaxed)  // lock-free: safe in a signal handler
}

/// SIGTERM or SIGINT during start-up (lock, store, watches: before the service group installs its
/// own handlers) must stop the agent cleanly with exit status 0, as `systemctl stop` expects, not
/// kill it with the default action. `catchEarly` is the first thing `run` does; `handOver` passes a
/// signal caught meanwhile to the group, which then starts and stops its services gracefully.
public enum StopSignals {
    private static let signals = [SIGTERM, SIGINT]

    public static func catchEarly() {
        for signo in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = noteStopSignal
            sigemptyset(&action.sa_mask)
            sigaction(signo, &action, nil)
        }
    }

    /// Whether a stop signal came during start-up.
    public static var requested: Bool { earlyStop.load(ordering: .relaxed) != 0 }

    /// Runs beside `group.run()`: until the group's handlers have replaced ours, a stop signal
    /// caught by ours triggers the group's graceful shutdown (remembered if it has not started yet).
    /// Returns true when it passed on a signal.
    @discardableResult
    public static func handOver(to group: ServiceGroup) async -> Bool {
        while !Task.isCancelled {
            let replaced = !signals.contains(where: isOurs)
            if requested {
                await group.triggerGracefulShutdown()
                return true
            }
            if replaced { return false }  // from now on the group hears every signal itself
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    private static func isOurs(_ signo: Int32) -> Bool {
        var current = sigaction()
        sigaction(signo, nil, &current)
        guard let handler = current.__sigaction_handler.sa_handler else { return false }
        return unsafeBitCast(handler, to: UnsafeRawPointer.self)
            == unsafeBitCast(noteStopSignal as @convention(c) (Int32) -> Void, to: UnsafeRawPointer.self)
    }
}
