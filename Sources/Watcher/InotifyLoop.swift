import FileSystem
import Glibc
import Synchronization
import SystemPackage

/// The watcher's thread: owns its watch table and the debouncer; the process's `InotifyHub`
/// reads the kernel and hands it its events (`receive`). Only `request`, `receive`, `pending` and
/// `degradedFlag` are touched from other threads.
final class Loop: @unchecked Sendable {
    enum Request: UInt8 { case stop = 2, inject = 4, rescan = 8, drain = 16, rewatch = 32 }

    let pending = Atomic<Int>(0)
    let degradedFlag = Atomic<Bool>(false)
    private let requests = Atomic<UInt8>(0)
    private let injected = Mutex<[FilePath]>([])
    /// With `handoff`: batches handed on but not yet taken (`takeReady` or `drain` take them), so
    /// that nothing is ever in transit between the watcher and its one consumer.
    let handoff: Bool
    let ready = Mutex<WatchBatch>(WatchBatch())

    /// Callers of `drain`, waiting for the pending batch; nil once the loop has ended.
    private let drainers = Mutex<[(CheckedContinuation<WatchBatch, Never>, keepOpen: Bool)]?>([])

    private let root: FilePath
    private let hub: InotifyHub
    /// Events the hub handed on and this thread has not handled yet.
    private let inbox = Mutex<[InotifyEvent]>([])
    /// The most events kept waiting: the kernel's default queue (`max_queued_events`).
    static let inboxLimit = 16_384
    /// A self-pipe: other threads write a byte to wake `poll`.
    private let wakeFd: Int32
    private let wakeWriteFd: Int32
    private var debouncer: Debouncer
    private let fallbackScanInterval: Duration
    private let ignore: @Sendable (FilePath.Component) -> Bool
    private let recordedMoves: @Sendable (FilePath.Component) -> Bool
    /// The cookie of the last move out of a `recordedMoves` temporary: its move in is skipped.
    private var recordedCookie: UInt32 = 0
    private let onProblem: @Sendable (WatchProblem) -> Void
    private let output: AsyncStream<WatchBatch>.Continuation
    /// Watch descriptor -> directory relative to root ("" is the root).
    private var watches: [Int32: FilePath] = [:]
    private var rootWatch: Int32 = -1
    private var nextFallbackScan: ContinuousClock.Instant?

    private static let dirMask = UInt32(IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
        | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF
        | IN_ONLYDIR) | inDontFollow | inExclUnlink
    /// `namesOnly`: a ref moves by a rename (its `.lock` moved in), is made or deleted; the writes
    /// and closes of its `.lock` and the move out of it are not queued at all.
    private static let namesMask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF
        | IN_ONLYDIR) | inDontFollow | inExclUnlink
    private let mask: UInt32
    // <sys/inotify.h> values Glibc's module does not import.
    private static let inDontFollow: UInt32 = 0x0200_0000
    private static let inExclUnlink: UInt32 = 0x0400_0000

    init(root: FilePath, debouncer: Debouncer, fallbackScanInterval: Duration, handoff: Bool,
         ignore: @escaping @Sendable (FilePath.Component) -> Bool,
         recordedMoves: @escaping @Sendable (FilePath.Component) -> Bool,
         namesOnly: Bool,
         onProblem: @escaping @Sendable (WatchProblem) -> Void,
         output: AsyncStream<WatchBatch>.Continuation, hub: InotifyHub? = nil) throws(WatcherError) {
        self.root = root
        mask = namesOnly ? Self.namesMask : Self.dirMask
        self.handoff = handoff
        self.debouncer = debouncer
        self.fallbackScanInterval = fallbackScanInterval
        self.ignore = ignore
        self.recordedMoves = recordedMoves
        self.onProblem = onProblem
        self.output = output
        if let hub {
            self.hub = hub
        } else {
            self.hub = try InotifyHub.shared(for: root)
        }
        var pipeFds: [Int32] = [-1, -1]
        guard pipe(&pipeFds) == 0 else {
            throw WatcherError(path: root, errno: Errno(rawValue: errno), call: "pipe2")
        }
        wakeFd = pipeFds[0]
        wakeWriteFd = pipeFds[1]
        for end in pipeFds {
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        self.hub.register(self)
        switch self.hub.addWatch(root, mask: mask, for: self) {
        case .success(let wd):
            rootWatch = wd
            watches[wd] = FilePath("")
        case .failure(let err) where err == .noSpace:
            enterFallbackMode(FilePath(""))
        case .failure(let err):
            // (`deinit` runs for an initializer that throws once every property is set: it lets
            // go of the hub's table and closes the pipe.)
            throw WatcherError(path: root, errno: err, call: "inotify_add_watch")
        }
        watchSubtree(of: FilePath(""), report: false)
    }

    deinit {
        hub.release(ObjectIdentifier(self))
        close(wakeFd)
        close(wakeWriteFd)
    }

    /// Events of this watcher's descriptors, from the hub: kept in order, and this thread woken.
    func receive(_ events: [InotifyEvent]) {
        let wasEmpty = inbox.withLock { list in
            defer {
                // Not started yet and a bulk copy under way: past the kernel's own queue size, what
                // waits is replaced by an overflow (a rescan), as the kernel's queue would have done.
                if list.count + events.count > Self.inboxLimit {
                    list = [InotifyEvent(wd: -1, mask: UInt32(IN_Q_OVERFLOW), cookie: 0, name: nil)]
                } else {
                    list.append(contentsOf: events)
                }
            }
            return list.isEmpty
        }
        // Events already waiting were rung for: the thread empties the pipe before it takes the
        // inbox, so it takes these too.
        guard wasEmpty else { return }
        var one: UInt8 = 1
        _ = write(wakeWriteFd, &one, 1)
    }

    func request(_ request: Request) {
        requests.bitwiseOr(request.rawValue, ordering: .acquiringAndReleasing)
        var one: UInt8 = 1
        _ = write(wakeWriteFd, &one, 1)
    }

    func inject(_ paths: [FilePath]) {
        guard !paths.isEmpty else { return }
        injected.withLock { $0.append(contentsOf: paths) }
        request(.inject)
    }

    func finishWithoutStarting() {
        hub.release(ObjectIdentifier(self))
        output.finish()
        endDrainers()
    }

    /// Reads what the kernel holds and returns the pending batch to the caller instead of the stream.
    func drain(keepingOpen: Bool) async -> WatchBatch {
        await withCheckedContinuation { (c: CheckedContinuation<WatchBatch, Never>) in
            let queued = drainers.withLock { list -> Bool in
                guard list != nil else { return false }
                list!.append((c, keepOpen: keepingOpen))
                return true
            }
            if queued { request(.drain) } else { c.resume(returning: WatchBatch()) }
        }
    }

    private func endDrainers() {
        let waiting = drainers.withLock { list in defer { list = nil }; return list ?? [] }
        for (c, _) in waiting { c.resume(returning: WatchBatch()) }
    }

    // MARK: the thread

    func run() {
        var wake = pollfd(fd: wakeFd, events: Int16(POLLIN), revents: 0)
        while true {
            let now = ContinuousClock.now
            if let batch = debouncer.takeIfDue(at: now) { emit(batch) }
            if let due = nextFallbackScan, now >= due { fallbackScan(now) }
            wake.revents = 0
            _ = poll(&wake, 1, timeoutMilliseconds(now))
            if wake.revents != 0 {
                // (Emptied before the inbox is taken: `receive` rings only for an empty inbox.)
                var drained = [UInt8](repeating: 0, count: 64)
                while read(wakeFd, &drained, 64) == 64 {}
                handleInbox()
                let pendingRequests = requests.exchange(0, ordering: .acquiringAndReleasing)
                // (A file that changed while it was committed is likely still being written: it waits
                // for quiet, never for a slice or a save's settle.)
                for path in injected.withLock({ paths in defer { paths = [] }; return paths }) { changed(path, writing: true) }
                if pendingRequests & Request.rescan.rawValue != 0 { debouncer.requestRescan(at: .now) }
                if pendingRequests & Request.rewatch.rawValue != 0 {
                    // The data directory was replaced: drop every watch and start again from it.
                    for wd in watches.keys { hub.removeWatch(wd, for: self) }
                    watches = [:]
                    rootWatch = -1
                    rewatchEverything()
                    debouncer.requestRescan(at: .now)
                }
                if pendingRequests & Request.drain.rawValue != 0,
                   case let waiting = drainers.withLock({ list in defer { if list != nil { list = [] } }; return list ?? [] }),
                   !waiting.isEmpty {
                    // (A drainer that came after the last round's snapshot was served by it: its
                    // request bit alone brings no one to hand the batch to, so nothing is taken.)
                    drainKernelQueue()
                    // Files written to and still open stay pending when every caller allows it.
                    let keepOpen = waiting.allSatisfy(\.keepOpen)
                    var batch = (keepOpen ? debouncer.flush(keepingOpen: true) : debouncer.flush()) ?? WatchBatch()
                    pending.store(debouncer.pendingCount, ordering: .relaxed)
                    if handoff {
                        batch = ready.withLock { r in
                            r.merge(batch)
                            defer { r = WatchBatch() }
                            return r
                        }
                    }
                    for (i, (c, _)) in waiting.enumerated() { c.resume(returning: i == 0 ? batch : WatchBatch()) }
                }
                if pendingRequests & Request.stop.rawValue != 0 {
                    drainKernelQueue()
                    hub.release(ObjectIdentifier(self))
                    if let batch = debouncer.flush() { emit(batch) }
                    output.finish()
                    endDrainers()
                    return
                }
            }
        }
    }

    private func timeoutMilliseconds(_ now: ContinuousClock.Instant) -> Int32 {
        let next = [debouncer.deadline, nextFallbackScan].compactMap { $0 }.min()
        guard let next else { return -1 }
        let wait = now.duration(to: next)
        if wait <= .zero { return 0 }
        let (seconds, attoseconds) = wait.components
        return Int32(min(seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000, 60_000))
    }

    private func emit(_ batch: WatchBatch) {
        pending.store(debouncer.pendingCount, ordering: .relaxed)  // (a slice leaves files still open)
        if handoff { ready.withLock { $0.merge(batch) } }
        output.yield(batch)
    }

    private func changed(_ path: FilePath, _ change: Debouncer.Change = .changed, writing: Bool? = nil,
                         wrote: Bool = false) {
        debouncer.add(path, at: .now, change: change, writing: writing, wrote: wrote)
        pending.store(debouncer.pendingCount, ordering: .relaxed)
    }

    // MARK: events

    private typealias Event = InotifyEvent

    /// Has the hub read everything the kernel queued, then handles this watcher's share.
    private func drainKernelQueue() {
        hub.pump()
        handleInbox()
    }

    /// Handles the events the hub handed on; returns how many there were.
    @discardableResult
    private func handleInbox() -> Int {
        let events = inbox.withLock { list in defer { list = [] }; return list }
        var i = 0
        while i < events.count {
            let event = events[i]
            i += 1
            if isRecordedMove(event, next: i < events.count ? events[i] : nil) {
                if event.mask & UInt32(IN_MOVED_FROM) != 0, event.name.map(recordedMoves) == false { i += 1 }  // and its move in
                continue
            }
            handle(wd: event.wd, mask: event.mask, name: event.name)
        }
        return events.count
    }

    /// A move the agent's apply records itself (`recordedMoves`): a file moved in from one of its
    /// temporaries (a new version landing), or moved out to one (the old version swapped out, or
    /// set aside to be removed). The kernel queues a move's two halves one after the other.
    private func isRecordedMove(_ event: Event, next: Event?) -> Bool {
        guard event.cookie != 0, let name = event.name, event.mask & UInt32(IN_ISDIR) == 0 else { return false }
        if event.mask & UInt32(IN_MOVED_FROM) != 0 {
            if recordedMoves(name) {
                recordedCookie = event.cookie
                return true
            }
            // Out to a temporary: the next event is the move's other half.
            guard let next, next.cookie == event.cookie, next.mask & UInt32(IN_MOVED_TO) != 0,
                  let to = next.name, recordedMoves(to) else { return false }
            return true
        }
        if event.mask & UInt32(IN_MOVED_TO) != 0, event.cookie == recordedCookie {
            recordedCookie = 0
            return true
        }
        return false
    }

    private func handle(wd: Int32, mask: UInt32, name: FilePath.Component?) {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            rewatchEverything()
            debouncer.requestRescan(at: .now)
            return
        }
        guard let dir = watches[wd] else { return }
        // An unmount drops every watch on the file system (IN_UNMOUNT, then IN_IGNORED) with no
        // IN_DELETE_SELF: said, or the watcher would go quiet for good.
        if wd == rootWatch, mask & UInt32(IN_UNMOUNT) != 0 {
            onProblem(WatchProblem(kind: .unmounted, path: FilePath(""),
                                   message: "the file system holding \(root) was unmounted: changes there are no longer seen"))
            return
        }
        if mask & UInt32(IN_IGNORED) != 0 {
            watches[wd] = nil
            return
        }
        if wd == rootWatch, mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
            onProblem(WatchProblem(kind: .rootGone, path: FilePath(""),
                                   message: "the data directory \(root) was deleted or moved away"))
            return
        }
        guard let name, !ignore(name) else { return }
        let path = dir.appending(name)
        // Moved in is not made: it may replace a tracked file, whose removal later in the batch
        // is then a deletion (an editor's or rsync's temporary is made with IN_CREATE).
        // A file is being written from its IN_CREATE or IN_MODIFY to its IN_CLOSE_WRITE; one moved
        // in is whole (a slice of the batch takes only whole files).
        let isFile = mask & UInt32(IN_ISDIR) == 0
        let writing: Bool? = !isFile ? nil
            : mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0 ? false
            : mask & UInt32(IN_CREATE | IN_MODIFY) != 0 ? true : nil
        changed(path, mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 ? .removed
                      : mask & UInt32(IN_CREATE) != 0 ? .created : .changed, writing: writing,
                wrote: writing == true && mask & UInt32(IN_MODIFY) != 0)
        guard mask & UInt32(IN_ISDIR) != 0 else { return }
        if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
            // Files made before the new watch existed sent no event: report everything inside.
            watch(path)
            watchSubtree(of: path, report: true)
        } else if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
            unwatchSubtree(of: path)
        }
    }

    // MARK: watches

    @discardableResult
    private func watch(_ dir: FilePath) -> Bool {
        let abs = dir.isEmpty ? root : root.pushing(dir)
        let err: Errno
        switch hub.addWatch(abs, mask: mask, for: self) {
        case .success(let wd):
            watches[wd] = dir
            return true
        case .failure(let e):
            err = e
        }
        if err == .noSpace {
            enterFallbackMode(dir)
        } else if err != .noSuchFileOrDirectory && err != .notDirectory {
            onProblem(WatchProblem(kind: .unreadable, path: dir,
                                   message: "cannot watch \(abs): \(err); changes inside it are seen only by rescans. Check its permissions."))
        }
        return false
    }

    private func watchSubtree(of dir: FilePath, report: Bool) {
        Directory.walk(root.pushing(dir), descend: { [ignore] sub in
            guard let last = sub.lastComponent, !ignore(last) else { return false }
            return true
        }, unreadable: { sub, err in
            if err == .noSuchFileOrDirectory || err == .notDirectory { return }
            self.onProblem(WatchProblem(kind: .unreadable, path: dir.pushing(sub),
                                        message: "cannot read \(self.root.pushing(dir.pushing(sub))): \(err); its files are not synced. Check its permissions."))
        }, visit: { sub, kind in
            let path = dir.pushing(sub)
            if let last = path.lastComponent, ignore(last) { return }
            if kind == .directory { watch(path) }
            // Found by a walk, not an event: it may still be open for writing (made before the
            // new directory's watch), so it is never taken for a slice, only with the batch.
            if report { changed(path, writing: kind == .directory ? nil : true) }
        })
    }

    private func unwatchSubtree(of dir: FilePath) {
        for (wd, path) in watches where path.starts(with: dir) && wd != rootWatch {
            hub.removeWatch(wd, for: self)
            watches[wd] = nil
        }
    }

    /// After a queue overflow or during fallback scans: make sure every directory has a watch.
    private func rewatchEverything() {
        let wasDegraded = degradedFlag.load(ordering: .relaxed)
        degradedFlag.store(false, ordering: .relaxed)
        nextFallbackScan = nil
        if rootWatch < 0, watch(FilePath("")), let wd = watches.first(where: { $0.value.isEmpty })?.key {
            rootWatch = wd
        }
        watchSubtree(of: FilePath(""), report: false)
        if wasDegraded && !degradedFlag.load(ordering: .relaxed) {
            onProblem(WatchProblem(kind: .recovered, path: FilePath(""),
                                   message: "every directory under \(root) is watched again; periodic scans stopped"))
        }
    }

    private func enterFallbackMode(_ dir: FilePath) {
        let first = !degradedFlag.exchange(true, ordering: .relaxed)
        if nextFallbackScan == nil { nextFallbackScan = .now + fallbackScanInterval }
        guard first else { return }
        onProblem(WatchProblem(kind: .watchLimit, path: dir, message:
            "cannot watch \(root.pushing(dir)): the inotify watch limit (fs.inotify.max_user_watches) is reached. "
            + "Changes are now found by a full scan every \(fallbackScanInterval). To fix it, raise the limit: "
            + "sysctl fs.inotify.max_user_watches=524288 (and add it to /etc/sysctl.conf)."))
    }

    private func fallbackScan(_ now: ContinuousClock.Instant) {
        rewatchEverything()
        debouncer.requestRescan(at: now)
        if degradedFlag.load(ordering: .relaxed) { nextFallbackScan = now + fallbackScanInterval }
    }
}
