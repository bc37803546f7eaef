import SyncCore
import SystemPackage
import FileSystem

/// One line of `syncagent held --json`: `{"path", "reason", "bytes"}` (bytes null for a deletion).
public struct HeldEntry: Codable, Sendable, Equatable {
    public var path: String
    public var reason: String
    public var bytes: Int64?

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(reason, forKey: .reason)
        try c.encode(bytes, forKey: .bytes)
    }

    /// Held deletions (mass-delete) and the store's held list, in path order.
    static func list(heldDeletes: Set<FilePath>, held: [FilePath: HeldChange]) -> [HeldEntry] {
        var all: [(FilePath, HeldEntry)] = heldDeletes.map { ($0, HeldEntry(path: $0.display, reason: HoldReason.massDelete.rawValue, bytes: nil)) }
        all += held.values.map { ($0.path, HeldEntry(path: $0.path.display, reason: $0.reason.rawValue, bytes: $0.bytes)) }
        return all.sortedInBytes { $0.0 }.map(\.1)
    }
}
