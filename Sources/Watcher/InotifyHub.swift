import FileSystem
import Glibc
import Platform
import Synchronization
import SystemPackage

/// One event as read from the kernel.
struct InotifyEvent: Sendable {
    let wd: Int32
    let mask: UInt32
    let cookie: UInt32
    let name: FilePath.Component?
}

/// The process's one inotify instance, shared by every watcher in it (the data directory's, each
/// path peer's refs, a hub's notifications). The kernel gives a user 128 instances by default;
/// an agent that held one per watcher left the 51st agent of a user without any (issue 45). One
/// thread reads the instance and hands each watcher (`Loop`) the events of its own watch
/// descriptors, in the kernel's order. A directory two watchers watch has one descriptor: its
/// events go to both, and it leaves the kernel when the last lets it go. A queue overflow goes
/// to every watcher.
final class InotifyHub: @unchecked Sendable {
    let fd: Int32

    private final class Client: @unchecked Sendable {
        let id: ObjectIdentifier
        weak var loop: Loop?
        init(_ loop: Loop) {
            id = ObjectIdentifier(loop)
            self.loop = loop
        }
    }

    private struct Table {
        /// Watch descriptor -> the watchers that asked for it.
        var owners: [Int32: [Client]] = [:]
        /// Every watcher registered, for an overflow.
        var clients: [ObjectIdentifier: Client] = [:]
    }

    private let table = Mutex(Table())
    /// Held while the instance is read and what was read is handed on: two readers (the hub's
    /// thread, a watcher draining before a commit) never split one queue between them out of order.
    private let reading = Mutex(())
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    /// How many reads brought events (tests: a stream is read in gathered batches).
    let reads = Atomic<Int>(0)

    /// Events that come again this soon after the last read make a stream (an apply, a copy, a
    /// script writing thousands of files), and the reader then lets them gather this long before
    /// it reads: far below any debounce, far below filling the kernel's queue (16,384 events by
    /// default). A save after a quiet moment is read at once.
    static let streamWindow = Duration.milliseconds(10)
    static let gatherMicroseconds: UInt32 = 1000

    private static let instance = Mutex<InotifyHub?>(nil)

    /// The process's instance, made (with its reading thread) by the first watcher. A failure is
    /// told to the watcher that asked (`root`), and the next watcher tries again.
    static func shared(for root: FilePath) throws(WatcherError) -> InotifyHub {
        let made: Result<InotifyHub, WatcherError> = instance.withLock { hub in
            if let hub { return .success(hub) }
            return Result { () throws(WatcherError) in
                let new = try InotifyHub(for: root)
                new.startReading()
                hub = new
                return new
            }
        }
        return try made.get()
    }

    /// A hub of its own, not the process's (tests: a queue of another size, a reader started late).
    init(for root: FilePath) throws(WatcherError) {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw WatcherError(path: root, errno: Errno(rawValue: errno), call: "inotify_init1") }
    }

    /// Starts the thread that reads the instance (until then events wait in the kernel's queue).
    func startReading() {
        OwnThread.start(name: "syncagent-inotify") { self.run() }
    }

    /// Registers a watcher before it adds watches (an overflow reaches it from then on).
    func register(_ loop: Loop) {
        let client = Client(loop)
        table.withLock { $0.clients[client.id] = client }
    }

    /// Watches `path` for `loop`; the descriptor, or why not.
    func addWatch(_ path: FilePath, mask: UInt32, for loop: Loop) -> Result<Int32, Errno> {
        table.withLock { t in
            // Under the table's lock: an event the kernel queues for the new descriptor is handed
            // on only once it is known whose it is.
            // Added to what the directory is watched for already (`IN_MASK_ADD`): one instance
            // has one watch per directory, and a names-only watcher (a store's refs) adding it
            // would otherwise take the writes away from a data watcher of the same directory.
            let wd = path.withPlatformString { inotify_add_watch(fd, $0, mask | Self.inMaskAdd) }
            guard wd >= 0 else { return .failure(Errno(rawValue: errno)) }
            let id = ObjectIdentifier(loop)
            // (No look at whether other owners still live: a weak load here could be the last
            // strong reference, and the `deinit` it ran would take this lock again. A watcher
            // that goes is taken out by `release`.)
            var owners = t.owners[wd] ?? []
            if !owners.contains(where: { $0.id == id }) {
                owners.append(t.clients[id] ?? Client(loop))
            }
            t.owners[wd] = owners
            return .success(wd)
        }
    }

    /// <sys/inotify.h>'s IN_MASK_ADD, which Glibc's module does not import.
    private static let inMaskAdd: UInt32 = 0x2000_0000

    /// `loop` no longer wants `wd`; the kernel's watch goes once nobody does.
    func removeWatch(_ wd: Int32, for loop: Loop) {
        let id = ObjectIdentifier(loop)
        table.withLock { t in Self.drop(id, from: wd, in: &t, fd: fd) }
    }

    /// Every watch of the watcher with this identity goes, and the watcher with them (it stopped).
    func release(_ id: ObjectIdentifier) {
        table.withLock { t in
            t.clients[id] = nil
            for wd in Array(t.owners.keys) { Self.drop(id, from: wd, in: &t, fd: fd) }
        }
    }

    private static func drop(_ id: ObjectIdentifier, from wd: Int32, in t: inout Table, fd: Int32) {
        guard var owners = t.owners[wd] else { return }
        owners.removeAll { $0.id == id }
        if owners.isEmpty {
            t.owners[wd] = nil
            inotify_rm_watch(fd, wd)
        } else {
            t.owners[wd] = owners
        }
    }

    /// Reads every event queued (`untilEmpty`; else one read's worth) and hands each to the
    /// watchers it belongs to. Returns how many there were. Called by the hub's thread (one read:
    /// while an apply writes on another core, reading until the queue is empty read one or two
    /// events at a time, as fast as they came), and by a watcher that must see everything queued
    /// before it answers (a drain, a stop).
    @discardableResult
    func pump(untilEmpty: Bool = true) -> Int {
        reading.withLock { _ in
            var total = 0
            while untilEmpty || total == 0 {
                let n = read(fd, buffer.baseAddress, buffer.count)
                if n <= 0 { return total }  // EAGAIN: queue empty
                reads.add(1, ordering: .relaxed)
                var events: [InotifyEvent] = []
                var offset = 0
                while offset + 16 <= n {
                    let wd = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                    let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let cookie = buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
                    let len = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    var name: FilePath.Component?
                    if len > 0 {
                        let start = buffer.baseAddress!.advanced(by: offset + 16).assumingMemoryBound(to: CChar.self)
                        let bytes = UnsafeRawBufferPointer(start: start, count: strnlen(start, len))
                        name = FilePath.Component(platformString: Array(bytes.bindMemory(to: CChar.self)) + [0])
                    }
                    events.append(InotifyEvent(wd: wd, mask: mask, cookie: cookie, name: name))
                    offset += 16 + len
                }
                total += events.count
                hand(events)
            }
            return total
        }
    }

    private func hand(_ events: [InotifyEvent]) {
        var order: [ObjectIdentifier] = []
        var byClient: [ObjectIdentifier: (Loop, [InotifyEvent])] = [:]
        table.withLock { t in
            for event in events {
                let to: [Client] = event.mask & UInt32(IN_Q_OVERFLOW) != 0 ? Array(t.clients.values) : (t.owners[event.wd] ?? [])
                for client in to {
                    guard let loop = client.loop else { continue }
                    if byClient[client.id] == nil {
                        order.append(client.id)
                        byClient[client.id] = (loop, [])
                    }
                    byClient[client.id]!.1.append(event)
                }
                if event.mask & UInt32(IN_IGNORED) != 0 { t.owners[event.wd] = nil }  // the kernel dropped it
            }
        }
        for id in order {
            let (loop, list) = byClient[id]!
            loop.receive(list)
        }
    }

    private func run() {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var lastRead: ContinuousClock.Instant?
        while true {
            p.revents = 0
            guard poll(&p, 1, -1) > 0 else { continue }
            // A stream of events (an apply or a copy of thousands of files): read as they came,
            // one or two at a time (a 10k-file apply: 2,000 reads and 1,800 wake-ups of the
            // watcher a thousand files), they woke this thread and the watchers again and again,
            // and every write in the tree paid for the wake-ups. A moment's pause lets them gather.
            if let lastRead, lastRead.duration(to: .now) < Self.streamWindow { usleep(Self.gatherMicroseconds) }
            pump(untilEmpty: false)
            lastRead = .now
        }
    }
}
