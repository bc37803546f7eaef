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
        // No deletion, no rename: what was added needs no grouping by blob (a start-up commit's
        // chunks of 5,000 new files).
        if !changes.contains(where: { $0.before != nil && $0.after == nil }) {
            for change in changes where change.after != nil {
                if change.before == nil { added.append(change.path) } else { modified.append(change.path) }
            }
            added = added.sortedInBytes()
            return
        }
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
        // Only the lines shown are made (a chunk of 5,000 paths displayed them all, then kept 20).
        var lines: [String] = []
        func list<T>(_ items: [T], _ line: (T) -> String) {
            for item in items.prefix(max(0, limit - lines.count)) { lines.append(line(item)) }
        }
        list(added) { "added: \(show($0))" }
        list(modified) { "modified: \(show($0))" }
        list(deleted) { "deleted: \(show($0))" }
        list(renamed) { "renamed: \(show($0.from)) -> \(show($0.to))" }
        let rest = count - lines.count
        if rest > 0 { lines.append("... and \(rest) more") }
        return "\(device): \(counts.joined(separator: ", "))\n\n" + lines.joined(separator: "\n") + "\n"
    }
}
