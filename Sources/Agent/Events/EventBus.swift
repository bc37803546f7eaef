import FoundationEssentials
import Glibc
import Platform
import Synchronization
import SyncCore
import SystemPackage

/// Where the agent's events go (SPEC "Events"): each gets the next sequence number, is appended to
/// `<state>/events.jsonl` on a thread of its own (file I/O never on the cooperative pool) and
/// handed to every live listener: `AsyncStream`s of embedding programs, `events --follow` clients,
/// hooks. `emit` never blocks on a listener.
public final class EventBus: Sendable {
    private struct State {
        var lastSeq: Int
        var streams: [Int: AsyncStream<AgentEvent>.Continuation] = [:]
        var queues: [Int: EventQueue] = [:]
        var nextID = 0
        var finished = false
    }

    private let state: Mutex<State>
    private let writer = SerialWorker(name: "syncagent-events")
    private let log: LogBox
    let stateDirectory: FilePath

    init(state: FilePath) {
        let log = EventLog(state: state)
        self.log = LogBox(log)
        self.state = Mutex(State(lastSeq: log.lastSeq))
        stateDirectory = state
    }

    /// Logs the event and hands it to every listener.
    func emit(_ event: AgentEvent) {
        state.withLock { s in
            guard !s.finished else { return }
            s.lastSeq += 1
            var event = event
            event.seq = s.lastSeq
            let log = self.log
            let logged = event
            writer.async { log.value.append(logged) }  // same order: the numbers are given under the lock
            for c in s.streams.values { c.yield(event) }
            for q in s.queues.values { q.push(event) }
        }
    }

    /// Hands the event to live listeners only: not logged, not numbered (a `progress` event).
    func emitLive(_ event: AgentEvent) {
        state.withLock { s in
            guard !s.finished, !(s.streams.isEmpty && s.queues.isEmpty) else { return }
            for c in s.streams.values { c.yield(event) }
            for q in s.queues.values { q.push(event) }
        }
    }

    /// Every event from now on, until the agent stops (embedding programs: `AgentService.events`).
    func stream() -> AsyncStream<AgentEvent> {
        let (stream, continuation) = AsyncStream<AgentEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let id = state.withLock { s -> Int? in
            guard !s.finished else { return nil }
            s.nextID += 1
            s.streams[s.nextID] = continuation
            return s.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.streams.removeValue(forKey: id) } }
        return stream
    }

    /// A blocking listener for a thread of its own (a `--follow` client, a hook).
    func listen(limit: Int = 10_000) -> EventQueue {
        let queue = EventQueue(limit: limit)
        state.withLock { s in
            if s.finished { queue.finish(); return }
            s.nextID += 1
            s.queues[s.nextID] = queue
            queue.id = s.nextID
        }
        return queue
    }

    func unlisten(_ queue: EventQueue) {
        _ = state.withLock { $0.queues.removeValue(forKey: queue.id) }
    }

    /// The logged events after `since` (a `gap` first when some are no longer kept), once every
    /// event emitted so far is written.
    func stored(since: Int?) -> [AgentEvent] {
        writer.sync()
        return EventLog.read(state: stateDirectory, since: since)
    }

    /// Ends every listener (after the last event, `stopped`) and waits for the file.
    func finish() {
        let (streams, queues) = state.withLock { s -> ([AsyncStream<AgentEvent>.Continuation], [EventQueue]) in
            s.finished = true
            defer { s.streams = [:]; s.queues = [:] }
            return (Array(s.streams.values), Array(s.queues.values))
        }
        for c in streams { c.finish() }
        for q in queues { q.finish() }
        writer.sync()
    }
}

/// The event log, touched only on the bus's writer queue.
private final class LogBox: @unchecked Sendable {
    let value: EventLog
    init(_ value: EventLog) { self.value = value }
}

/// Events waiting for one blocking listener; a listener that falls `limit` behind loses the oldest
/// and is told how many.
final class EventQueue: @unchecked Sendable {
    private let condition = Condition()
    private var items: [AgentEvent] = []
    private var dropped = 0
    private var done = false
    private let limit: Int
    var id = 0

    init(limit: Int) { self.limit = limit }

    func push(_ event: AgentEvent) {
        condition.lock()
        items.append(event)
        if items.count > limit {
            items.removeFirst(items.count - limit)
            dropped += 1
        }
        condition.signal()
        condition.unlock()
    }

    func finish() {
        condition.lock()
        done = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits up to `timeout` for events. Returns nil once finished and drained; `dropped` counts the
    /// events lost since the last call.
    func next(timeout: TimeInterval) -> (events: [AgentEvent], dropped: Int)? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Deadline(in: timeout)
        while items.isEmpty && !done {
            if !condition.wait(until: deadline) { break }
        }
        if items.isEmpty && done { return nil }
        let out = (items, dropped)
        items = []
        dropped = 0
        return out
    }
}
