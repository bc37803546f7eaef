import Agent
import FoundationEssentials
import Glibc
import Logging
import Synchronization
import SyncCore
import SystemPackage
import FileSystem

/// Which keys a resolver or a policy is for.
public enum KeyMatch: Sendable, Equatable {
    /// Exactly this key.
    case key(String)
    /// Every key under this directory (`workouts/`).
    case prefix(String)

    func matches(_ key: String) -> Bool {
        switch self {
        case .key(let k): key == k
        case .prefix(let p): key.hasPrefix(p.hasSuffix("/") ? p : p + "/")
        }
    }
}

/// One device's version of a conflicted value.
public struct ConflictVersion<T: Sendable>: Sendable {
    /// The device that made it.
    public let device: String
    /// When it was made (ISO 8601).
    public let time: String
    /// The value; nil when deleted there, when its bytes are not a `T` (see `raw`), or when this
    /// device does not have them yet.
    public let value: T?
    /// The bytes of this version (nil: deleted, or not here yet). Never dropped.
    public let raw: [UInt8]?
    /// The device deleted the key.
    public let isDeleted: Bool
    /// Why `raw` is not a `T`, when it is not.
    public let decodeError: String?
}

/// A value two or more devices changed differently: the common version it came from, every
/// device's version, and which one the disk holds now.
public struct Conflict<T: Sendable>: Sendable {
    /// The conflict record's id (`syncagent conflicts` lists it).
    public let id: String
    /// The key both devices changed.
    public let key: String
    /// The version every side started from; nil when the devices added the key separately.
    public let base: ConflictVersion<T>?
    /// Every device's version, sorted by device name.
    public let versions: [ConflictVersion<T>]
    /// The device whose version the data directory holds while the conflict is open.
    public let current: String?
}

/// What a resolver decides. Every device must decide the same from the same conflict: decide from
/// the values and the device names, never from which device runs the resolver.
public enum Resolution<T: Sendable>: Sendable {
    /// This value goes at the key, on every device.
    case value(T)
    /// That device's version stays.
    case keep(device: String)
    /// The version the disk holds stays at the key; every other one is written beside it
    /// (`NAME.conflict-DEVICE-STAMP.EXT`).
    case keepBoth
    /// The key is deleted.
    case delete
    /// Not now: the conflict stays open (`syncagent conflicts`, `syncagent resolve`).
    case decideLater
}

extension SyncAgent {
    /// Registers a resolver for the keys `match` names: each conflict over one of them, typed, is
    /// handed to `resolve`, and its answer is saved and synced like a `syncagent resolve`. A
    /// resolver that throws leaves the conflict open (the error is logged). Versions whose bytes are
    /// not a `T` reach it with `value` nil and their `raw` bytes.
    ///
    /// Embedded, it is asked during the merge, on the agent's thread: keep it quick and never wait
    /// on the agent from it. As a client, ``run()`` asks it for the conflicts open now and each one
    /// opened later.
    public func onConflict<T: Codable & Sendable>(_ match: KeyMatch, as type: T.Type = T.self, coder: ValueCoder<T> = .json,
                                                  resolve: @escaping @Sendable (Conflict<T>) throws -> Resolution<T>) {
        resolvers.add(match) { record, base, versions in
            let key = record.path
            func version(_ device: String, time: String, bytes: [UInt8]?, deleted: Bool) -> ConflictVersion<T> {
                var value: T?, why: String?
                if let bytes {
                    do { value = try coder.decode(bytes) } catch { why = "\(error)" }
                }
                return ConflictVersion(device: device, time: time, value: value, raw: bytes, isDeleted: deleted, decodeError: why)
            }
            let conflict = Conflict(
                id: record.id, key: key,
                base: record.base.map { _ in version("base", time: record.detectedAt, bytes: base, deleted: false) },
                versions: record.versions.map { v in version(v.device, time: v.time, bytes: versions[v.device] ?? nil, deleted: v.isDeletion) },
                current: record.current)
            switch try resolve(conflict) {
            case .value(let value): return .bytes(try coder.encode(value))
            case .keep(let device): return .keep(device: device)
            case .keepBoth: return .both
            case .delete: return .delete
            case .decideLater: return nil
            }
        }
    }

    /// Client: every open conflict a registered resolver is for, decided and sent to the agent.
    func resolveOpenConflicts() async {
        guard case .client(let config) = connection, resolvers.hasAny else { return }
        let registry = resolvers
        let decisions = (try? await blocking("syncagent-kit-conflicts") { () -> [(String, ResolverDecision)] in
            let store = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
            var out: [(String, ResolverDecision)] = []
            for record in try store.conflicts() {
                let base = try? store.versionBytes(record, version: "base")
                var versions: [String: [UInt8]?] = [:]
                for v in record.versions { versions[v.device] = (try? store.versionBytes(record, version: v.device)).flatMap { $0 } }
                if let decision = registry.resolve(record, base: base ?? nil, versions: versions) { out.append((record.id, decision)) }
            }
            return out
        }) ?? []
        for (id, decision) in decisions {
            var choice = ResolveChoiceArgument(keep: nil, withFile: nil, delete: false)
            switch decision {
            case .bytes(let bytes): choice.withContent = bytes
            case .keep(let device): choice.keep = device
            case .both: choice.keep = "both"
            case .delete: choice.delete = true
            }
            do {
                let results = try await connection.request(.resolve(targets: [RecordTarget(text: id)], all: false, choice: choice),
                                                           as: [ResolveResult].self)
                for result in results where result.error != nil {
                    logger.warning("conflict \(id): the app's resolver decided, but the agent says: \(result.error ?? "")")
                }
            } catch {
                logger.warning("conflict \(id): the app's resolver decided, but the agent could not be asked: \(error)")
            }
        }
    }
}

/// The app's typed resolvers behind the agent's one `ConflictResolver`: the first whose match
/// takes the record's key decides.
final class ResolverRegistry: ConflictResolver, Sendable {
    typealias Handler = @Sendable (ConflictRecord, [UInt8]?, [String: [UInt8]?]) throws -> ResolverDecision?
    private let entries = Mutex<[(match: KeyMatch, handler: Handler)]>([])
    let logger: Logger

    init(logger: Logger) { self.logger = logger }

    var name: String { "app" }
    var hasAny: Bool { entries.withLock { !$0.isEmpty } }

    func add(_ match: KeyMatch, _ handler: @escaping Handler) {
        entries.withLock { $0.append((match, handler)) }
    }

    func resolve(_ record: ConflictRecord, base: [UInt8]?, versions: [String: [UInt8]?]) -> ResolverDecision? {
        guard let handler = entries.withLock({ $0.first { $0.match.matches(record.path) }?.handler }) else { return nil }
        do {
            return try handler(record, base, versions)
        } catch {
            logger.warning("conflict \(record.id) (\(record.path)): the app's resolver threw \(error); the conflict stays open (`syncagent resolve` settles it)")
            return nil
        }
    }
}
