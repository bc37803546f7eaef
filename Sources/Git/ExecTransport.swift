import CLibgit2
import ObjectStorage
import FoundationEssentials
import Glibc
import Platform
import Synchronization

/// Fetch and push over the OpenSSH client (`ssh ... git-upload-pack 'PATH'`) instead of libssh2,
/// for urls under `syncagentssh://` (letters only: libgit2's url parser takes no other scheme). What it buys: OpenSSH's connection sharing. With
/// `ControlMaster=auto` and a `ControlPersist` socket, every fetch and push after the first (or
/// after the notify channel, which opens the shared connection) costs a new channel on a live
/// connection, not a new handshake (~250 ms on loopback here). The smart protocol itself is
/// libgit2's; this only moves bytes between it and the `ssh` process.
public enum ExecTransport {
    public static let scheme = "syncagentssh://"

    /// How to reach one url: the `ssh` command up to and including the host, and the repository's
    /// path quoted for the server's shell; the service (`git-upload-pack`...) goes in between.
    public struct Target: Sendable, Equatable {
        public var command: [String]
        public var quotedPath: String
        /// Keep one session of each service started ahead, waiting for its first byte: the next
        /// fetch or push skips the server's session start (its login shell, ~90 ms on the test
        /// machines). Only for a server whose shell runs plain commands (`notify = "ssh"`): a
        /// forced command (gitolite) would refuse the waiting one.
        public var warm: Bool
        public init(command: [String], quotedPath: String, warm: Bool = false) {
            self.command = command
            self.quotedPath = quotedPath
            self.warm = warm
        }
    }

    private static let targets = Mutex<[String: Target]>([:])

    /// Makes `url` (starting with `scheme`) reachable through `target`.
    public static func set(_ target: Target, for url: String) throws(GitError) {
        try Libgit2.initialize()
        guard registered else {
            throw GitError(code: GitError.Code.generic, errorClass: 0, message: "cannot register the \(scheme) transport with libgit2", call: "git_transport_register")
        }
        targets.withLock { $0[url] = target }
    }

    static func target(for url: String) -> Target? { targets.withLock { $0[url] } }

    /// Sessions started ahead (`Target.warm`), one per url and service, each waiting in
    /// `read` for the line that lets the service start. Taken by the next `*_LS` action;
    /// refilled when the stream that used one is freed.
    private static let waiting = Mutex<[String: Child]>([:])

    /// Turns sessions started ahead on for `url` (a running agent's peer; a one-shot command
    /// would leave them behind), if its target allows them (`Target.warm`).
    public static func enableSessionsAhead(for url: String) {
        ahead.withLock { _ = $0.insert(url) }
    }

    /// The urls of `enableSessionsAhead(for:)`, until `forget(url:)`.
    private static let ahead = Mutex<Set<String>>([])

    private static func wantsAhead(_ url: String, _ target: Target) -> Bool {
        target.warm && ahead.withLock { $0.contains(url) }
    }

    /// Ends the sessions started ahead for `url` (the peer goes away with the agent).
    public static func forget(url: String) {
        ahead.withLock { _ = $0.remove(url) }
        let gone = waiting.withLock { w in
            let keys = w.keys.filter { $0.hasPrefix(url + " ") }
            return keys.compactMap { w.removeValue(forKey: $0) }
        }
        for child in gone { child.finish() }
        targets.withLock { _ = $0.removeValue(forKey: url) }
    }

    /// The command that runs `service` on the server, or with `ahead` one that first waits for
    /// one line (`read` takes no byte past its newline, and the service speaks first, so nothing
    /// else is sent before it starts). A session ended unused gets end-of-file there: `read`
    /// fails and the service never runs.
    static func remoteCommand(_ target: Target, service: String, ahead: Bool) -> [String] {
        target.command + [ahead ? "read go && exec \(service) \(target.quotedPath)"
                                : "\(service) \(target.quotedPath)"]
    }

    /// A session for `service` at `url`: the one started ahead when it is still healthy, else a
    /// new one.
    static func startSession(url: String, target: Target, service: String) throws(SpawnError) -> Child {
        let key = url + " " + service
        let warm = wantsAhead(url, target)
        if warm, let ready = waiting.withLock({ $0.removeValue(forKey: key) }) {
            var go: CChar = 0x0a
            if ready.isWaiting(), ready.write(&go, 1) == 0 {
                ready.refill = (url, service)
                return ready
            }
            ready.finish()
        }
        let child = try Child(remoteCommand(target, service: service, ahead: false))
        if warm { child.refill = (url, service) }
        return child
    }

    /// Starts the next session of `service` ahead, after one was used.
    static func refill(url: String, service: String) {
        guard let target = target(for: url), wantsAhead(url, target),
              let child = try? Child(remoteCommand(target, service: service, ahead: true)) else { return }
        // Checked again under the lock: a `forget` that came meanwhile must not leave it behind.
        let replaced = waiting.withLock { w -> Child? in
            guard ahead.withLock({ $0.contains(url) }) else { return child }
            defer { w[url + " " + service] = child }
            return w[url + " " + service]
        }
        replaced?.finish()
    }

    // libgit2 1.5 appends "://" itself, whatever its header says.
    private static let registered: Bool = git_transport_register(String(scheme.dropLast(3)), { out, owner, _ in
        git_transport_smart(out, owner, ExecTransport.definition)
    }, nil) == 0

    /// Written once, then only read by libgit2.
    nonisolated(unsafe) private static let definition: UnsafeMutableRawPointer = {
        let d = UnsafeMutablePointer<git_smart_subtransport_definition>.allocate(capacity: 1)
        d.initialize(to: git_smart_subtransport_definition(callback: { out, _, _ in
            let sub = UnsafeMutablePointer<syncagent_subtransport>.allocate(capacity: 1)
            sub.initialize(to: syncagent_subtransport())
            sub.pointee.parent.action = ExecTransport.action
            sub.pointee.parent.close = { _ in 0 }
            sub.pointee.parent.free = { sub in
                guard let sub else { return }
                let own = UnsafeMutableRawPointer(sub).assumingMemoryBound(to: syncagent_subtransport.self)
                Unmanaged<Session>.fromOpaque(own.pointee.owner).release()
                own.deinitialize(count: 1)
                own.deallocate()
            }
            sub.pointee.owner = Unmanaged.passRetained(Session()).toOpaque()
            out?.pointee = UnsafeMutableRawPointer(sub).assumingMemoryBound(to: git_smart_subtransport.self)
            return 0
        }, rpc: 0, param: nil))
        return UnsafeMutableRawPointer(d)
    }()

    /// One subtransport: the stream of its `*_LS` action is used again by the action after it.
    final class Session {
        var stream: UnsafeMutablePointer<syncagent_stream>?
    }

    private static let action: @convention(c) (
        UnsafeMutablePointer<UnsafeMutablePointer<git_smart_subtransport_stream>?>?,
        UnsafeMutablePointer<git_smart_subtransport>?, UnsafePointer<CChar>?, git_smart_service_t
    ) -> Int32 = { out, sub, url, action in
        guard let out, let sub, let url else { return -1 }
        let session = Unmanaged<Session>.fromOpaque(
            UnsafeMutableRawPointer(sub).assumingMemoryBound(to: syncagent_subtransport.self).pointee.owner).takeUnretainedValue()
        if action == GIT_SERVICE_UPLOADPACK || action == GIT_SERVICE_RECEIVEPACK, let stream = session.stream {
            out.pointee = UnsafeMutableRawPointer(stream).assumingMemoryBound(to: git_smart_subtransport_stream.self)
            return 0
        }
        let text = String(cString: url)
        guard let target = target(for: text) else {
            git_error_set_str(Int32(GIT_ERROR_NET.rawValue), "no ssh command is set for \(text)")
            return -1
        }
        let service = action == GIT_SERVICE_UPLOADPACK_LS || action == GIT_SERVICE_UPLOADPACK ? "git-upload-pack" : "git-receive-pack"
        let child: Child
        do throws(SpawnError) {
            child = try startSession(url: text, target: target, service: service)
        } catch {
            git_error_set_str(Int32(GIT_ERROR_SSH.rawValue), error.message)
            return -1
        }
        let stream = UnsafeMutablePointer<syncagent_stream>.allocate(capacity: 1)
        stream.initialize(to: syncagent_stream())
        stream.pointee.parent.subtransport = sub
        stream.pointee.parent.read = { stream, buffer, size, got in
            Child.of(stream).read(buffer, size, got)
        }
        stream.pointee.parent.write = { stream, buffer, length in
            Child.of(stream).write(buffer, length)
        }
        stream.pointee.parent.free = { stream in
            guard let stream else { return }
            let own = UnsafeMutableRawPointer(stream).assumingMemoryBound(to: syncagent_stream.self)
            let child = Unmanaged<Child>.fromOpaque(own.pointee.owner)
            child.takeUnretainedValue().finish()
            if let (url, service) = child.takeUnretainedValue().refill { ExecTransport.refill(url: url, service: service) }
            child.release()
            own.deinitialize(count: 1)
            own.deallocate()
        }
        stream.pointee.owner = Unmanaged.passRetained(child).toOpaque()
        session.stream = stream
        out.pointee = UnsafeMutableRawPointer(stream).assumingMemoryBound(to: git_smart_subtransport_stream.self)
        return 0
    }

    struct SpawnError: Error {
        let message: String
    }

    /// The `ssh` process of one stream: its stdin and stdout are the protocol, its stderr goes to
    /// an unlinked temporary file (read when it fails: nothing can block on it).
    final class Child: @unchecked Sendable {
        let pid: pid_t
        /// Whose session to start ahead when this one is done (`Target.warm`).
        var refill: (url: String, service: String)?
        let input: Int32
        let output: Int32
        let errors: Int32
        let command: String
        private var ended: Int32?

        static func of(_ stream: UnsafeMutablePointer<git_smart_subtransport_stream>?) -> Child {
            let own = UnsafeMutableRawPointer(stream!).assumingMemoryBound(to: syncagent_stream.self)
            return Unmanaged<Child>.fromOpaque(own.pointee.owner).takeUnretainedValue()
        }

        init(_ argv: [String]) throws(SpawnError) {
            command = argv.joined(separator: " ")
            var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
            guard pipe(&toChild) == 0 else { throw SpawnError(message: "pipe: \(String(cString: strerror(errno)))") }
            guard pipe(&fromChild) == 0 else {
                close(toChild[0]); close(toChild[1])
                throw SpawnError(message: "pipe: \(String(cString: strerror(errno)))")
            }
            var template = Array("/tmp/syncagent-ssh-stderr.XXXXXX".utf8CString)
            let err = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            if err >= 0 { template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) } }
            for fd in toChild + fromChild + [err] where fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            let spawned = Spawn.start(argv, stdin: toChild[0], stdout: fromChild[1], stderr: err >= 0 ? err : nil, ownGroup: false)
            close(toChild[0]); close(fromChild[1])
            switch spawned {
            case .success(let pid):
                self.pid = pid
            case .failure(let why):
                close(toChild[1]); close(fromChild[0])
                if err >= 0 { close(err) }
                throw SpawnError(message: "cannot run \(argv[0]): \(why.reason); install openssh-client")
            }
            input = toChild[1]
            output = fromChild[0]
            errors = err
        }

        func read(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ got: UnsafeMutablePointer<Int>?) -> Int32 {
            while true {
                let n = Glibc.read(output, buffer, size)
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return fail("reading from ssh: \(String(cString: strerror(errno)))") }
                if n == 0, let why = failure() { return fail(why) }
                got?.pointee = n
                return 0
            }
        }

        func write(_ buffer: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
            var done = 0
            while done < length {
                let n = Glibc.write(input, buffer! + done, length - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return fail(failure() ?? "writing to ssh: \(String(cString: strerror(errno)))") }
                done += n
            }
            return 0
        }

        /// A session started ahead is still waiting: ssh runs, and nothing came out nor hung up.
        func isWaiting() -> Bool {
            guard ended == nil else { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                ended = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                return false
            }
            var fd = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            return poll(&fd, 1, 0) == 0
        }

        /// After stdout ended: why ssh failed (its exit status and the end of what it said), or nil
        /// when it exited 0.
        private func failure() -> String? {
            let status = waitForExit()
            guard status != 0 else { return nil }
            var said = [UInt8](repeating: 0, count: 2048)
            var n = 0
            if errors >= 0 {
                let size = lseek(errors, 0, SEEK_END)
                n = max(0, pread(errors, &said, said.count, max(0, size - off_t(said.count))))
            }
            let lines = String(decoding: said[0..<n], as: UTF8.self).split(whereSeparator: \.isNewline)
                .map { $0.trimmed() }.filter { !$0.isEmpty }
            return "ssh exited with status \(status)" + (lines.isEmpty ? "" : ": " + lines.suffix(3).joined(separator: "; "))
        }

        private func waitForExit() -> Int32 {
            if let ended { return ended }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            ended = code
            return code
        }

        private func fail(_ message: String) -> Int32 {
            git_error_set_str(Int32(GIT_ERROR_SSH.rawValue), message)
            return -1
        }

        /// The protocol is over (or given up): ssh is stopped if it has not ended, and reaped.
        func finish() {
            close(input)
            close(output)
            if ended == nil {
                kill(pid, SIGTERM)
                _ = waitForExit()
            }
            if errors >= 0 { close(errors) }
        }
    }
}
