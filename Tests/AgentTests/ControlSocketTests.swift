import Foundation
import Logging
import Synchronization
import SyncCore
import SystemPackage
import TestSupport
import Testing

@testable import Agent

/// The control protocol over a real Unix socket: what the CLI sends is what the agent's handler
/// gets, names byte for byte, and a streamed answer arrives line by line.
@Suite struct ControlSocketTests {
    /// A path that is not UTF-8 and holds a newline: JSON carries it as bytes, never as text.
    static let oddName: [UInt8] = [0x64, 0x2f, 0xff, 0x0a, 0x66]

    final class Seen: Sendable {
        let requests = Mutex<[ControlRequest]>([])
    }

    init() { signal(SIGPIPE, SIG_IGN) }  // as the agent does: a client that goes away must not kill it

    @Test func requestsArriveExactlyAndOneLineComesBack() async throws {
        let dir = try TempDirectory("control")
        let server = try ControlServer(path: dir.root.appending("agent.sock"))
        defer { server.stop() }
        let seen = Seen()
        server.start(handler: { request in
            seen.requests.withLock { $0.append(request) }
            guard case .revert(let paths) = request else { return .line(Array("unexpected".utf8)) }
            let echo = MessageResult(message: paths.map { $0.map { String($0, radix: 16) }.joined(separator: ".") }.joined(separator: ","), error: nil)
            return .line(Array(try! JSONEncoder().encode(echo)))
        }, logger: Logger(label: "test"))

        // The CLI's side blocks: a thread of its own, never Swift's cooperative pool.
        let answer = try await onOwnThread("test-client") { [path = server.path] in
            // The handler runs as a task: under a full parallel test run, other suites' blocking
            // tests may hold Swift's pool for a while, so wait for the answer, not for a time.
            Result { try ControlClient.send(.revert(paths: [Self.oddName, Array("plain".utf8)]), to: path, timeoutSeconds: 600) }
        }.get()
        let result = try JSONDecoder().decode(MessageResult.self, from: Data(answer))
        #expect(result.message == "64.2f.ff.a.66,70.6c.61.69.6e")
        guard case .revert(let paths)? = seen.requests.withLock({ $0.first }) else {
            Issue.record("the handler did not get the revert request")
            return
        }
        #expect(paths == [Self.oddName, Array("plain".utf8)])
    }

    @Test func aStreamedAnswerArrivesLineByLineUntilTheAgentCloses() async throws {
        let dir = try TempDirectory("control")
        let server = try ControlServer(path: dir.root.appending("agent.sock"))
        defer { server.stop() }
        server.start(handler: { request in
            guard case .events(let since, let follow) = request, since == 7, follow else { return .line([]) }
            return .stream { fd in
                for n in 8...10 { _ = UnixSocket.writeAll(fd, Array("{\"seq\":\(n)}\n".utf8)) }
            }
        }, logger: Logger(label: "test"))

        let lines = try await onOwnThread("test-client") { [path = server.path] in
            Result { () throws(ControlError) -> [String] in
                var lines: [String] = []
                try ControlClient.stream(.events(since: 7, follow: true), to: path) { line in
                    lines.append(String(decoding: line, as: UTF8.self))
                    return true
                }
                return lines
            }
        }.get()
        #expect(lines == ["{\"seq\":8}", "{\"seq\":9}", "{\"seq\":10}"])
    }

    @Test func noAgentIsAClearError() throws {
        let dir = try TempDirectory("control")
        let path = dir.root.appending("agent.sock")
        #expect {
            try ControlClient.send(.status, to: path)
        } throws: { error in
            (error as? ControlError)?.message.contains("cannot reach the agent at \(path)") == true
        }
    }
}
