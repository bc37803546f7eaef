import FoundationEssentials
import Platform
import Glibc
import ServiceLifecycle
import Synchronization

/// The first stop signal (SIGTERM or SIGINT), 0 if none yet.
private let stopSignal = Atomic<Int32>(0)
/// The write end of the self-pipe the handler wakes the forwarding thread with; -1 before `catchEarly`.
private let wakeFD = Atomic<Int32>(-1)

private func noteStopSignal(_ signo: Int32) {
    // Async-signal-safe only: a lock-free store and write(2).
    _ = stopSignal.compareExchange(expected: 0, desired: signo, ordering: .relaxed)
    var byte: UInt8 = 1
    let fd = wakeFD.load(ordering: .relaxed)
    if fd >= 0 { _ = write(fd, &byte, 1) }
}

/// SIGTERM and SIGINT belong to the agent from the first thing `run` does until it exits: a stop
/// during start-up (lock, store, watches) or at any later moment ends the agent cleanly with exit
/// status 0, as `systemctl stop` expects. The handler only writes to a pipe; a thread of its own
/// reads it and asks the service group to shut down gracefully. (The group's own signal handling
/// sets SIG_IGN before its dispatch source listens: a signal in between was lost, and the agent
/// ran on; `make e2e` caught it.)
public enum StopSignals {
    /// SIGINT first: a test (and systemd) sees SIGTERM caught only once both are.
    private static let signals = [SIGINT, SIGTERM]
    private static let readFD = Mutex<Int32>(-1)

    /// Installs the handlers (once; later calls do nothing).
    public static func catchEarly() {
        let fresh = readFD.withLock { fd -> Bool in
            guard fd < 0 else { return false }
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { return false }
            for end in fds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)  // a handler never blocks on a full pipe
            fd = fds[0]
            wakeFD.store(fds[1], ordering: .relaxed)
            return true
        }
        guard fresh else { return }
        // Blocked by whoever started us, they would wait pending for ever: unblock them.
        var mask = sigset_t()
        sigemptyset(&mask)
        for signo in signals { sigaddset(&mask, signo) }
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        for signo in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = noteStopSignal
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signo, &action, nil)
        }
    }

    /// Whether a stop signal has come.
    public static var requested: Bool { stopSignal.load(ordering: .relaxed) != 0 }

    /// Runs beside `group.run()` (whose `gracefulShutdownSignals` must be empty): the first stop
    /// signal, or one that came before this call, triggers the group's graceful shutdown. Ends
    /// when it did, or when cancelled. Returns true when the signal had come before this call
    /// (during start-up).
    @discardableResult
    public static func forward(to group: ServiceGroup) async -> Bool {
        let early = requested
        let fd = readFD.withLock { $0 }
        guard fd >= 0 else { return false }
        let signalled = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                OwnThread.start(name: "syncagent-signals") {
                    var byte: UInt8 = 0
                    while true {
                        let n = read(fd, &byte, 1)
                        if n < 0 && errno == EINTR { continue }
                        break
                    }
                    c.resume(returning: byte == 1)
                }
            }
        } onCancel: {
            var byte: UInt8 = 0  // not a signal: the group ended by itself
            let wfd = wakeFD.load(ordering: .relaxed)
            if wfd >= 0 { _ = write(wfd, &byte, 1) }
        }
        if signalled { await group.triggerGracefulShutdown() }
        return early && signalled
    }
}
