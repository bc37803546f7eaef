import Foundation
import Git
import SystemPackage

/// What a resolver decided for one conflicted path.
public enum ResolverDecision: Sendable, Equatable {
    /// These bytes go at the path (a regular file).
    case bytes([UInt8])
    /// That device's version stays.
    case keep(device: String)
    /// The path is deleted.
    case delete
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

/// The configured `[[resolver]]` rules.
struct StrategyResolver {
    let rules: [ResolverRule]
    let commandTimeout: Duration

    func rule(for path: String) -> ResolverRule? {
        rules.first { Glob.matches($0.path, path: path) }
    }

    /// The decision of the first matching rule, or nil (manual, no match, or the strategy declined,
    /// with the reason in `note`). `both` is not decided here: the merge applies it (it adds a file).
    func decide(_ record: ConflictRecord, base: [UInt8]?, versions: [String: [UInt8]?]) -> (decision: ResolverDecision?, note: String?) {
        guard let rule = rule(for: record.path) else { return (nil, nil) }
        let devices = record.versions.map(\.device)  // sorted by device name
        switch rule.strategy {
        case .manual, .both:
            return (nil, nil)
        case .newest:
            return (record.current.map { .keep(device: $0) }, nil)
        case .keep(let device):
            guard devices.contains(device) else { return (nil, "keep:\(device) does not apply: \(device) has no version of \(record.path)") }
            return (.keep(device: device), nil)
        case .union:
            let present = devices.compactMap { versions[$0] ?? nil }
            guard present.count == devices.count else { return (nil, "union needs every version; \(record.path) was deleted on one side") }
            return (.bytes(Merges.lineUnion(base: base, versions: present)), nil)
        case .json:
            guard devices.count == 2, let a = versions[devices[0]] ?? nil, let b = versions[devices[1]] ?? nil,
                  let merged = Merges.json(base: base, a, b) else {
                return (nil, "json merge left \(record.path) open: a key changed differently on both sides, or a version is not a JSON object")
            }
            return (.bytes(merged), nil)
        case .command:
            guard let command = rule.command, devices.count == 2 else { return (nil, nil) }
            switch ExternalMerge.run(command, path: record.path, base: base,
                                     first: versions[devices[0]] ?? nil, second: versions[devices[1]] ?? nil,
                                     timeout: commandTimeout) {
            case .success(let decision): return (decision, nil)
            case .failure(let failure): return (nil, "\(failure); the conflict stays open")
            }
        }
    }
}

/// Resolver path globs: a pattern with a '/' matches the whole relative path, one without matches
/// the file name at any depth ("*.json" matches "settings/app.json").
enum Glob {
    static func matches(_ pattern: String, path: String) -> Bool {
        if pattern.contains("/") {
            return fnmatch(pattern, path, FNM_PATHNAME) == 0
        }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return fnmatch(pattern, name, 0) == 0
    }
}
