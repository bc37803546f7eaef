import FoundationEssentials
import Platform
import FileSystem
import Glibc
import Synchronization
import SystemPackage

/// Watches a directory tree with inotify (one watch per directory, links never followed) and yields
/// debounced batches of changed paths. A dedicated thread reads the kernel queue, so the agent's
/// tasks never block on it.
public final class Watcher: Sendable {
    public let root: FilePath
    /// Debounced batches. Ends after `stop()`, with the last batch flushed first.
    public let batches: AsyncStream<WatchBatch>
    private let loop: Loop
    private let started = Atomic<Bool>(false)

    /// Installs watches on every directory under `root` now (before it returns), so that nothing
    /// changed after `init` is missed; events wait until `start()`. Every watcher of the process
    /// shares one inotify instance (`InotifyHub`).
    /// - Parameters:
    ///   - handoff: batches wait in the watcher until taken (`takeReady`, `drain`); see `takeReady`.
    ///   - ignore: names (any path component) whose events are dropped, e.g. editor temporaries.
    ///   - recordedMoves: names of temporaries whose writer records what it moves through them
    ///     (the agent's own apply: it stages each file it lands): a file moved in from one, or
    ///     out to one, is no change to report. Everything else about the path still is.
    ///   - fallbackScanInterval: how often to rescan everything when watches run out.
    ///   - slice: how long a batch of new and changed files gathers before its closed files are
    ///     due without waiting for quiet (`Debouncer.slice`); nil for none.
    ///   - settle: how long a whole save after a quiet spell gathers (`Debouncer.settle`); nil:
    ///     every batch waits for quiet.
    ///   - namesOnly: only names made, moved in and deleted are watched, never writes (a store's
    ///     refs, which move by a rename: a hub's refs are watched by every device, and each move
    ///     was five events to each of them, four of them about the `.lock`).
    public convenience init(root: FilePath, quiet: Duration, maxDelay: Duration, slice: Duration? = Debouncer.defaultSlice,
                settle: Duration? = nil,
                fallbackScanInterval: Duration = .seconds(10),
                handoff: Bool = false,
                ignore: @escaping @Sendable (FilePath.Component) -> Bool = { _ in false },
                recordedMoves: @escaping @Sendable (FilePath.Component) -> Bool = { _ in false },
                namesOnly: Bool = false,
                onProblem: @escaping @Sendable (WatchProblem) -> Void = { _ in }) throws(WatcherError) {
        try self.init(root: root, quiet: quiet, maxDelay: maxDelay, slice: slice, settle: settle,
                      fallbackScanInterval: fallbackScanInterval, handoff: handoff, ignore: ignore,
                      recordedMoves: recordedMoves, namesOnly: namesOnly, onProblem: onProblem, hub: nil)
    }

    /// `hub`: the inotify instance to share (nil: the process's, `InotifyHub.shared`).
    init(root: FilePath, quiet: Duration, maxDelay: Duration, slice: Duration?, settle: Duration?,
         fallbackScanInterval: Duration, handoff: Bool,
         ignore: @escaping @Sendable (FilePath.Component) -> Bool,
         recordedMoves: @escaping @Sendable (FilePath.Component) -> Bool,
         namesOnly: Bool = false,
         onProblem: @escaping @Sendable (WatchProblem) -> Void, hub: InotifyHub?) throws(WatcherError) {
        self.root = root
        let (stream, continuation) = AsyncStream.makeStream(of: WatchBatch.self, bufferingPolicy: .unbounded)
        batches = stream
        loop = try Loop(root: root, debouncer: Debouncer(quiet: quiet, maxDelay: maxDelay, slice: slice, settle: settle),
                        fallbackScanInterval: fallbackScanInterval, handoff: handoff, ignore: ignore,
                        recordedMoves: recordedMoves, namesOnly: namesOnly, onProblem: onProblem, output: continuation, hub: hub)
    }

    /// Starts reading events on the watcher's own thread.
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let loop = self.loop
        OwnThread.start(name: "syncagent-watcher") { loop.run() }
    }

    /// Adds paths to the pending batch as if they had changed (e.g. a file that changed while it was
    /// being committed); they go out with the next batch.
    public func report(_ paths: some Sequence<FilePath>) {
        loop.inject(Array(paths))
    }

    /// Asks for a full rescan with the next batch (e.g. after a failed one).
    public func requestRescan() { loop.request(.rescan) }

    /// With `handoff: true`: every change handed on and not taken yet. `batches` then only says
    /// when to call this; `drain` takes the same changes, so each is taken exactly once.
    public func takeReady() -> WatchBatch {
        loop.ready.withLock { r in
            defer { r = WatchBatch() }
            return r
        }
    }

    /// Reads what the kernel holds now and returns every pending change to the caller (not to
    /// `batches`), without waiting for the quiet period: the sync engine commits these before it
    /// merges a peer. Returns an empty batch once the watcher has stopped.
    /// Before `start()` it waits for the start (the kernel's queue is read from then on).
    /// - Parameter keepingOpen: files written to and still open (`Debouncer`) stay pending: a merge
    ///   need not wait for them (its apply leaves any file changed on disk as it is).
    public func drain(keepingOpen: Bool = false) async -> WatchBatch { await loop.drain(keepingOpen: keepingOpen) }

    /// Whether `start()` (or `stop()`) was called: `drain` answers without waiting for a start.
    public var hasStarted: Bool { started.load(ordering: .acquiring) }

    /// Drops every watch and watches the tree under `root` again, then rescans (the data directory
    /// was replaced by another one at the same path).
    public func rewatch() { loop.request(.rewatch) }

    /// Reads what the kernel still holds, hands on the last batch and ends `batches`.
    public func stop() {
        if started.exchange(true, ordering: .acquiringAndReleasing) {
            loop.request(.stop)
        } else {
            loop.finishWithoutStarting()  // and `start()` does nothing from now on
        }
    }

    /// Paths changed but not yet handed on.
    public var pendingCount: Int { loop.pending.load(ordering: .relaxed) }

    /// Whether watches ran out and the watcher is scanning periodically instead.
    public var isDegraded: Bool { loop.degradedFlag.load(ordering: .relaxed) }
}

