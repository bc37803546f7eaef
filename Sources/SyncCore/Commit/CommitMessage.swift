internal import Git
internal import ObjectStorage
import SystemPackage
import FileSystem

/// What one batch changed, in the form the commit message lists it.
public struct ChangeSummary: Sendable, Equatable {
    public var added: [FilePath] = []
    public var modified: [FilePath] = []
    public var deleted: [FilePath] = []
    public var renamed: [(from: FilePath, to: FilePath)] = []

    public init() {}

    public var count: Int { added.count + modified.count + deleted.count + renamed.count }
    public var isEmpty: Bool { count == 0 }

    public static func == (a: ChangeSummary, b: ChangeSummary) -> Bool {
        a.added == b.added && a.modified == b.modified && a.deleted == b.deleted
            && a.renamed.map(\.from) == b.renamed.map(\.from) && a.renamed.map(\.to) == b.renamed.map(\.to)
    }

    /// Builds the summary from per-path before/after blob ids; a deleted path whose blob reappears
    /// at an added path counts as a rename.
    init(changes: [(path: FilePath, before: Oid?, after: Oid?)]) {
        var addedByOid: [Oid: [FilePath]] = [:]
        for change in changes {
            switch (change.before, change.after) {
            case (nil, let after?): addedByOid[after, default: []].append(change.path)
            case (_?, _?): modified.append(change.path)
            default: break
            }
        }
        for change in changes {
            guard let before = change.before, change.after == nil else { continue }
            if var targets = addedByOid[before], !targets.isEmpty {
                renamed.append((from: change.path, to: targets.removeFirst()))
                addedByOid[before] = targets
            } else {
                deleted.append(change.path)
            }
        }
        added = addedByOid.values.flatMap { $0 }
        added = added.sortedInBytes()
        renamed = renamed.sortedInBytes { $0.to }
    }

    /// "phone: 2 added, 1 modified" then one line per path (at most `limit`), then "... and N more".
    public func message(device: String, limit: Int = 20) -> String {
        var counts: [String] = []
        if !added.isEmpty { counts.append("\(added.count) added") }
        if !modified.isEmpty { counts.append("\(modified.count) modified") }
        if !deleted.isEmpty { counts.append("\(deleted.count) deleted") }
        if !renamed.isEmpty { counts.append("\(renamed.count) renamed") }
        // An empty directory's marker is shown as the directory ("inbox/").
        func show(_ path: FilePath) -> String {
            DirectoryMarker.isMarker(path) ? DirectoryMarker.directory(of: path).display + "/" : path.display
        }
        var lines = added.map { "added: \(show($0))" } + modified.map { "modified: \(show($0))" }
            + deleted.map { "deleted: \(show($0))" }
            + renamed.map { "renamed: \(show($0.from)) -> \(show($0.to))" }
        let rest = lines.count - limit
        if rest > 0 {
            lines = Array(lines.prefix(limit))
            lines.append("... and \(rest) more")
        }
        return "\(device): \(counts.joined(separator: ", "))\n\n" + lines.joined(separator: "\n") + "\n"
    }
}
