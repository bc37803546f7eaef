import Dispatch
import FoundationEssentials
import Platform
import Glibc
import Synchronization
import SyncCore
import SystemPackage

/// Runs a libgit2 fetch on a thread of its own, so a peer that never answers cannot block the
/// agent: after `timeout` the fetch is abandoned (and cancelled as soon as libgit2 calls back).
enum FetchRunner {
    struct Abandoned: Error, CustomStringConvertible {
        let url: String
        let timeout: Duration
        var description: String {
            "no data from \(url) for \(timeout); the fetch was abandoned and will be retried. Check that the peer's host is up and reachable."
        }
    }

    final class Attempt: Sendable {
        let cancelled = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        private let continuation = Mutex<CheckedContinuation<Void, any Error>?>(nil)
        /// The timeout; taken back when the fetch ends first (`Timers`: nothing wakes for it later).
        let timer = Mutex<Timers.Timer?>(nil)

        /// When data last arrived (or the attempt began), in uptime nanoseconds.
        private let lastProgress = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)

        func madeProgress() { lastProgress.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed) }

        /// How long since data last arrived. The fetch's thread may note progress between the
        /// clock read and the load: that later time counts as no silence (a wrapped difference
        /// made `Int64(_:)` trap: a one-shot `sync` died of SIGILL in CI).
        func silence() -> Duration {
            let now = DispatchTime.now().uptimeNanoseconds
            let last = lastProgress.load(ordering: .relaxed)
            return now > last ? .nanoseconds(Int64(clamping: now - last)) : .zero
        }

        func untilSilent(_ timeout: Duration) -> Duration { max(.milliseconds(10), timeout - silence()) }

        func install(_ c: CheckedContinuation<Void, any Error>) { continuation.withLock { $0 = c } }

        /// Who waits for the thread to leave the store (`whenFinished`).
        private let waiters = Mutex<[CheckedContinuation<Void, Never>]>([])

        /// Marks the attempt's thread gone from the store and wakes whoever waits for that.
        func markFinished() {
            let waiting = waiters.withLock { list in
                defer { list = [] }
                finished.store(true, ordering: .releasing)
                return list
            }
            for w in waiting { w.resume() }
        }

        /// Returns once the attempt's thread has left the store (at once if it has).
        func whenFinished() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = waiters.withLock { list in
                    if finished.load(ordering: .acquiring) { return true }
                    list.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }

        func resume(_ result: Result<Void, any Error>) {
            let c = continuation.withLock { c in defer { c = nil }; return c }
            c?.resume(with: result)
        }
    }

    /// A copy of at least this many objects gives its freed memory back as the fetch ends: far
    /// above a steady sync's few objects, so only bulk copies pay the trim.
    static let trimAfterObjects = 10_000

    /// Fetches; throws libgit2's error (see `SyncError.fetching`), or `Abandoned`. `attempt` lets the caller see whether a
    /// previous fetch's thread is still stuck.
    static func fetch(gitDir: FilePath, data: FilePath, peer: String, url: String, localGitDir: FilePath?,
                      auth: PeerAuth?, timeout: Duration, attempt: Attempt, transfer: Transfer? = nil) async throws {
        try await perform(label: "fetch-\(peer)", url: url, timeout: timeout, attempt: attempt) { shouldCancel in
            let copied = try Store.fetch(gitDir: gitDir, data: data, peer: peer, url: url, localGitDir: localGitDir,
                                         auth: auth, shouldCancel: shouldCancel, transfer: transfer)
            // A big copy's lists are freed on this thread, into an arena of their own: given back
            // before the merge fills the other (a 100k-file first sync: 14 MB held through it).
            if copied >= trimAfterObjects { FreeMemory.returnToSystem() }
        }
    }

    /// Runs `work` (a fetch or a push through libgit2) on a thread of its own; throws what it throws,
    /// or `Abandoned` after `timeout` without progress. `work` gets the question to ask whenever data
    /// moves: it says whether to give up.
    static func perform<T: Sendable>(label: String, url: String, timeout: Duration, attempt: Attempt,
                                     work: @escaping @Sendable (_ shouldCancel: @escaping () -> Bool) throws -> T) async throws -> T {
        let box = Mutex<T?>(nil)
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            attempt.install(c)
            OwnThread.start(name: "syncagent-\(label)") {
                let result = Result<Void, any Error> {
                    let value = try work {
                        attempt.madeProgress()
                        return attempt.cancelled.load(ordering: .relaxed)
                    }
                    box.withLock { $0 = value }
                }
                attempt.markFinished()
                attempt.timer.withLock { $0?.cancel(); $0 = nil }
                attempt.resume(result)
            }
            // A timeout of silence, not of the whole transfer: a big file may take minutes, and
            // every chunk that arrives proves the peer is there. Armed again for what is left of
            // the timeout after each look that finds data came meanwhile.
            @Sendable func arm() {
                let timer = Timers.after(attempt.untilSilent(timeout)) {
                    if attempt.finished.load(ordering: .acquiring) { return }
                    guard attempt.silence() >= timeout else { return arm() }
                    attempt.cancelled.store(true, ordering: .relaxed)
                    attempt.resume(.failure(Abandoned(url: url, timeout: timeout)))
                }
                attempt.timer.withLock { slot in
                    if attempt.finished.load(ordering: .acquiring) { timer.cancel() } else { slot = timer }
                }
            }
            arm()
        }
        guard let value = box.withLock({ $0 }) else { throw Abandoned(url: url, timeout: timeout) }
        return value
    }

    /// For network URLs: a TCP connect with our own timeout, because libgit2 1.5 has none. Runs on a
    /// thread of its own (name lookup and connect block).
    static func probe(url: String, timeout: Duration) async throws {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            OwnThread.start(name: "syncagent-probe") {
                c.resume(with: Result { try probeBlocking(url: url, timeout: timeout) })
            }
        }
    }

    static func probeBlocking(url: String, timeout: Duration) throws {
        guard let (host, port) = hostAndPort(url) else { return }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            throw ProbeError(message: "cannot resolve host '\(host)' of \(url); check the peer's url")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        if connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 && errno != EINPROGRESS {
            throw ProbeError(message: "cannot connect to \(host):\(port) (\(url)): \(String(cString: strerror(errno)))")
        }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ms = Int32(timeout.components.seconds * 1000)
        guard poll(&pfd, 1, ms) == 1 else {
            throw ProbeError(message: "no answer from \(host):\(port) (\(url)) within \(timeout): the host is down or a firewall drops the packets")
        }
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
        if err != 0 {
            throw ProbeError(message: "cannot connect to \(host):\(port) (\(url)): \(String(cString: strerror(err)))")
        }
    }

    struct ProbeError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    static func hostAndPort(_ url: String) -> (String, Int)? {
        let defaults = ["git": 9418, "ssh": 22, "http": 80, "https": 443]
        guard let comps = URLComponents(string: url), let scheme = comps.scheme, let port = comps.port ?? defaults[scheme],
              let host = comps.host, !host.isEmpty else {
            if PeerLink.isScpLike(url), !url.contains("://") {
                let hostPart = url.split(separator: ":").first.map(String.init) ?? ""
                return (hostPart.split(separator: "@").last.map(String.init) ?? hostPart, 22)
            }
            return nil
        }
        return (host, port)
    }
}
