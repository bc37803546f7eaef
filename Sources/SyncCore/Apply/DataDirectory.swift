import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// The data directory as the apply step sees it: what stands at a path, whether it holds a given
/// version, and writing one version in place. No store state: the workers of a big apply each use
/// it with a repository handle of their own.
struct DataDirectory: Sendable {
    let root: FilePath
    /// Each new file starts its way to the disk as soon as it is written, before its rename: for a
    /// small apply, whose files are each flushed at the end (`makeDurable`), so that the first
    /// `fsync` commits one journal transaction that holds both the blocks and the rename.
    var writebackAtOnce = false
    /// New paths are written without a look first (`placeChecked`): off when an apply resumes,
    /// where most of them hold the new version already (a photo would be written once more).
    var optimistic = true

    /// One path to write, with what the decision needs (read from the index and the unapplied list
    /// before the workers start: neither is touched by more than one thread).
    struct PlaceItem: Sendable {
        let change: TreeChange
        let entry: IndexEntry?
        /// A receive-only device's local edit at the path, kept already: replaced, not kept as a change.
        let replacing: Bool
        /// What the disk held when an earlier merge could not write the path (nil: not unapplied;
        /// .some(nil): nothing was there).
        let unappliedOld: ConflictSide??
    }

    /// What the path showed right after the new version landed.
    enum Landing: Sendable, Equatable {
        /// A regular file with the `WriteStamp` it was written with: these stat data stand for
        /// its bytes for as long as it keeps them.
        case stamped(FileStat)
        /// A regular file that does not show its stamp: written to since (or a file system that
        /// keeps coarser times): its stat data say nothing about its bytes.
        case unconfirmed
        /// A symbolic link (no stamp).
        case link
    }

    enum Placement: Sendable {
        case alreadyThere
        case obstacle(Obstacle)
        /// Changed on disk since the baseline: left as it is.
        case localChange
        /// Written; `displaced` is the temporary holding what a receive-only device had there.
        case written(displaced: FilePath?, landing: Landing)
        case failed(Errno)
    }

    /// What the check saw at a path whose stat data showed this device's version, with the coarse
    /// clock read just before that look (see `untouched`).
    struct Sighting {
        let stat: FileStat
        let clock: timespec
    }

    /// Whether `displaced` (the file a swap just took out of a path) is the very file `seen` saw,
    /// unwritten since: the same inode, mode, size and modification time, that time earlier than
    /// the clock read before the look (2 s earlier when the file system rounds times: FAT, exFAT).
    /// A write since sets the modification time from the kernel's clock, never earlier than that
    /// reading, so it shows; the change time cannot tell (the swap
    /// itself sets it). What this misses is what stat data miss for every tool that trusts them: a
    /// same-size write whose time is then set back to the very nanosecond, or one made while the
    /// wall clock was set back. The file is not read (the read-back was a sixth of an apply).
    static func untouched(_ displaced: FileStat, since seen: Sighting) -> Bool {
        displaced.kind == .regular && displaced.inode == seen.stat.inode && displaced.device == seen.stat.device
            && displaced.mode == seen.stat.mode && displaced.size == seen.stat.size
            && displaced.mtimeSeconds == seen.stat.mtimeSeconds && displaced.mtimeNanoseconds == seen.stat.mtimeNanoseconds
            && WriteStamp.modified(seen.stat, before: seen.clock)
    }

    /// Displaced files up to this size are removed after the slice's files have landed (`leftovers`),
    /// bigger ones at once (their room may be needed).
    static let removeLaterLimit: Int64 = 1 << 20

    /// An old file a new version displaced, at its temporary name, to be removed.
    struct Leftover: Sendable {
        let path: FilePath
        let bytes: Int64
    }

    /// Whether `item`'s path may take the new version (it holds the baseline, or nothing changed
    /// since an earlier failure), and if so writes it. The old file it replaces, when small, goes
    /// into `leftovers` for the caller to remove once every file has landed.
    func placeChecked(_ item: PlaceItem, repo: Repository, counter: inout UInt64, leftovers: inout [Leftover]) -> Placement {
        let path = item.change.path, new = item.change.new!
        // The common case first, from stat data alone: a modified path still holds the version
        // this device has (its index entry's stat data match). Then it is neither an obstacle
        // nor the new version already, and nothing is read (a file read and hashed per path was
        // a tenth of a 10k-file apply).
        var sighting: Sighting?
        var holdsBaseline = false
        if !item.replacing, let old = item.change.old {
            if !DirectoryMarker.isMarker(path), let entry = item.entry, entry.oid == old.oid, entry.mode == old.mode {
                let clock = WriteStamp.coarseNow()
                if let stat = (try? FileStat.of(root.pushing(path))) ?? nil, Store.statMatches(entry, stat) {
                    holdsBaseline = true
                    if stat.kind == .regular { sighting = Sighting(stat: stat, clock: clock) }
                }
            }
            if !holdsBaseline { holdsBaseline = diskMatches(path, old, entry: item.entry) }
        }
        // A new path (absent is what this device has): written at once, landing only where
        // nothing stands (`RENAME_NOREPLACE`). Something there (a file, a directory, a FIFO),
        // or anything failing, leaves no trace and the checks below decide, as for any path.
        // The common case then costs no look at the path beforehand: each was a search of its
        // directory (a tenth of the receiving side's time for 10k new files).
        let mayBeFree = !holdsBaseline && !item.replacing && item.change.old == nil && item.unappliedOld == nil
            && !DirectoryMarker.isMarker(path)
        if mayBeFree, optimistic, case .placed(let landing)? = try? place(new, at: path, repo: repo, counter: &counter, displace: false,
                                                               assumeFree: true, verify: { _ in .putBack }) {
            return .written(displaced: nil, landing: landing)
        }
        // A new path where nothing stands, nor anything but directories above it: no obstacle,
        // not the new version already, and absent is what this device has. One lstat.
        let newAndFree = mayBeFree && FileStat.isFree(root.pushing(path))
        if !holdsBaseline && !newAndFree {
            if diskMatches(path, new, entry: nil) { return .alreadyThere }
            if let obstacle = obstacle(at: path) { return .obstacle(obstacle) }
            let untouchedSinceFailure = item.unappliedOld.map { diskMatches(path, $0, entry: nil) } ?? false
            guard item.replacing || diskMatches(path, item.change.old, entry: item.entry) || untouchedSinceFailure else {
                return .localChange
            }
        }
        do {
            if item.replacing {
                switch try place(new, at: path, repo: repo, counter: &counter, displace: true, verify: nil) {
                case .displaced(let kept, let landing): return .written(displaced: kept, landing: landing)
                case .placed(let landing): return .written(displaced: nil, landing: landing)
                case .keptNewer, .occupied: return .written(displaced: nil, landing: .unconfirmed)  // (no check, so never)
                }
            }
            // What the check above saw may change before the new version lands (a program saving
            // the file right then): the swap itself says what it replaced. Its stat data say it
            // when the check saw the file by them; otherwise its bytes are read.
            let expected = [item.change.old] + (item.unappliedOld.map { [$0] } ?? [])
            var taken: Leftover?
            defer { if let taken { leftovers.append(taken) } }
            let outcome = try place(new, at: path, repo: repo, counter: &counter, displace: false, seen: sighting?.stat) { displaced in
                if let sighting, let stat = (try? FileStat.of(displaced)) ?? nil, Self.untouched(stat, since: sighting) {
                    guard stat.size <= Self.removeLaterLimit else { return .remove }
                    taken = Leftover(path: displaced, bytes: stat.size)
                    return .taken
                }
                return expected.contains { fileHolds(displaced, $0, entry: item.entry) } ? .remove : .putBack
            }
            switch outcome {
            case .keptNewer, .occupied: return .localChange
            case .placed(let landing), .displaced(_, let landing): return .written(displaced: nil, landing: landing)
            }
        } catch {
            return .failed(error)
        }
    }

    /// Makes the missing directories above these new paths, each at most once, before their files
    /// are written: the watcher's look into a directory made now finds it empty, where one made by
    /// the first file's write found that directory's files landing (all reported again as changes).
    /// A directory is made only where every existing one above it is a directory (never through a
    /// link); where that fails, `place` meets it again and reports it with the path.
    func makeParents(of paths: some Sequence<FilePath>) {
        var made = Set<FilePath>()
        for path in paths {
            let parent = path.removingLastComponent()
            guard !parent.isEmpty, made.insert(parent).inserted else { continue }
            var prefix = root
            var missing = false
            for component in parent.components {
                prefix.append(component)
                guard let stat = try? FileStat.of(prefix) else {
                    missing = true
                    break
                }
                guard stat.kind == .directory else { break }
            }
            if missing { try? Files.makeDirectories(root.pushing(parent)) }
        }
    }

    /// What stands at `path` that is not a regular file, link or directory this user can use; nil
    /// when nothing does (absent, or something syncable). Looks at the path only (a directory above
    /// it that is not a directory is `place`'s business).
    func obstacle(at path: FilePath) -> Obstacle? {
        let abs = root.pushing(path)
        let stat: FileStat?
        do { stat = try FileStat.of(abs) } catch {
            return Obstacle(path: path, what: "a directory above it that this user cannot enter (\(error))")
        }
        guard let stat else {
            // Absent, or a directory above it is no longer one: a FIFO (or the like) standing where
            // the directory was keeps out everything under it, as it keeps out the path itself.
            var prefix = FilePath("")
            for component in path.components.dropLast() {
                prefix.append(component)
                guard let above = (try? FileStat.of(root.pushing(prefix))) ?? nil else { return nil }
                if above.kind == .directory { continue }
                if above.kind == .symlink { return nil }  // a link there now: a real change
                if above.kind == .regular {
                    // a file there now: a real change, unless this user cannot read it
                    let readable = root.pushing(prefix).withPlatformString { access($0, R_OK) } == 0
                    return readable ? nil : Obstacle(path: path, what: "a file this user cannot read at \(prefix.display), where a directory was")
                }
                return Obstacle(path: path, what: "a \(above.kind) at \(prefix.display), where a directory was")
            }
            return nil
        }
        switch stat.kind {
        case .regular:
            guard abs.withPlatformString({ access($0, R_OK) }) != 0 else { return nil }
            return Obstacle(path: path, what: "a file this user cannot read (\(Errno(rawValue: errno)))")
        case .directory:
            guard abs.withPlatformString({ access($0, R_OK | X_OK) }) != 0 else { return nil }
            return Obstacle(path: path, what: "a directory this user cannot read (\(Errno(rawValue: errno)))")
        case .symlink:
            return nil
        default:
            return Obstacle(path: path, what: "a \(stat.kind)")
        }
    }

    /// Whether the data directory holds exactly `side` at `path` (nil: no file or link there).
    /// `entry` is the index's record of the path: when its stat data matches, the file is not read.
    func diskMatches(_ path: FilePath, _ side: ConflictSide?, entry: IndexEntry?) -> Bool {
        if DirectoryMarker.isMarker(path) {
            // A marker is never on disk: it matches when its directory is (or is not) there.
            let isDirectory = (try? FileStat.of(root.pushing(DirectoryMarker.directory(of: path))))??.kind == .directory
            return isDirectory == (side != nil)
        }
        return fileHolds(root.pushing(path), side, entry: entry)
    }

    /// Whether the file or link at the absolute path `abs` holds exactly `side` (nil: nothing there).
    func fileHolds(_ abs: FilePath, _ side: ConflictSide?, entry: IndexEntry?) -> Bool {
        guard let stat = try? FileStat.of(abs) else { return side == nil }
        guard let side else { return stat.kind == .directory }  // a directory is not a lost file
        if let entry, entry.oid == side.oid, entry.mode == side.mode, Store.statMatches(entry, stat) {
            return true
        }
        switch stat.kind {
        case .regular:
            guard (side.mode == EntryMode.executable) == stat.isExecutable, side.mode != EntryMode.link else { return false }
            if stat.size > 1 << 20 { return Oid.hashing(file: abs) == side.oid }
            guard let bytes = try? Files.read(abs) else { return false }
            return Oid.hashing(bytes) == side.oid
        case .symlink:
            guard side.mode == EntryMode.link, let target = try? Files.readLink(abs) else { return false }
            return Oid.hashing(target) == side.oid
        default:
            return false
        }
    }

    /// Writes one entry at `path` through a short-named temporary beside it, then `rename`.
    /// With `displace`, a file or link already at the path is swapped out atomically and left at the
    /// returned temporary name (for the caller to keep, then remove) instead of being dropped.
    @discardableResult
    func place(_ side: ConflictSide, at path: FilePath, repo: Repository, counter: inout UInt64, displace: Bool = false) throws(Errno) -> FilePath? {
        if case .displaced(let kept, _) = try place(side, at: path, repo: repo, counter: &counter, displace: displace, verify: nil) {
            return kept
        }
        return nil
    }

    /// Removes the file or link at `path`. With `expected`, the removal is checked by the move
    /// itself: the file is first renamed aside, and when what was moved is none of `expected` (it
    /// was written after the caller's check), it goes back (unless the path was written yet again)
    /// and false is returned. True when removed (or already gone).
    func remove(_ path: FilePath, expected: [ConflictSide?]?, entry: IndexEntry?, counter: inout UInt64) throws(Errno) -> Bool {
        let target = root.pushing(path)
        guard let expected else {
            try Files.remove(target)
            return true
        }
        guard let stat = try FileStat.of(target) else { return true }
        guard stat.isStorable else {
            try Files.remove(target)  // a directory left empty: Files.remove's own rules
            return true
        }
        let aside = AgentTemporary.path(in: target.removingLastComponent(), counter: &counter, landing: true)
        try Files.rename(target, to: aside)
        if expected.contains(where: { fileHolds(aside, $0, entry: entry) }) {
            try? Files.remove(aside)
            return true
        }
        do {
            try Files.renameNoReplace(aside, to: target)
        } catch where error == .fileExists {
            try? Files.remove(aside)  // written again since: that newest version stays
        }
        return false
    }

    /// What becomes of the file a checked swap took out of the path.
    enum Verdict {
        /// It was written after the check: it goes back, the new version does not land.
        case putBack
        /// It is what the check saw: removed now.
        case remove
        /// It is what the check saw, and the verifier took its temporary name to remove it later.
        case taken
    }

    /// `landing` (see `Landing`) in each case that placed the new version.
    enum PlaceOutcome {
        case placed(landing: Landing)
        /// `displace`: what stood at the path, now at this temporary name.
        case displaced(FilePath, landing: Landing)
        /// `verify` refused what the swap took out (written after the caller's check): it is back
        /// at the path, and the new version is not there.
        case keptNewer
        /// `assumeFree`: something stands at the path; nothing was written.
        case occupied
    }

    /// `place`, and with `verify` the replacement is checked by the swap itself: a file or link at
    /// the path is exchanged with the new version (`RENAME_EXCHANGE`), and when `verify` refuses
    /// what came out, it goes straight back; an empty path takes the new version only if it is
    /// still empty (`RENAME_NOREPLACE`). So bytes written between the caller's check and the swap
    /// are never replaced. `seen`: the regular file the caller just saw at the path (its own look
    /// spares two). `assumeFree`: the path is not looked at first; the new version lands only
    /// where nothing stands, else `occupied` (nothing left behind).
    func place(_ side: ConflictSide, at path: FilePath, repo: Repository, counter: inout UInt64, displace: Bool,
               seen: FileStat? = nil, assumeFree: Bool = false, verify: ((FilePath) -> Verdict)?) throws(Errno) -> PlaceOutcome {
        let target = root.pushing(path)
        let dir = target.removingLastComponent()
        // Never write through a link: a directory above the path that is now a symbolic link (not
        // committed yet) would take the file outside the data directory.
        var prefix = root
        var missing = false  // a directory above the path is not there yet (nor any below it)
        for component in path.components.dropLast() {
            prefix.append(component)
            guard let stat = try FileStat.of(prefix) else {
                missing = true
                break
            }
            if stat.kind != .directory { throw .fileExists }
        }
        if seen == nil, !assumeFree, let stat = try FileStat.of(target), stat.kind == .directory {
            // Its tracked files were removed above; what is left is not ours to delete.
            guard Files.removeDirectoryWithoutFiles(target) else { throw .directoryNotEmpty }
        }
        if missing { try Files.makeDirectories(dir) }  // (each one above was just seen to be a directory)
        let temp = AgentTemporary.path(in: dir, counter: &counter, landing: true)
        // A regular file gets a modification time no later write can give it: while the path
        // shows it, the bytes are the ones written here (the commit of this device's own writes,
        // read back by the watcher, then need not read them again).
        let stamp = side.mode == EntryMode.link ? nil : WriteStamp.next()
        func landed() -> Landing {
            guard let stamp else { return .link }
            guard let stat = (try? FileStat.of(target)) ?? nil, stat.kind == .regular, WriteStamp.holds(stamp, stat) else {
                return .unconfirmed
            }
            return .stamped(stat)
        }
        // A version whose object the store lacks (a power cut took it while a ref named it) is
        // told as such, not as the EIO a failed read becomes; looked at only when a write failed.
        do throws(Errno) {
            if side.mode == EntryMode.link {
                let bytes: [UInt8]
                do { bytes = try repo.blobData(side.oid) } catch { throw .ioError }
                try Files.createLink(temp, target: bytes)
            } else {
                // Streamed: a big file costs a fixed buffer, not its size.
                try Files.create(temp, executable: side.mode == EntryMode.executable, mtime: stamp, writeback: writebackAtOnce) { sink in
                    try repo.streamBlob(side.oid) { chunk in try sink.write(chunk) }
                }
            }
        } catch .ioError where !repo.hasObject(side.oid) {
            throw .noData
        }
        do {
            var old = seen
            if old == nil, !assumeFree { old = try FileStat.of(target) }
            var swapped = false
            if displace || verify != nil, let stat = old, stat.isStorable {
                do {
                    try Files.exchange(temp, target)
                    swapped = true
                } catch where error == .noSuchFileOrDirectory && seen != nil {
                    old = nil  // removed since the caller's look: as for an empty path
                } catch where error == .invalidArgument || error == .notSupported {
                    // A file system without RENAME_EXCHANGE: replace as usual (with `displace`,
                    // the bytes kept before the merge are what is kept).
                }
            }
            if swapped {
                guard let verify else { return .displaced(temp, landing: landed()) }
                switch verify(temp) {
                case .remove:
                    try? Files.remove(temp)
                    return .placed(landing: landed())
                case .taken:
                    return .placed(landing: landed())
                case .putBack:
                    // Written meanwhile: the newer bytes go back. (Written yet again between the
                    // two swaps: those came out now, and they are the newest.)
                    do {
                        try Files.exchange(temp, target)
                    } catch where error == .noSuchFileOrDirectory {
                        // Ours was removed meanwhile: the newer bytes take the path, unless yet
                        // another file came there since (the newest, which stays).
                        do { try Files.renameNoReplace(temp, to: target) } catch where error == .fileExists { try? Files.remove(temp) }
                        return .keptNewer
                    }
                    if fileHolds(temp, side, entry: nil) { try? Files.remove(temp) } else { try Files.rename(temp, to: target) }
                    return .keptNewer
                }
            }
            if verify != nil, old == nil {
                do {
                    try Files.renameNoReplace(temp, to: target)
                    return .placed(landing: landed())
                } catch where error == .fileExists {
                    try? Files.remove(temp)
                    return assumeFree ? .occupied : .keptNewer  // created meanwhile
                } catch where error == .invalidArgument || error == .notSupported {
                    // No RENAME_NOREPLACE here: replace as usual (what stands there was looked at,
                    // unless the caller assumed nothing did: then it is now).
                    if assumeFree, try FileStat.of(target) != nil {
                        try? Files.remove(temp)
                        return .occupied
                    }
                }
            }
            try Files.rename(temp, to: target)
        } catch {
            try? Files.remove(temp)
            throw error
        }
        return .placed(landing: landed())
    }
}
