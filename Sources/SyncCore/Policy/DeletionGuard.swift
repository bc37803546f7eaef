import FileSystem
internal import Git
import SystemPackage

/// Why deletions are held instead of committed (SPEC "Safety holds"): an accident such as an
/// unmounted disk or an emptied directory must never become deletions on every device.
public enum DeletionHold: Sendable, Equatable {
    case rootMissing(FilePath)
    case rootEmpty(FilePath, tracked: Int)
    case massDelete(deleting: Int, tracked: Int, percent: Int)

    public var message: String {
        switch self {
        case .rootMissing(let root):
            return "the data directory \(root.display) is gone (deleted, moved or unmounted); nothing is committed or synced until it is back. "
                + "If it is gone for good, recreate it (empty) and confirm the deletions with `syncagent send --deletes`"
        case .rootEmpty(let root, let tracked):
            return "the data directory \(root.display) is suddenly empty while the store holds \(tracked) files; the deletions are held. "
                + "If you meant to delete everything, confirm with `syncagent send --deletes`; otherwise put the files back"
        case .massDelete(let deleting, let tracked, let percent):
            return "\(deleting) of \(tracked) tracked files were deleted at once (more than \(percent)%); the deletions are held. "
                + "If you meant it, confirm with `syncagent send --deletes`; otherwise restore the files (they are in the store)"
        }
    }
}

/// The pure rule: given a batch's deletions, should they wait for confirmation?
public struct DeletionGuard: Sendable {
    public var settings: SafetySettings
    public init(settings: SafetySettings) { self.settings = settings }

    /// - Parameters:
    ///   - deleting: tracked files this batch (with the ones already held) deletes.
    ///   - tracked: tracked files before the batch.
    ///   - rootIsEmpty: the data directory holds nothing at all.
    public func check(root: FilePath, deleting: Int, tracked: Int, rootIsEmpty: Bool) -> DeletionHold? {
        guard deleting > 0, tracked > 0 else { return nil }
        if rootIsEmpty && deleting >= tracked { return .rootEmpty(root, tracked: tracked) }
        if deleting >= settings.minDeleteFiles && deleting * 100 > tracked * settings.maxDeletePercent {
            return .massDelete(deleting: deleting, tracked: tracked, percent: settings.maxDeletePercent)
        }
        return nil
    }
}

extension Store {
    /// Of these changed paths, the ones that are gone from disk, and how many tracked files they
    /// take with them (a deleted directory counts its files). Costs the paths and their entries.
    public func deletions(among paths: Set<FilePath>) throws -> (paths: Set<FilePath>, files: Int) {
        let index = try liveIndex()
        let unapplied = loadUnapplied()  // a merge could not write these: their absence is no deletion
        var gone: Set<FilePath> = []
        var files: Set<FilePath> = []  // a deleted directory and its files arrive as separate paths
        for path in paths where !path.isEmpty {
            // The index first (memory): a path it does not track is no deletion, whatever the disk
            // says, and a start-up full of new files costs no stat here.
            var tracked = index.entries(under: path).map(\.path).filter { unapplied[$0] == nil }
            if index.entry(path) != nil, unapplied[path] == nil { tracked.append(path) }
            // Paths this device does not keep on disk, and deletions the rules hold anyway, are not
            // deletions this batch would commit.
            tracked.removeAll { !policy.materializes($0) || policy.holdReason($0, size: nil) != nil }
            guard !tracked.isEmpty else { continue }
            // Only what is surely gone: a path this user cannot look at is an obstacle, not a deletion.
            let absent: Bool
            do { absent = try FileStat.of(data.pushing(path)) == nil } catch { absent = false }
            guard absent else { continue }
            gone.insert(path)
            files.formUnion(tracked)
        }
        return (gone, files.count)
    }

    /// How many files the index tracks.
    public func trackedCount() throws -> Int {
        let index = try liveIndex()
        guard !policy.rules.isEmpty else { return index.count }
        return index.entries().filter { policy.materializes($0.path) }.count
    }
}
