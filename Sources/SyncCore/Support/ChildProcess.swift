import Glibc
import Platform

/// Runs an external program (a hook, a merge command) in a process group of its own: `stdin` fed to
/// it, stdout discarded, the tail of stderr kept. At the timeout the whole group (the program and
/// anything it started) gets SIGTERM, then SIGKILL two seconds later. Blocking: call it on a thread
/// of its own (the engine's, a hook's), never on the cooperative pool.
public enum ChildProcess {
    public enum Outcome: Equatable, Sendable {
        case exited(status: Int32, stderr: String)
        case timedOut
        case cannotStart(String)
    }

    public static func run(_ argv: [String], stdin: [UInt8] = [], timeoutSeconds: Int) -> Outcome {
        let child: Started
        switch start(argv, ownGroup: true, output: false) {
        case .success(let started): child = started
        case .failure(let why): return .cannotStart(why.reason)
        }
        let pid = child.pid
        let input = child.input, errors = child.errors
        // The event, then EOF; a hook that does not read it must not block us.
        _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK)
        _ = stdin.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
        close(input)
        _ = fcntl(errors, F_SETFL, fcntl(errors, F_GETFL) | O_NONBLOCK)
        defer { close(errors) }
        var tail: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        func drain() {
            while true {
                let n = read(errors, &buffer, buffer.count)
                guard n > 0 else { return }
                tail += buffer[0..<n]
                if tail.count > 16384 { tail.removeFirst(tail.count - 16384) }
            }
        }
        var status: Int32 = 0
        let deadline = monotonicSeconds() + Double(timeoutSeconds)
        // Woken by the program's end (a pidfd) or its stderr, never by a clock tick.
        let exited = ProcessEnd(pid)
        defer { exited.close() }
        var stderrOpen = true
        while !exited.isOver(waiting: 0) {
            let left = deadline - monotonicSeconds()
            if left <= 0 {
                kill(-pid, SIGTERM)
                if !exited.isOver(waiting: 2) { kill(-pid, SIGKILL) }
                _ = exited.reap()
                kill(-pid, SIGKILL)  // whatever it started is stopped too
                return .timedOut
            }
            var fds = [pollfd(fd: stderrOpen ? errors : -1, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: exited.fd, events: Int16(POLLIN), revents: 0)]
            // Without a pidfd (an old kernel), the end is looked for every 10 ms.
            let wait = exited.fd >= 0 ? Int32(min(left * 1000 + 1, Double(Int32.max))) : 10
            _ = poll(&fds, 2, wait)
            if fds[0].revents & Int16(POLLIN) != 0 { drain() }
            if fds[0].revents & Int16(POLLHUP | POLLERR) != 0 && fds[0].revents & Int16(POLLIN) == 0 { stderrOpen = false }
        }
        status = exited.reap()
        drain()
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return .exited(status: exit, stderr: String(decoding: tail, as: UTF8.self))
    }

    /// A program started with pipes to its stdin, stdout (unless `output` is false: /dev/null) and
    /// stderr; the ends kept here are close-on-exec (another thread's spawn can still inherit them
    /// for a moment: pipe2 is not exported to Swift).
    public struct Started: Sendable {
        public let pid: pid_t
        public let input: Int32
        public let output: Int32
        public let errors: Int32
    }

    public struct CannotStart: Error, Sendable { public let reason: String }

    /// Starts `argv` as `Spawn.start` does, with pipes to its stdin, stdout and stderr. Reap it
    /// with `ProcessEnd`.
    public static func start(_ argv: [String], ownGroup: Bool, output: Bool) -> Result<Started, CannotStart> {
        var pipes: [[Int32]] = []
        func closeAll() { for p in pipes { close(p[0]); close(p[1]) } }
        for _ in 0..<(output ? 3 : 2) {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else {
                let why = String(cString: strerror(errno))
                closeAll()
                return .failure(CannotStart(reason: "pipe: \(why)"))
            }
            for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            pipes.append(ends)
        }
        let input = pipes[0], errors = pipes[1], out = output ? pipes[2] : nil
        let spawned = Spawn.start(argv, stdin: input[0], stdout: out?[1], stderr: errors[1], ownGroup: ownGroup)
        close(input[0]); close(errors[1])
        if let out { close(out[1]) }
        switch spawned {
        case .success(let pid):
            return .success(Started(pid: pid, input: input[1], output: out?[0] ?? -1, errors: errors[0]))
        case .failure(let why):
            close(input[1]); close(errors[0])
            if let out { close(out[0]) }
            return .failure(CannotStart(reason: why.reason))
        }
    }

    private static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A child's end, as a file descriptor that becomes readable when it exits (`pidfd_open`, looked
/// up in the C library at run time: Swift's Glibc module does not declare it). Where the kernel or
/// the library lacks it (`fd` is -1), the end is looked for every 10 ms instead.
public final class ProcessEnd: @unchecked Sendable {
    let pid: pid_t
    let fd: Int32
    /// The wait status, once reaped.
    private(set) var status: Int32?

    private typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
    private static let open: PidfdOpen? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open")
        .map { unsafeBitCast($0, to: PidfdOpen.self) }

    public init(_ pid: pid_t) {
        self.pid = pid
        fd = Self.open.map { $0(pid, 0) } ?? -1
    }

    /// Whether the child has exited (then reaped, its status kept), waiting up to `seconds`.
    public func isOver(waiting seconds: Double) -> Bool {
        if status != nil { return true }
        var rounds = max(0, Int(seconds * 100))
        while true {
            if fd >= 0 {
                var one = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                var rc: Int32
                repeat { rc = poll(&one, 1, Int32(seconds * 1000)) } while rc < 0 && errno == EINTR
                guard rc == 1 else { return false }
            }
            var raw: Int32 = 0
            let done = waitpid(pid, &raw, WNOHANG)
            if done == pid || (done < 0 && errno != EINTR) {
                // ECHILD: reaped elsewhere (an embedding program that ignores SIGCHLD); its status is
                // unknown, so it counts as a failure (127), never as a success.
                status = done == pid ? raw : 127 << 8
                return true
            }
            if fd >= 0 && done == 0 { continue }  // readable yet not reapable: look again
            if rounds == 0 { return false }
            rounds -= 1
            usleep(10_000)
        }
    }

    /// Waits for the end without a limit.
    public func reap() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        var done: pid_t
        repeat { done = waitpid(pid, &raw, 0) } while done < 0 && errno == EINTR
        status = done == pid ? raw : 127 << 8  // see `isOver`
        return status!
    }

    public func close() { if fd >= 0 { _ = Glibc.close(fd) } }
}
