import Foundation
import Glibc
import SystemPackage

/// One agent per state directory: a POSIX record lock on `<state>/agent.lock`, which holds the pid.
/// The kernel drops the lock when the process dies, however it dies, so a stale file never blocks.
public final class AgentLock: Sendable {
    public let path: FilePath
    private let fd: Int32

    private init(path: FilePath, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// Takes the lock or says who holds it.
    public static func acquire(_ path: FilePath) throws(LockError) -> AgentLock {
        let fd = open(path.string, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw LockError(path: path, holder: nil, message: "cannot open the lock file: \(Errno(rawValue: errno))")
        }
        var lock = Glibc.flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, F_SETLK, &lock) == 0 else {
            let err = Errno(rawValue: errno)
            close(fd)
            if err == .resourceTemporarilyUnavailable || err == .permissionDenied {
                throw LockError(path: path, holder: holder(of: path), message: "another syncagent holds this state directory")
            }
            throw LockError(path: path, holder: nil, message: "cannot lock: \(err)")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.utf8.count, 0)
        return AgentLock(path: path, fd: fd)
    }

    /// The pid of the process holding the lock, or nil when nobody does. Never takes the lock.
    public static func holder(of path: FilePath) -> Int32? {
        let fd = open(path.string, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var lock = Glibc.flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, F_GETLK, &lock) == 0, lock.l_type != Int16(F_UNLCK) else { return nil }
        return lock.l_pid
    }
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
