import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// One version of a path in `main`'s history (SPEC "History").
public struct HistoryEntry: Codable, Sendable, Equatable {
    public enum Change: String, Codable, Sendable { case added, modified, deleted, renamed }
    public var commit: String
    public var device: String
    /// When the change was made on its device (the commit's author time), ISO 8601.
    public var time: String
    /// The blob (or link target) of this version; nil for a deletion.
    public var blob: String?
    public var change: Change
    /// The path this version had before a rename (`renamed`), exact bytes as UTF-8 text (lossy).
    public var from: String?
    /// The path this one was renamed to (a `deleted` that is a move away).
    public var to: String?
    /// The path of this version (it changes across renames), for display (see `FilePath.display`),
    /// and its exact bytes as hex.
    public var path: String
    public var pathBytes: String
    public var isLink: Bool

    public var filePath: FilePath { FilePath(bytes: ConflictRecord.bytes(fromHex: pathBytes)) }
}

/// What a path held at a restore point: every file and link under it (or the file itself).
public struct StoredVersion: Sendable {
    let entries: [FilePath: ConflictSide]
    /// Nothing was there.
    public var isEmpty: Bool { entries.isEmpty }
}

/// What restoring a path changes against `main`, path by path.
public struct RestoreChanges: Sendable {
    let changes: [TreeChange]
    public var isEmpty: Bool { changes.isEmpty }
    public var paths: [FilePath] { changes.map(\.path) }
}

/// What `restore` found: the commit whose state is put back and, per path under PATH, the entry.
public struct RestorePoint: Sendable {
    public let commit: ObjectID
    /// Why this commit (for messages): "the version before <commit>" or "main at <time>".
    public let why: String
}

extension Store {
    /// The versions of `path` in `main`, newest first: every commit that made `path` differ from
    /// all of its parents (so a version is credited to the device that made it, not to a merge),
    /// following renames the way `git log --follow` does: an addition whose blob another path lost
    /// in the same commit continues as that path's history.
    public func history(of path: FilePath, limit: Int? = nil) throws -> [HistoryEntry] {
        guard let head = try head() else { return [] }
        var current = path
        var entries: [HistoryEntry] = []
        try repo.walk(from: head) { id in
            let info = try repo.commit(id)
            let now = try fileEntry(current, tree: info.tree)
            let before = try info.parents.map { try fileEntry(current, tree: try repo.commit($0).tree) }
            guard before.isEmpty ? now != nil : !before.contains(where: { $0 == now }) else { return true }
            var entry = HistoryEntry(commit: id.hex, device: info.author.name, time: ISOTime.string(info.author.time),
                                     blob: now?.oid.hex, change: .modified, from: nil, to: nil,
                                     path: current.display, pathBytes: ConflictRecord.hex(current.bytes),
                                     isLink: now?.mode == EntryMode.link)
            if now == nil {
                entry.change = .deleted
                if let parent = info.parents.first, let was = before.first ?? nil,
                   let moved = try repo.diffTrees(try repo.commit(parent).tree, info.tree)
                    .first(where: { $0.old == nil && $0.new == was }) {
                    entry.to = moved.path.display
                }
            } else if before.allSatisfy({ $0 == nil }) {
                entry.change = .added
                if let parent = info.parents.first, let now,
                   let moved = try repo.diffTrees(try repo.commit(parent).tree, info.tree)
                    .first(where: { $0.new == nil && $0.old == now && $0.path != current }) {
                    entry.change = .renamed
                    entry.from = moved.path.display
                    current = moved.path  // older versions are that path's
                }
            }
            entries.append(entry)
            return limit.map { entries.count < $0 } ?? true
        }
        return entries
    }

    /// A file or link at `path` in `tree`; nil when absent or a directory.
    private func fileEntry(_ path: FilePath, tree: Oid) throws(GitError) -> ConflictSide? {
        guard let entry = try repo.entry(at: path, inTree: tree), entry.mode != EntryMode.tree else { return nil }
        return entry
    }

    /// Which commit's state `restore PATH` puts back.
    /// - `at` a commit id (full or abbreviated): that commit.
    /// - `at` an ISO 8601 time: `main` as this device had it then (the newest commit of `main`'s
    ///   first-parent chain made at or before that time).
    /// - no `at`: the state just before the newest change to PATH (anything under it, for a
    ///   directory), so a deleted file or directory comes back, and an edit is undone.
    public func restorePoint(for path: FilePath, at: String?) throws -> RestorePoint {
        guard let head = try head() else {
            throw StoreError(path: gitDir, message: "the store has no commits yet", hint: "nothing can be restored before the first change is committed")
        }
        if let at, let id = try repo.commit(named: at) {
            return RestorePoint(commit: id.id, why: "commit \(id.hex.prefix(12))")
        }
        if let at {
            guard let when = ISOTime.date(at) else {
                throw StoreError(path: path, message: "--at \(at) is neither a commit of the store nor an ISO 8601 time",
                                 hint: "give a commit from `syncagent history \(path.display)` or a time like 2026-11-20T10:00:00Z")
            }
            var found: Oid?
            try repo.walk(from: head, firstParentOnly: true) { id in
                if try repo.commit(id).committerTime <= Int64(when.timeIntervalSince1970) { found = id; return false }
                return true
            }
            guard let found else {
                throw StoreError(path: path, message: "the store has no commit from \(at) or earlier", hint: "`syncagent history \(path.display)` lists the versions there are")
            }
            return RestorePoint(commit: found.id, why: "main at \(at)")
        }
        // Deletions not committed yet (held by the deletion guard, or waiting for their spell to
        // end): `main` itself still has every file, so it is the version to put back.
        if try entries(under: path, in: head).keys.contains(where: { !isOnDisk($0) }) {
            return RestorePoint(commit: head.id, why: "main (its files deleted here and not committed)")
        }
        var found: RestorePoint?
        try repo.walk(from: head, firstParentOnly: true) { id in
            let info = try repo.commit(id)
            guard let parent = info.parents.first else { return false }
            let parentTree = try repo.commit(parent).tree
            if try repo.entry(at: path, inTree: info.tree) != repo.entry(at: path, inTree: parentTree) {
                found = RestorePoint(commit: parent.id, why: "the version before \(id.hex.prefix(12))")
                return false
            }
            return true
        }
        guard let found else {
            if try repo.entry(at: path, inTree: repo.commit(head).tree) == nil {
                throw StoreError(path: path, message: "it has no history in the store: it was never committed on this device or its peers",
                                 hint: "Check the path: it is relative to the data directory \(data.display) (`syncagent history DIR` lists what a directory held)")
            }
            throw StoreError(path: path, message: "it has no earlier version in the store (it is as it was first committed)",
                             hint: "`syncagent history \(path.display)` lists its versions")
        }
        return found
    }

    /// The bytes `main` holds at `path` (nil: no file or link there): what a program compares the
    /// data directory with to tell a change not yet committed.
    public func committedBytes(_ path: FilePath) throws -> [UInt8]? {
        guard let head = try head(),
              let entry = try repo.entry(at: path, inTree: try repo.commit(head).tree), entry.mode != EntryMode.tree else { return nil }
        return try repo.blobData(entry.oid)
    }

    /// Whether `peer`'s `main`, as last fetched, holds `path` as this device's `main` does (both
    /// without it counts too); nil when nothing was ever fetched from it. For a device seen
    /// through a hub, `peer` is `hubPeer(hub, device:)`.
    public func peerHolds(_ path: FilePath, sameAsMain peer: String) throws -> Bool? {
        guard let theirs = try repo.resolveReference(Self.trackingRef(peer)) else { return nil }
        let ours = try head().map { id throws in try repo.entry(at: path, inTree: try repo.commit(id).tree) } ?? nil
        let their = try repo.entry(at: path, inTree: try repo.commit(theirs).tree)
        return ours == their
    }

    /// The files and links under `path` (or `path` itself) in a commit, keyed by path.
    func entries(under path: FilePath, in commit: Oid) throws -> [FilePath: ConflictSide] {
        let tree = try repo.commit(commit).tree
        guard let top = try repo.entry(at: path, inTree: tree) else { return [:] }
        guard top.mode == EntryMode.tree else { return [path: top] }
        var out: [FilePath: ConflictSide] = [:]
        for file in try repo.treeFiles(top.oid) {
            out[FilePath(bytes: path.bytes + [UInt8(ascii: "/")] + file.path.bytes)] = ConflictSide(oid: file.oid, mode: file.mode)
        }
        return out
    }

    /// What `path` held at `commit`: the files under it, or the file itself. A file absent there
    /// under this name may have had another one then (it was renamed since): its version at that
    /// commit is then the newest of its history (`history`, which follows renames) that the commit
    /// contains, kept under today's name.
    public func version(of path: FilePath, at point: RestorePoint) throws -> StoredVersion {
        StoredVersion(entries: try version(of: path, at: point.commit.oid))
    }

    func version(of path: FilePath, at commit: Oid) throws -> [FilePath: ConflictSide] {
        let direct = try entries(under: path, in: commit)
        guard direct.isEmpty else { return direct }
        for entry in try history(of: path) {
            guard let id = Oid(hex: entry.commit) else { continue }
            let contained = try id == commit || repo.isDescendant(commit, of: id)
            guard contained else { continue }
            guard entry.blob != nil, let side = try repo.entry(at: entry.filePath, inTree: try repo.commit(id).tree) else { return [:] }
            return [path: side]
        }
        return [:]
    }

    /// What restoring `path` to `point` changes against `main`: every file under it that differs.
    public func restoreChanges(_ path: FilePath, to point: RestorePoint) throws -> RestoreChanges {
        RestoreChanges(changes: try restoreChanges(path, to: point.commit.oid))
    }

    /// Against `main`, and against the disk: a file `main` holds whose deletion was never committed
    /// (held, or waiting for its spell to end) is missing all the same, and comes back.
    func restoreChanges(_ path: FilePath, to point: Oid) throws -> [TreeChange] {
        let wanted = try version(of: path, at: point)
        let current = try head().map { try entries(under: path, in: $0) } ?? [:]
        return Set(wanted.keys).union(current.keys).sortedInBytes().compactMap { p in
            if let want = wanted[p], current[p] != nil, !isOnDisk(p) { return TreeChange(path: p, old: nil, new: want) }
            return wanted[p] == current[p] ? nil : TreeChange(path: p, old: current[p], new: wanted[p])
        }
    }

    /// Whether a path of a tree is in the data directory (a marker: its directory), or is one this
    /// device does not keep there (then it counts as present).
    func isOnDisk(_ path: FilePath) -> Bool {
        guard policy.materializes(path) else { return true }
        let target = DirectoryMarker.isMarker(path) ? DirectoryMarker.directory(of: path) : path
        return ((try? FileStat.of(data.pushing(target))) ?? nil) != nil
    }

    /// `restore --deletes`: every file (and empty directory) `commit` holds that is not in the data
    /// directory now, from `commit`'s version: what a deletion spell that began at `commit` took,
    /// whether its deletions were committed or held.
    /// Only what `paths` (the spell's deleted paths) held; a file `main` still holds comes back as
    /// `main` has it (a deletion never committed), one whose deletion left as `commit` had it.
    public func missingSince(_ commit: String, under paths: Set<FilePath>) throws -> RestoreChanges {
        guard let id = Oid(hex: commit) else {
            throw StoreError(path: gitDir, message: "\(commit) is no commit id", hint: "this is a bug; `syncagent restore DIR --at TIME` brings a directory back as it was")
        }
        let head = try head()
        var changes: [FilePath: TreeChange] = [:]
        for path in paths {
            for (file, side) in try entries(under: path, in: id) where !isOnDisk(file) {
                let now = try head.map { try entries(under: file, in: $0)[file] } ?? nil
                changes[file] = TreeChange(path: file, old: nil, new: now ?? side)
            }
        }
        return RestoreChanges(changes: changes.values.sortedInBytes { $0.path })
    }

    /// Writes these restored versions into the data directory like a merge would (a file edited
    /// since `main` is left alone and reported), then puts the index back at `main`'s entries so
    /// the caller's commit of these paths records them as a change. Returns what the apply did.
    public func writeRestored(_ restore: RestoreChanges) throws -> ApplyReport {
        try writeRestored(restore.changes)
    }

    func writeRestored(_ changes: [TreeChange]) throws -> ApplyReport {
        let report = try apply(changes)
        let index = try liveIndex()
        let headTree = try head().map { try repo.commit($0).tree }
        for change in changes {
            if let old = change.old { try index.add(change.path, blob: old.oid, mode: old.mode) }
            else if let headTree, let held = try repo.entry(at: change.path, inTree: headTree), held.mode != EntryMode.tree {
                // `main` still holds it (its deletion was never committed): if the write failed,
                // the file is still gone, and its deletion is judged again by the guard.
                try index.add(change.path, blob: held.oid, mode: held.mode)
            } else { try index.remove(change.path) }
        }
        try saveIndex(index)
        return report
    }

    /// Writes a version out of the store to `target` (outside the data directory, or anywhere):
    /// a file, a link, or a directory tree for a directory. Never overwrites an existing path.
    public func export(_ version: StoredVersion, root: FilePath, to target: FilePath) throws -> Int {
        try export(version.entries, root: root, to: target)
    }

    func export(_ entries: [FilePath: ConflictSide], root: FilePath, to target: FilePath) throws -> Int {
        var written = 0
        for (path, side) in entries.sortedInBytes(by: { $0.key }) {
            var dest = target
            if path != root {
                let rel = Array(path.bytes.dropFirst(root.bytes.count + 1))
                dest = FilePath(bytes: target.bytes + [UInt8(ascii: "/")] + rel)
                try Files.makeDirectories(dest.removingLastComponent())
            }
            if DirectoryMarker.isMarker(path) { continue }  // an empty directory: made above, no file
            if try FileStat.of(dest) != nil {
                throw StoreError(path: dest, message: "\(dest.display) already exists", hint: "choose a --to path that does not exist yet; nothing was overwritten")
            }
            if side.mode == EntryMode.link {
                try Files.createLink(dest, target: repo.blobData(side.oid))
            } else {
                try Files.create(dest, executable: side.mode == EntryMode.executable) { sink in
                    try repo.streamBlob(side.oid) { try sink.write($0) }
                }
            }
            written += 1
        }
        return written
    }
}
