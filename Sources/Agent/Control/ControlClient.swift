import FoundationEssentials
import Glibc
import Synchronization
import Logging
import SyncCore
import SystemPackage

/// The CLI side of the control socket.
public enum ControlClient {
    /// Sends one request and hands each line of the answer to `line` until the agent closes the
    /// stream (or `line` returns false). Throws when no agent answers.
    public static func stream(_ request: ControlRequest, to path: FilePath, cancel: ControlCancel? = nil,
                              line: ([UInt8]) -> Bool) throws(ControlError) {
        guard let addr = UnixSocket.address(path) else {
            throw ControlError(message: "the control socket path \(path) is too long")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlError(message: "socket() failed: \(Errno(rawValue: errno))") }
        defer { close(fd) }
        guard UnixSocket.withSockaddr(addr, { connect(fd, $0, $1) }) == 0 else {
            throw ControlError(message: "cannot reach the agent at \(path): \(Errno(rawValue: errno))")
        }
        let body = (try? JSONEncoder().encode(request)) ?? Data()
        guard UnixSocket.writeAll(fd, Array(body) + [UInt8(ascii: "\n")]) else {
            throw ControlError(message: "cannot send to the agent at \(path): \(Errno(rawValue: errno))")
        }
        guard cancel?.connected(fd) ?? true else { return }
        defer { cancel?.disconnected() }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            pending += buffer[0..<n]
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let one = Array(pending[..<end])
                pending.removeSubrange(...end)
                if !line(one) { return }
            }
        }
    }

    /// Sends one request and returns the raw response line; throws when no agent answers.
    public static func send(_ request: ControlRequest, to path: FilePath, timeoutSeconds: Int = 10) throws(ControlError) -> [UInt8] {
        guard let addr = UnixSocket.address(path) else {
            throw ControlError(message: "the control socket path \(path) is too long")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlError(message: "socket() failed: \(Errno(rawValue: errno))") }
        defer { close(fd) }
        UnixSocket.setTimeout(fd, seconds: timeoutSeconds)
        guard UnixSocket.withSockaddr(addr, { connect(fd, $0, $1) }) == 0 else {
            throw ControlError(message: "cannot reach the agent at \(path): \(Errno(rawValue: errno))")
        }
        let body = (try? JSONEncoder().encode(request)) ?? Data()
        guard UnixSocket.writeAll(fd, Array(body) + [UInt8(ascii: "\n")]),
              let line = UnixSocket.readLine(fd) else {
            throw ControlError(message: "the agent at \(path) did not answer within \(timeoutSeconds) s", timedOut: true)
        }
        return line
    }
}

/// Ends a blocking `ControlClient.stream` (or `OneShot.events`) from another thread, at once: the
/// connection is shut down, and a wait for the next agent wakes.
public final class ControlCancel: Sendable {
    private struct State {
        var cancelled = false
        var fd: Int32 = -1
    }
    private let state = Mutex(State())
    /// Readable once cancelled (a pipe's reading end), for waits that poll.
    let wake: Int32
    private let ring: Int32

    public init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 { for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } }
        (wake, ring) = (fds[0], fds[1])
    }
    deinit {
        if wake >= 0 { close(wake) }
        if ring >= 0 { close(ring) }
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    public func cancel() {
        state.withLock { s in
            s.cancelled = true
            // Under the lock: the reading thread closes its descriptor only after `disconnected()`,
            // so this number is still that connection's.
            if s.fd >= 0 { _ = shutdown(s.fd, Int32(SHUT_RDWR)) }
        }
        if ring >= 0 { var one: UInt8 = 1; _ = write(ring, &one, 1) }
    }

    /// False when cancelled already (then nothing is read).
    func connected(_ fd: Int32) -> Bool {
        state.withLock { s in
            guard !s.cancelled else { return false }
            s.fd = fd
            return true
        }
    }

    func disconnected() { state.withLock { $0.fd = -1 } }
}
