#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starting an external program, the one way the agent does it (hooks, merge commands, the notify
/// channel, ssh for fetches and pushes).
public enum Spawn {
    /// Starts `argv` (looked up on PATH) with `stdin`, `stdout` (nil: /dev/null) and `stderr` (nil:
    /// the agent's) as its descriptors 0, 1 and 2 and no other descriptor of the agent's; default
    /// handling of SIGPIPE, SIGTERM and SIGINT (the agent ignores SIGPIPE: a child should not
    /// inherit that) and no signal blocked; with `ownGroup`, in a process group of its own (so a
    /// timeout can stop all of it, and a terminal's Ctrl-C reaches the agent first). Returns its
    /// pid, or posix_spawn's errno.
    public static func start(_ argv: [String], stdin: Int32, stdout: Int32?, stderr: Int32?, ownGroup: Bool) -> Result<pid_t, SpawnFailure> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        if let stdout {
            posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if let stderr { posix_spawn_file_actions_adddup2(&actions, stderr, 2) }
        spawnClosesDescriptors(&actions, from: 3)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var defaults = sigset_t(), none = sigset_t()
        sigemptyset(&defaults); sigaddset(&defaults, SIGPIPE); sigaddset(&defaults, SIGTERM); sigaddset(&defaults, SIGINT)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setsigmask(&attr, &none)
        var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        if ownGroup {
            posix_spawnattr_setpgroup(&attr, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attr, Int16(flags))
        var pid: pid_t = 0
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { for a in cArgs { free(a) } }
        let rc = posix_spawnp(&pid, argv[0], &actions, &attr, cArgs, environ)
        return rc == 0 ? .success(pid) : .failure(SpawnFailure(code: rc))
    }
}

/// Why a program could not be started (posix_spawn's errno).
public struct SpawnFailure: Error, Sendable {
    public let code: Int32
    public var reason: String { String(cString: strerror(code)) }
}
