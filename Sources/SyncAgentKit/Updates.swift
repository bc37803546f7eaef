import Agent
import FileSystem
import FoundationEssentials
import Glibc
import Synchronization
import SyncCore
import SystemPackage

/// Where a change of a value came from.
public enum Origin: Sendable, Equatable {
    /// The value as it was when the observation began.
    case current
    /// This device committed it (a `set`, or a file written into the data directory).
    case thisDevice
    /// It arrived from this peer (a device, or a hub).
    case peer(String)
    /// A conflict over it was opened: the disk holds the version every device holds while it is open.
    case conflict(id: String)
    /// A conflict over it was resolved, by this device.
    case resolution(by: String?)
}

/// One state of a value: what the key holds now, and where that came from.
public struct ValueUpdate<T: Sendable>: Sendable {
    /// The value; nil when the key holds nothing, or bytes that are not a `T` (see `raw`).
    public let value: T?
    /// The bytes at the key (nil: nothing there). Never dropped, even when they are no `T`.
    public let raw: [UInt8]?
    /// Why `raw` is not a `T`, when it is not.
    public let decodeError: String?
    /// Where this state came from.
    public let origin: Origin

    /// The key holds nothing (it was deleted, or never set).
    public var isDeleted: Bool { raw == nil }
}

/// One change under a prefix: which key, and its new state.
public struct KeyUpdate<T: Sendable>: Sendable {
    /// The key that changed.
    public let key: String
    /// Its new state.
    public let update: ValueUpdate<T>
}

/// The paths an event says changed, and where the change came from; nil for other events.
/// `complete` is false when the event lists only the first of its paths.
func change(in event: AgentEvent) -> (paths: [String], complete: Bool, origin: Origin)? {
    switch event.kind {
    case .committed(_, let paths, let count): return (paths, count <= paths.count, .thisDevice)
    case .received(let peer, _, let paths, let count): return (paths, count <= paths.count, .peer(peer))
    case .conflictOpened(let id, let path): return ([path], true, .conflict(id: id))
    case .conflictResolved(_, let path, _, let by): return ([path], true, .resolution(by: by))
    default: return nil
    }
}

func state<T>(_ bytes: [UInt8]?, _ coder: ValueCoder<T>, origin: Origin) -> ValueUpdate<T> {
    guard let bytes else { return ValueUpdate(value: nil, raw: nil, decodeError: nil, origin: origin) }
    do {
        return ValueUpdate(value: try coder.decode(bytes), raw: bytes, decodeError: nil, origin: origin)
    } catch {
        return ValueUpdate(value: nil, raw: bytes, decodeError: "\(error)", origin: origin)
    }
}

/// One key followed: its value now, then a new state each time an event names it and its bytes
/// differ from the last ones told.
struct KeyObservation<T: Codable & Sendable>: Sendable {
    let key: String
    let agent: SyncAgent
    let coder: ValueCoder<T>

    func stream() -> AsyncStream<ValueUpdate<T>> {
        // Only the newest state waits for a slow observer: it gets the value as it is when it asks.
        let (stream, continuation) = AsyncStream.makeStream(of: ValueUpdate<T>.self, bufferingPolicy: .bufferingNewest(1))
        let (key, agent, coder) = (self.key, self.agent, self.coder)
        let file = agent.config.data.pushing(FilePath(key))
        let task = Task {
            let events = agent.connection.events()  // listening before the first read: nothing is missed
            var last = (try? await blocking("syncagent-kit-read") { try SyncedValue<T>.read(file) }) ?? nil
            continuation.yield(state(last, coder, origin: .current))
            for await event in events {
                guard let (paths, complete, origin) = change(in: event), !complete || paths.contains(key) else { continue }
                let now = (try? await blocking("syncagent-kit-read") { try SyncedValue<T>.read(file) }) ?? nil
                if now == last, !isConflictEvent(origin) { continue }
                last = now
                continuation.yield(state(now, coder, origin: origin))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

func isConflictEvent(_ origin: Origin) -> Bool {
    if case .conflict = origin { return true }
    if case .resolution = origin { return true }
    return false
}

/// Every key under a prefix followed: the values now, then each key an event names (all of them
/// again when an event lists only some of its paths).
struct PrefixObservation<T: Codable & Sendable>: Sendable {
    let prefix: String
    let agent: SyncAgent
    let coder: ValueCoder<T>

    func stream() -> AsyncStream<KeyUpdate<T>> {
        let (prefix, agent, coder) = (self.prefix, self.agent, self.coder)
        let data = agent.config.data
        let directory = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        // Per key, only the newest state waits for a slow observer (a key changed ten times while it
        // was busy is told once, as it is now); the keys come in the order they first changed.
        let pending = PendingUpdates<T>()
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let task = Task {
            let events = agent.connection.events()
            var known = (try? await blocking("syncagent-kit-scan") { Self.scan(data, directory) }) ?? [:]
            for (key, bytes) in known.sorted(by: { $0.key < $1.key }) {
                pending.put(KeyUpdate(key: key, update: state(bytes, coder, origin: .current)))
            }
            signal.yield(())
            for await event in events {
                guard let (paths, complete, origin) = change(in: event) else { continue }
                let under = paths.filter { $0.hasPrefix(directory + "/") }
                guard !complete || !under.isEmpty else { continue }
                // The keys the event names (all of them again when it lists only some of its paths).
                var now = known
                if complete {
                    let read = (try? await blocking("syncagent-kit-read") { under.map { key in (key, try? Files.read(data.pushing(FilePath(key)))) } }) ?? []
                    for (key, bytes) in read { now[key] = bytes }
                } else {
                    now = (try? await blocking("syncagent-kit-scan") { Self.scan(data, directory) }) ?? known
                }
                let keys = complete ? Set(under) : Set(now.keys).union(known.keys)
                for key in keys.sorted() where now[key] != known[key] || under.contains(key) && isConflictEvent(origin) {
                    pending.put(KeyUpdate(key: key, update: state(now[key], coder, origin: origin)))
                }
                known = now
                signal.yield(())
            }
            signal.finish()
        }
        let waiting = SignalWait(signals.makeAsyncIterator(), ending: task)
        return AsyncStream(unfolding: {
            while true {
                if let next = pending.take() { return next }
                guard await waiting.next() else { return pending.take() }
            }
        }, onCancel: { task.cancel() })
    }

    /// The files under `directory` (relative to `data`) and their bytes. Keys are text: a name that
    /// is not UTF-8 is no key of this kit and is left out.
    static func scan(_ data: FilePath, _ directory: String) -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        let root = data.pushing(FilePath(directory))
        Directory.walk(root) { relative, kind in
            guard kind == .regular, !PathRules.isIgnored(path: relative),
                  let name = String(validating: relative.bytes, as: UTF8.self) else { return }
            if let bytes = try? Files.read(root.pushing(relative)) { out[directory + "/" + name] = bytes }
        }
        return out
    }
}

/// The newest state of each changed key, in the order the keys first changed, until taken.
final class PendingUpdates<T: Sendable>: Sendable {
    private let state = Mutex<(order: [String], latest: [String: KeyUpdate<T>])>(([], [:]))

    func put(_ update: KeyUpdate<T>) {
        state.withLock { s in
            if s.latest.updateValue(update, forKey: update.key) == nil { s.order.append(update.key) }
        }
    }

    func take() -> KeyUpdate<T>? {
        state.withLock { s in
            guard !s.order.isEmpty else { return nil }
            return s.latest.removeValue(forKey: s.order.removeFirst())
        }
    }
}

/// The observer's side of the "something changed" signal. Iterated by one observer at a time (an
/// `AsyncStream` is); when the observation is dropped, its producing task ends with it.
final class SignalWait: @unchecked Sendable {
    private var iterator: AsyncStream<Void>.Iterator
    private let task: Task<Void, Never>

    init(_ iterator: AsyncStream<Void>.Iterator, ending task: Task<Void, Never>) {
        self.iterator = iterator
        self.task = task
    }
    deinit { task.cancel() }

    /// False once no more signals come.
    func next() async -> Bool { await iterator.next() != nil }
}
