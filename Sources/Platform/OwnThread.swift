import CPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts detached threads of our own: the watcher, the engine's executor, the control server and
/// other blocking work that must stay off Swift's cooperative pool. (Foundation's `Thread` would do,
/// but linking Foundation costs every agent about 8 MB of resident memory.)
public enum OwnThread {
    private final class Start {
        let name: [CChar]
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) {
            // The kernel keeps 15 bytes of a thread's name.
            self.name = Array(name.utf8.prefix(15)).map { CChar(bitPattern: $0) } + [0]
            self.body = body
        }
    }

    /// Runs `body` on a new detached thread named `name` (first 15 bytes, as `ps -L` and `top -H`
    /// show it). `stackSize` 0 takes the system default.
    public static func start(name: String, stackSize: Int = 0, _ body: @escaping @Sendable () -> Void) {
        _ = start(name: name, stackSize: stackSize, detached: true, body)
    }

    /// As `start`, but the thread is to be waited for with `pthread_join` (once): its end then
    /// includes its thread-local destructors, which a process must not run while it exits.
    public static func startJoinable(name: String, stackSize: Int = 0, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        start(name: name, stackSize: stackSize, detached: false, body)
    }

    private static func start(name: String, stackSize: Int, detached: Bool, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE))
        if stackSize > 0 { pthread_attr_setstacksize(&attributes, stackSize) }
        let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            start.name.withUnsafeBufferPointer { _ = cplatform_name_thread($0.baseAddress!) }
            start.body()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<Start>.fromOpaque(context).release()
            fatalError("syncagent: cannot start thread \(name): \(String(cString: strerror(rc))) (raise the limit on threads or processes: ulimit -u)")
        }
        return thread
    }
}

/// A mutex with a condition variable, for threads that wait for work (`NSCondition`'s subset we use).
public final class Condition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    public func signal() { pthread_cond_signal(cond) }
    public func broadcast() { pthread_cond_broadcast(cond) }

    /// Waits (the lock held) until signalled; may wake spuriously, so callers loop on their condition.
    public func wait() { pthread_cond_wait(cond, mutex) }

    /// Waits (the lock held) until signalled or until `deadline`; false once the deadline passed.
    public func wait(until deadline: Deadline) -> Bool {
        var at = deadline.time
        return pthread_cond_timedwait(cond, mutex, &at) != ETIMEDOUT
    }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A point on the monotonic clock (unaffected by changes to the wall clock).
public struct Deadline: Sendable {
    let time: timespec

    /// `seconds` from now.
    public init(in seconds: Double) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let clamped = max(0, min(seconds, 1e9))
        var sec = now.tv_sec + Int(clamped)
        var nsec = now.tv_nsec + Int((clamped - clamped.rounded(.towardZero)) * 1e9)
        if nsec >= 1_000_000_000 {
            sec += 1
            nsec -= 1_000_000_000
        }
        time = timespec(tv_sec: sec, tv_nsec: nsec)
    }
}

/// Adds to a spawn's file actions: the child closes every descriptor from `lowest` up (sockets
/// and pipes of the agent without close-on-exec, another child's pipe ends), as Foundation's
/// `Process` did. Looked up at run time (glibc 2.34+; Swift's Glibc module does not declare it);
/// returns false where the C library lacks it.
@discardableResult
public func spawnClosesDescriptors(_ actions: inout posix_spawn_file_actions_t, from lowest: Int32) -> Bool {
    guard let closeFrom = addCloseFrom else { return false }
    return closeFrom(&actions, lowest) == 0
}

private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
private let addCloseFrom: AddCloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
    .map { unsafeBitCast($0, to: AddCloseFrom.self) }
