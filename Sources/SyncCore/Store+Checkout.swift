import FileSystem
import Foundation
import Git
import Glibc
import SystemPackage

/// Files in the data directory that changed after a merge was computed; nothing was written.
public struct UnseenChanges: Error, Sendable, CustomStringConvertible {
    public let paths: [FilePath]
    public var description: String {
        "files changed on disk while merging (\(paths.prefix(5).map(\.display).joined(separator: ", "))); they are committed first and the merge is tried again"
    }
}

extension Store {
    /// Moves the data directory from tree `baseline` to tree `target`, touching only the paths that
    /// differ. Every path is checked first: if any file on disk is not what `baseline` holds (a change
    /// the agent has not committed yet), nothing is written and `UnseenChanges` is thrown. Files are
    /// replaced atomically (a temporary beside them, then rename), and the index follows.
    func applyTree(_ target: Oid, from baseline: Oid?) throws {
        let changes = try repo.diffTrees(baseline, target)
        guard !changes.isEmpty else { return }
        let unseen = changes.filter { !diskMatches($0.path, $0.old) && !diskMatches($0.path, $0.new) }.map(\.path)
        guard unseen.isEmpty else { throw UnseenChanges(paths: unseen) }
        let index = try repo.index()
        // Removals first (deepest first), so a directory can become a file and a file a directory.
        for change in changes where change.new == nil {
            try removeFromData(change.path)
            try index.remove(change.path)
            pruneEmptyParents(of: change.path)
        }
        for change in changes {
            guard let new = change.new else { continue }
            let target = data.pushing(change.path)
            if let stat = try? FileStat.of(target), stat.kind == .directory { rmdir(target.string) }
            var parent = change.path
            parent.removeLastComponent()
            clearFilesBlocking(parent)
            try writeIntoData(change.path, bytes: try blob(new.oid), mode: new.mode)
            _ = try index.add(change.path)
        }
        try index.write()
    }

    /// Whether the data directory holds exactly `side` at `path` (nil: nothing there).
    private func diskMatches(_ path: FilePath, _ side: ConflictSide?) -> Bool {
        let abs = data.pushing(path)
        guard let stat = try? FileStat.of(abs) else { return side == nil }
        guard let side else { return stat.kind == .directory }  // a directory is not a lost file
        if let entry = try? repo.index().entry(path), entry.oid == side.oid, entry.mode == side.mode,
           Self.statMatches(entry, stat) {
            return true
        }
        switch stat.kind {
        case .regular:
            guard (side.mode == 0o100755) == stat.isExecutable, side.mode != 0o120000,
                  let bytes = FileManager.default.contents(atPath: abs.string) else { return false }
            return Oid.hashing(Array(bytes)) == side.oid
        case .symlink:
            guard side.mode == 0o120000,
                  let target = try? FileManager.default.destinationOfSymbolicLink(atPath: abs.string) else { return false }
            return Oid.hashing(Array(target.utf8)) == side.oid
        default:
            return false
        }
    }

    /// A file or link standing where a directory must be made (the tree turned it into one).
    private func clearFilesBlocking(_ dir: FilePath) {
        var prefix = FilePath("")
        for component in dir.components {
            prefix.append(component)
            if let stat = try? FileStat.of(data.pushing(prefix)), stat.kind != .directory {
                unlink(data.pushing(prefix).string)
                return
            }
        }
    }

    private func pruneEmptyParents(of path: FilePath) {
        var dir = path
        dir.removeLastComponent()
        while !dir.isEmpty, rmdir(data.pushing(dir).string) == 0 {
            dir.removeLastComponent()
        }
    }
}
