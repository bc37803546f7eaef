internal import Git
internal import ObjectStorage
import SystemPackage
import FileSystem

/// `[[rule]] sync`: whether and when a path's changes leave this device.
public enum SyncMode: String, Sendable, Equatable, Codable {
    /// Shared as soon as committed (a file over `max_bytes` is held like `manual`).
    case auto
    /// Kept safe in the store, shared only by `syncagent send`.
    case manual
    /// Local to this device: never committed, never written by a merge.
    case never
}

/// `mode`: whether local edits are committed and shared at all.
public enum DeviceMode: String, Sendable, Equatable, Codable {
    case sendReceive = "send-receive"
    /// Peers' changes are applied; local edits are never committed to `main` nor sent.
    case receiveOnly = "receive-only"
}

/// One `[[rule]]`: which paths it covers and what it decides for them.
public struct SyncRule: Sendable, Equatable, Codable {
    public var path: String
    public var sync: SyncMode
    /// `auto` only: a file larger than this is held as if `manual`.
    public var maxBytes: Int64?
    /// Only these devices write matching paths into their data directory; nil: every device.
    public var devices: [String]?

    /// A line of `.syncignore` (`IgnoreFile`): `never`, or (`auto`) a `!` line that takes paths
    /// back from the file's earlier lines and leaves them to the config's rules. Not in the JSON.
    public var fromIgnoreFile = false

    public init(path: String, sync: SyncMode = .auto, maxBytes: Int64? = nil, devices: [String]? = nil) {
        self.path = path
        self.sync = sync
        self.maxBytes = maxBytes
        self.devices = devices
    }

    private enum CodingKeys: String, CodingKey { case path, sync, maxBytes, devices }
}

/// Why a local change is kept back (`syncagent held`).
public enum HoldReason: String, Sendable, Equatable, Codable {
    case manual
    case maxBytes = "max_bytes"
    case massDelete = "mass-delete"
    case localChange = "local-change"
}

/// The pure decision the rules make for one path on this device (SPEC "Policy"): first matching
/// rule wins; no match is `auto` on every device.
public struct PathPolicy: Sendable, Equatable {
    public let device: String
    public let rules: [SyncRule]
    public let mode: DeviceMode

    public init(device: String, rules: [SyncRule] = [], mode: DeviceMode = .sendReceive) {
        self.device = device
        self.rules = rules
        self.mode = mode
    }

    public func rule(for path: FilePath) -> SyncRule? {
        guard !rules.isEmpty else { return nil }
        let bytes = path.bytes
        var pastIgnoreFile = false
        for rule in rules {
            if pastIgnoreFile && rule.fromIgnoreFile { continue }
            guard Glob.matches(rule.path, pathBytes: bytes) else { continue }
            // A `!` line of `.syncignore`: not ignored, and the config's rules decide.
            if rule.fromIgnoreFile && rule.sync != .never {
                pastIgnoreFile = true
                continue
            }
            return rule
        }
        return nil
    }

    /// Whether this device keeps the path in its data directory: false for `never` (the disk's
    /// version is the device's own business) and for a `devices` list without this device (the store
    /// keeps and relays the path, the disk never has it). Either way the commit path leaves the path
    /// alone and a merge does not write it.
    public func materializes(_ path: FilePath) -> Bool {
        guard let rule = rule(for: path) else { return true }
        if rule.sync == .never { return false }
        if let devices = rule.devices, !devices.contains(device) { return false }
        return true
    }

    /// Why a change of `size` bytes (nil: a deletion) at `path` is held back, or nil when it is shared.
    public func holdReason(_ path: FilePath, size: Int64?) -> HoldReason? {
        if mode == .receiveOnly { return .localChange }
        guard let rule = rule(for: path) else { return nil }
        switch rule.sync {
        case .manual: return .manual
        case .never: return nil
        case .auto:
            if let max = rule.maxBytes, let size, size > max { return .maxBytes }
            return nil
        }
    }

    /// The part of the rules that decides what the data directory holds, to notice when it changes
    /// between runs (a device added to or removed from a `devices` list).
    public var materializeKey: [SyncRule] {
        rules.map { SyncRule(path: $0.path, sync: $0.sync == .never ? .never : .auto, maxBytes: nil,
                             devices: $0.devices.map { $0.contains(device) ? [device] : [] }) }
    }
}
