import FoundationEssentials
import Glibc
import SystemPackage

/// One agent per state directory: an open-file-description lock on `<state>/agent.lock` (Linux's
/// `F_OFD_SETLK`), which holds the pid and what holds it ("1234 run" for an agent, "1234 sync" for
/// a one-shot command). The kernel drops the lock when the process dies, however it dies, so a
/// stale file never blocks. Unlike a classic POSIX record lock, it belongs to this open file, not to
/// the process: a program that embeds the agent or links SyncAgentKit may open and close the file
/// (to ask who holds it) without dropping its own lock, and a second lock in the same process is
/// refused as from another one. It conflicts with classic POSIX locks too.
public final class AgentLock: Sendable {
    public let path: FilePath
    private let fd: Int32

    private init(path: FilePath, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// What holds the lock, written into the file after the pid: `run` for an agent, else the
    /// one-shot command (`sync`, `resolve`, `send`) that works under the lock while no agent runs.
    public static let agentRole = "run"

    /// Takes the lock or says who holds it. With `waitForCommands`, a lock held by a one-shot
    /// command (never by another agent) is waited for: such a command ends within its own
    /// timeouts, and `syncagent run &` right before `syncagent sync` must not fail by a race, nor
    /// a command (an app's `set` with no agent running) that meets another one.
    /// `waiting` is told once, before the wait, who is waited for.
    public static func acquire(_ path: FilePath, role: String = agentRole, waitForCommands: Bool = false,
                               waiting: (_ pid: Int32, _ command: String) -> Void = { _, _ in }) throws(LockError) -> AgentLock {
        let fd = open(path.string, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw LockError(path: path, holder: nil, message: "cannot open the lock file: \(Errno(rawValue: errno))")
        }
        var lock = Glibc.flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        if fcntl(fd, Self.setLock, &lock) != 0 {
            let err = Errno(rawValue: errno)
            guard err == .resourceTemporarilyUnavailable || err == .permissionDenied else {
                close(fd)
                throw LockError(path: path, holder: nil, message: "cannot lock: \(err)")
            }
            let holder = holder(of: path)
            let command = Self.role(of: path)
            guard waitForCommands, let holder, let command, command != agentRole else {
                close(fd)
                throw LockError(path: path, holder: holder, message: "another syncagent holds this state directory")
            }
            waiting(holder, command)
            // Tried again every 20 ms rather than waited for in the kernel: the role read above may
            // be a former holder's (an agent that has just taken the lock writes its own a moment
            // later), and an agent is never waited for.
            while fcntl(fd, Self.setLock, &lock) != 0 {
                let err = Errno(rawValue: errno)
                guard err == .resourceTemporarilyUnavailable || err == .permissionDenied || err == .interrupted else {
                    close(fd)
                    throw LockError(path: path, holder: nil, message: "cannot lock: \(err)")
                }
                if let agent = agentHolder(of: path) {
                    close(fd)
                    throw LockError(path: path, holder: agent, message: "another syncagent holds this state directory")
                }
                usleep(20_000)
            }
        }
        let content = "\(getpid()) \(role)\n"
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, content, content.utf8.count, 0)
        return AgentLock(path: path, fd: fd)
    }

    /// The role the holder wrote after its pid (nil: none written, e.g. by an older agent).
    static func role(of path: FilePath) -> String? {
        guard let text = try? String(contentsOfFile: path.string, encoding: .utf8) else { return nil }
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        return fields.count >= 2 ? String(fields[1]) : nil
    }

    /// The pid of the agent (`run`) holding the lock, or nil when nobody does or a one-shot command
    /// holds it (that one is waited for, not asked: it has no control socket), or the holder has not
    /// written its pid yet. A holder that wrote no role counts as an agent (an older agent).
    public static func agentHolder(of path: FilePath) -> Int32? {
        guard let pid = holder(of: path), pid > 0 else { return nil }
        let role = role(of: path)
        return role == nil || role == agentRole ? pid : nil
    }

    /// The pid of the process holding the lock, or nil when nobody does. Never takes the lock.
    public static func holder(of path: FilePath) -> Int32? {
        let fd = open(path.string, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var lock = Glibc.flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, Self.getLock, &lock) == 0, lock.l_type != Int16(F_UNLCK) else { return nil }
        // An open-file-description lock has no pid (-1): the holder wrote its own into the file
        // (0 in the moment between its lock and that write).
        if lock.l_pid > 0 { return lock.l_pid }
        guard let text = try? String(contentsOfFile: path.string, encoding: .utf8),
              let pid = text.split(separator: " ").first.flatMap({ Int32($0) }) else { return 0 }
        return pid
    }

    // Linux's open-file-description lock commands (<fcntl.h> with _GNU_SOURCE; Swift's Glibc module
    // does not declare them).
    static let getLock: Int32 = 36     // F_OFD_GETLK
    static let setLock: Int32 = 37     // F_OFD_SETLK
}

public struct LockError: Error, Sendable, CustomStringConvertible {
    public let path: FilePath
    public let holder: Int32?
    public let message: String
    public var description: String {
        if let holder {
            return "\(path): \(message) (pid \(holder)). Only one agent runs per state directory: stop it first (kill \(holder)) or give this one another state directory."
        }
        return "\(path): \(message). Check that the state directory exists and is writable."
    }
}
