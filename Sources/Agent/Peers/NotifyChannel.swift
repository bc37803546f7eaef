import FoundationEssentials
import Glibc
import Platform
import Logging
import Synchronization
import SyncCore

/// The agent's end of a notify channel (`[[peer]] notify`): keeps a program running that prints a
/// line whenever the peer's refs move (`ssh ... syncagent notify-changes PATH`, or
/// `notify_command`) and rings the peer's doorbell on every line, so a change is fetched at once
/// instead of at the next poll. `READY` (the channel is open again) rings too: what moved while
/// it was down is fetched at once. When the program ends, the peer is polled until it is back
/// (1 s, doubling to 60 s, between tries; at once when the peer answers again after being out of
/// reach). Its output is read on threads of its own.
final class NotifyChannel: Sendable {
    enum State: Sendable, Equatable {
        case connecting
        case listening
        case down(String)
    }

    private let command: [String]
    private let peer: String
    private let bell: Doorbell
    private let logger: Logger
    private let current = Mutex<(state: State, lastDown: String?)>((.connecting, nil))

    /// Called for every line that names a moved ref (not for `READY`).
    private let onMove: @Sendable () -> Void

    init(command: [String], peer: String, bell: Doorbell, logger: Logger, onMove: @escaping @Sendable () -> Void = {}) {
        self.command = command
        self.peer = peer
        self.bell = bell
        self.logger = logger
        self.onMove = onMove
    }

    /// Rung when the peer answers again after a time out of reach: the channel tries at once
    /// instead of at the end of its backoff.
    private let retry = Doorbell()

    /// Asks a channel that is down to try again now (it was down because the peer could not be
    /// reached, and now it can). A channel that is open ignores it.
    func retryNow() {
        if !isListening { retry.ring() }
    }

    var state: State { current.withLock { $0.state } }
    var isListening: Bool { state == .listening }

    /// What `status` shows: `listening`, `connecting`, or why it is down (kept while it tries
    /// again) and that the peer is polled meanwhile.
    func statusText(pollSeconds: Int) -> String {
        current.withLock { c in
            switch c.state {
            case .listening: "listening"
            case .connecting, .down:
                c.lastDown.map { "down: \($0); polling every \(pollSeconds) s" } ?? "connecting"
            }
        }
    }

    /// Keeps the channel open until the task is cancelled.
    func run() async {
        var backoff: Duration = .seconds(1)
        while !Task.isCancelled {
            set(.connecting)
            let ended = await connectOnce()
            if Task.isCancelled { break }
            if ended.wasReady { backoff = .seconds(1) }
            let why = "the notify channel (\(command.joined(separator: " "))) ended: \(ended.reason)"
            set(.down(why))
            bell.ring()  // polling again, starting now
            // Until the next try, or until the peer answers again (`retryNow`), or the agent stops.
            _ = await withTaskCancellationHandler {
                await retry.wait(upTo: backoff)
            } onCancel: { [retry] in
                retry.ring()
            }
            backoff = min(backoff * 2, .seconds(60))
        }
    }

    private func set(_ new: State) {
        let changed = current.withLock { c -> Bool in
            defer {
                c.state = new
                if case .down(let why) = new { c.lastDown = why }
                if new == .listening { c.lastDown = nil }
            }
            return c.state != new
        }
        guard changed else { return }
        switch new {
        case .listening: logger.info("peer \(peer): notify channel open; fetching when its refs move")
        case .down(let why): logger.warning("peer \(peer): \(why). Polling meanwhile; retried.")
        case .connecting: break
        }
    }

    private struct Ended: Sendable {
        var reason: String
        var wasReady: Bool
    }

    /// Runs the program once, until it ends (or the task is cancelled: then it is stopped).
    private func connectOnce() async -> Ended {
        let process: ChildProcess.Started
        switch ChildProcess.start(command, ownGroup: true, output: true) {
        case .success(let started): process = started
        case .failure(let why):
            return Ended(reason: "it could not start (\(why.reason)); check that \(command.first ?? "the program") is installed", wasReady: false)
        }
        // stdin is kept open: the program ends when the agent goes away.
        let input = Mutex<Int32>(process.input)
        @Sendable func closeInput() { input.withLock { if $0 >= 0 { close($0); $0 = -1 } } }
        let exited = ProcessEnd(process.pid)
        defer { exited.close() }
        let stderrTail = Mutex<[UInt8]>([])
        let stderrDone = readAll(process.errors, name: "syncagent-notify-err", lines: false) { chunk in
            stderrTail.withLock { tail in
                tail += chunk
                if tail.count > 2048 { tail.removeFirst(tail.count - 2048) }
            }
        }
        let ready = Atomic<Bool>(false)
        let bell = self.bell
        let stdoutDone = readAll(process.output, name: "syncagent-notify", lines: true) { line in
            if line.elementsEqual("READY".utf8) {
                ready.store(true, ordering: .releasing)
                self.set(.listening)
            } else {
                self.onMove()
            }
            bell.ring()
        }
        await withTaskCancellationHandler {
            await stdoutDone.value
        } onCancel: {
            closeInput()
            kill(process.pid, SIGTERM)
        }
        kill(process.pid, SIGTERM)  // stdout closed: it is ending anyway
        await stderrDone.value
        let raw = await onOwnThread("syncagent-notify-end") { exited.reap() }
        closeInput()
        let signalled = raw & 0x7f != 0
        let status = signalled ? raw & 0x7f : (raw >> 8) & 0xff
        let said = String(decoding: stderrTail.withLock { $0 }, as: UTF8.self)
            .split(whereSeparator: \.isNewline).map { $0.trimmed() }.filter { !$0.isEmpty }
        var reason = signalled ? "stopped by signal \(status)" : "it exited with status \(status)"
        if let last = said.last { reason += ": \(last)" }
        if status == 127 || said.contains(where: { ($0.includes("notify-changes") || $0.includes("syncagent")) && $0.includes("not found") }) {
            reason += " (install syncagent on the server, on the PATH of the account the url logs in as, or set notify_command)"
        } else if said.contains(where: { $0.includes("Host key verification failed") }) {
            reason += " (the server's host key is not in the known_hosts file this peer uses)"
        } else if said.contains(where: { $0.includes("Permission denied") }) {
            reason += " (the server refused this device's key)"
        }
        return Ended(reason: reason, wasReady: ready.load(ordering: .acquiring))
    }

    /// Reads `fd` to its end on a thread of its own (then closes it), handing `body` each line
    /// (without its newline) or, with `lines: false`, each chunk as it comes.
    private func readAll(_ fd: Int32, name: String, lines: Bool,
                         body: @escaping @Sendable ([UInt8]) -> Void) -> Task<Void, Never> {
        let (done, finish) = AsyncStream.makeStream(of: Void.self)
        OwnThread.start(name: name) {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                guard lines else {
                    body(Array(buffer[0..<n]))
                    continue
                }
                pending += buffer[0..<n]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    body(Array(pending[..<newline]))
                    pending.removeFirst(newline + 1)
                }
            }
            close(fd)
            finish.finish()
        }
        return Task { for await _ in done {} }
    }
}
