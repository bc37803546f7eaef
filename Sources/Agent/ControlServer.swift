import Foundation
import Glibc
import Logging
import SyncCore
import SystemPackage

/// The agent's control socket (`<state>/agent.sock`, mode 0600): one JSON request line in, one JSON
/// response line out. CLI commands talk to the running agent through it.
final class ControlServer: Sendable {
    typealias Handler = @Sendable (ControlRequest) async -> ControlAnswer

    let path: FilePath
    private let fd: Int32

    /// Binds the socket, replacing a stale one (the caller holds the agent lock, so no live agent
    /// owns it).
    init(path: FilePath) throws(ControlError) {
        guard let addr = UnixSocket.address(path) else {
            throw ControlError(message: "the control socket path \(path) is longer than \(UnixSocket.maxPathLength) bytes; choose a shorter state directory")
        }
        unlink(path.string)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlError(message: "socket() failed: \(Errno(rawValue: errno))") }
        let oldMask = umask(0o177)
        let rc = UnixSocket.withSockaddr(addr) { bind(fd, $0, $1) }
        umask(oldMask)
        guard rc == 0, listen(fd, 16) == 0 else {
            let err = Errno(rawValue: errno)
            close(fd)
            throw ControlError(message: "cannot listen on \(path): \(err)")
        }
        chmod(path.string, 0o600)
        self.path = path
        self.fd = fd
    }

    /// Accepts connections on a thread of its own until `stop()`.
    func start(handler: @escaping Handler, logger: Logger) {
        let fd = self.fd
        let thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return  // closed by stop()
                }
                UnixSocket.setTimeout(client, seconds: 5)
                guard let line = UnixSocket.readLine(client),
                      let request = try? JSONDecoder().decode(ControlRequest.self, from: Data(line)) else {
                    close(client)
                    continue
                }
                Task {
                    switch await handler(request) {
                    case .line(let response):
                        _ = UnixSocket.writeAll(client, response + [UInt8(ascii: "\n")])
                        close(client)
                    case .stream(let body):
                        // A long answer (`events --follow`) gets a thread of its own.
                        let thread = Thread {
                            body(client)
                            close(client)
                        }
                        thread.name = "syncagent-control-stream"
                        thread.start()
                    }
                }
            }
        }
        thread.name = "syncagent-control"
        thread.start()
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        unlink(path.string)
    }
}

/// How the agent answers one request: one line, or a stream of lines written by a body that runs
/// on a thread of its own until it returns (the socket is closed then).
enum ControlAnswer: Sendable {
    case line([UInt8])
    case stream(@Sendable (Int32) -> Void)
}

/// A request on the control socket: one JSON line, answered by one JSON line (or, for `events`,
/// one line per event).
public enum ControlRequest: Codable, Sendable {
    /// Answer: `StatusReport`.
    case status
    /// Answer: `[SyncResult]`.
    case sync(peer: String?)
    /// Answer: `[ResolveResult]`.
    case resolve(targets: [RecordTarget], all: Bool, choice: ResolveChoiceArgument)
    /// Answer: `MessageResult`.
    case sendDeletes
    /// Answer: `[HeldEntry]`.
    case held
    /// Answer: `MessageResult`. Paths relative to the data directory, as bytes.
    case send(paths: [[UInt8]], all: Bool)
    /// Answer: `MessageResult`.
    case revert(paths: [[UInt8]])
    /// Answer: `MessageResult`. The path relative to the data directory, as bytes.
    case restore(path: [UInt8], at: String?)
    /// Answer: one `AgentEvent` per line: the kept ones after `since`, then (with `follow`) every new
    /// one until the client hangs up or the agent stops.
    case events(since: Int?, follow: Bool)

    /// The subcommand that makes this request (one word: the agent lock names its holder with it).
    var commandName: String {
        switch self {
        case .status: "status"
        case .sync: "sync"
        case .resolve: "resolve"
        case .sendDeletes, .send: "send"
        case .held: "held"
        case .revert: "revert"
        case .restore: "restore"
        case .events: "events"
        }
    }
}

/// A one-line answer.
public struct MessageResult: Codable, Sendable {
    public var message: String
    public var error: String?
}

/// A resolution as the CLI states it: `keep` (a device, "newest" or "both"), `withFile`, or `delete`.
public struct ResolveChoiceArgument: Codable, Sendable {
    public var keep: String?
    public var withFile: String?
    /// The bytes of the `--with` file, read by the CLI from the argument's exact bytes (so a name
    /// that is not UTF-8 works, and the agent needs no access to the caller's directory).
    public var withContent: [UInt8]?
    public var delete: Bool
    public init(keep: String?, withFile: String?, delete: Bool) {
        self.keep = keep
        self.withFile = withFile
        self.delete = delete
    }
}

public struct ControlError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// The CLI side of the control socket.
public enum ControlClient {
    /// Sends one request and hands each line of the answer to `line` until the agent closes the
    /// stream (or `line` returns false). Throws when no agent answers.
    public static func stream(_ request: ControlRequest, to path: FilePath, line: ([UInt8]) -> Bool) throws(ControlError) {
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
            throw ControlError(message: "the agent at \(path) did not answer within \(timeoutSeconds) s")
        }
        return line
    }
}
