import FoundationEssentials
import Platform
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
        OwnThread.start(name: "syncagent-control") {
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
                        OwnThread.start(name: "syncagent-control-stream") {
                            body(client)
                            close(client)
                        }
                    }
                }
            }
        }
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
