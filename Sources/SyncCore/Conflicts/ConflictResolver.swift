import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// What a resolver decided for one conflicted path.
public enum ResolverDecision: Sendable, Equatable {
    /// These bytes go at the path (a regular file).
    case bytes([UInt8])
    /// That device's version stays.
    case keep(device: String)
    /// The path is deleted.
    case delete
    /// The version the record holds keeps the path; every other one is written beside it
    /// (`NAME.conflict-DEVICE-STAMP.EXT`), as `resolve --keep both` does.
    case both
}

/// Settles conflicts automatically for programs that embed the agent. Registered resolvers are
/// asked before the configured `[[resolver]]` strategies; returning nil declines.
///
/// Every device must reach the same decision from the same input: decide from the bytes and the
/// device names, never from which side is "ours".
public protocol ConflictResolver: Sendable {
    /// A short name, recorded as the resolution's strategy (e.g. "settings-merge").
    var name: String { get }
    /// - Parameters:
    ///   - record: the conflict (path, kind, versions sorted by device name).
    ///   - base: the common version's bytes, nil when there is none.
    ///   - versions: each device's bytes, nil for a deletion.
    func resolve(_ record: ConflictRecord, base: [UInt8]?, versions: [String: [UInt8]?]) -> ResolverDecision?
}
