import Agent
import Foundation
import SyncCore
import SystemPackage
import FileSystem

/// What the page shows of one agent, read the way the CLI reads it: `status` from the running
/// agent over its socket (or from the store while it is stopped), conflicts and history from the
/// store, held changes through the agent. Everything here blocks: call it on a thread of its own.
public struct AgentView: Codable, Sendable {
    public var index: Int
    public var config: String
    public var status: StatusReport?
    public var statusError: String?
    public var conflicts: [ConflictRecord]
    public var held: [HeldEntry]
    public var events: [EventLine]

    /// An event as its JSON line has it (`AgentEvent` encodes flat).
    public struct EventLine: Codable, Sendable {
        public var seq: Int?
        public var time: String
        public var type: String
        public var text: String
    }
}

/// One version of a conflicting path, as the page draws it.
public struct VersionView: Codable, Sendable {
    public enum Kind: String, Codable, Sendable { case text, json, image, binary, deleted, directory }
    /// "base" or a device.
    public var name: String
    public var kind: Kind
    public var size: Int?
    public var blob: String?
    public var time: String?
    /// For text and JSON: the bytes as text.
    public var text: String?
    /// The disk holds this version now.
    public var current: Bool
}

public struct ConflictView: Codable, Sendable {
    public var record: ConflictRecord
    public var versions: [VersionView]
}

public enum WebData {
    static let textLimit = 1 << 20

    public static func view(_ config: Config, index: Int) -> AgentView {
        var status: StatusReport?
        var statusError: String?
        if AgentLock.holder(of: config.lockPath) != nil {
            do {
                let line = try ControlClient.send(.status, to: config.socketPath, timeoutSeconds: 5)
                status = try JSONDecoder().decode(StatusReport.self, from: Data(line))
            } catch {
                statusError = "the agent does not answer: \(error)"
            }
        } else {
            status = StatusBuilder.offline(config)
        }
        let store = try? OneShot.readStore(config: config)
        let conflicts = (try? store?.conflicts()) ?? []
        let held = (try? OneShot.held(config: config)) ?? []
        let events = EventLog.read(state: config.state, since: nil).suffix(40).map { e in
            AgentView.EventLine(seq: e.seq, time: ISOTime.precise(e.time), type: e.type.rawValue, text: describe(e))
        }
        return AgentView(index: index, config: config.file.description, status: status, statusError: statusError,
                         conflicts: conflicts ?? [], held: held, events: Array(events.reversed()))
    }

    static func describe(_ e: AgentEvent) -> String {
        switch e.kind {
        case .committed(_, let paths, let count): "committed \(count) path\(count == 1 ? "" : "s")" + first(paths)
        case .received(let peer, _, let paths, let count): "received \(count) from \(peer)" + first(paths)
        case .conflictOpened(let id, let path): "conflict \(id) opened at \(path)"
        case .conflictResolved(let id, let path, let strategy, let by): "conflict \(id) at \(path) resolved (\(strategy ?? "?") by \(by ?? "?"))"
        case .peerReachable(let peer): "\(peer) reachable"
        case .peerUnreachable(let peer, let error): "\(peer) not reachable" + (error.map { ": \($0)" } ?? "")
        case .held(let path, let reason): "held \(path) (\(reason.rawValue))"
        case .problem(let message): message
        case .started(let message): "started" + (message.map { ": \($0)" } ?? "")
        case .stopped: "stopped"
        case .paused(let peer): "paused \(peer ?? "every peer")"
        case .resumed(let peer): "resumed \(peer ?? "every peer")"
        case .gap(_, _, let message): message
        case .progress(let p): p.line
        }
    }

    private static func first(_ paths: [String]) -> String {
        paths.isEmpty ? "" : ": " + paths.prefix(3).joined(separator: ", ") + (paths.count > 3 ? ", ..." : "")
    }

    /// The record's versions, each as text, JSON, a picture or its size and hash.
    public static func conflict(_ config: Config, id: String) throws -> ConflictView {
        let store = try OneShot.readStore(config: config)
        guard let record = try store.anyRecord(RecordTarget(text: id)) else {
            throw WebError(404, "no conflict record \(id) on \(config.device); it may have been resolved meanwhile")
        }
        var versions: [VersionView] = []
        if record.base != nil { versions.append(try version(store, record, name: "base", time: nil, directory: false, current: false)) }
        for v in record.versions {
            versions.append(try version(store, record, name: v.device, time: v.time, directory: v.isDirectory, current: record.current == v.device))
        }
        return ConflictView(record: record, versions: versions)
    }

    private static func version(_ store: Store, _ record: ConflictRecord, name: String, time: String?, directory: Bool,
                                current: Bool) throws -> VersionView {
        let blob = name == "base" ? record.base?.blob : record.versions.first { $0.device == name }?.blob
        if directory { return VersionView(name: name, kind: .directory, blob: nil, time: time, current: current) }
        guard let bytes = try store.versionBytes(record, version: name) else {
            return VersionView(name: name, kind: .deleted, time: time, current: current)
        }
        var view = VersionView(name: name, kind: kind(of: bytes), size: bytes.count, blob: blob, time: time, current: current)
        if view.kind == .text || view.kind == .json { view.text = String(decoding: bytes, as: UTF8.self) }
        return view
    }

    /// What the bytes look like: a picture by its magic, JSON or text when they are UTF-8 (and not
    /// too big to show), else binary.
    static func kind(of bytes: [UInt8]) -> VersionView.Kind {
        if imageType(bytes) != nil { return .image }
        guard bytes.count <= textLimit, !bytes.contains(0), String(validating: bytes, as: UTF8.self) != nil else { return .binary }
        if let first = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }), first == UInt8(ascii: "{") || first == UInt8(ascii: "["),
           (try? JSONSerialization.jsonObject(with: Data(bytes))) != nil {
            return .json
        }
        return .text
    }

    public static func imageType(_ b: [UInt8]) -> String? {
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if b.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        if b.count > 12, b.starts(with: Array("RIFF".utf8)), Array(b[8..<12]) == Array("WEBP".utf8) { return "image/webp" }
        return nil
    }

    /// The bytes of one version (for a picture).
    public static func versionBytes(_ config: Config, id: String, version: String) throws -> [UInt8] {
        let store = try OneShot.readStore(config: config)
        guard let record = try store.anyRecord(RecordTarget(text: id)) else { throw WebError(404, "no conflict record \(id)") }
        guard let bytes = try store.versionBytes(record, version: version) else { throw WebError(404, "\(version) deleted \(record.path)") }
        return bytes
    }

    public static func history(_ config: Config, path: String) throws -> [HistoryEntry] {
        try OneShot.readStore(config: config).history(of: FilePath(bytes: Array(path.utf8)), limit: 50)
    }
}

public struct WebError: Error, CustomStringConvertible, Sendable {
    public let status: Int
    public let description: String
    public init(_ status: Int, _ description: String) { (self.status, self.description) = (status, description) }
}
