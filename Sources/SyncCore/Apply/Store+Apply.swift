import Platform
import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import Synchronization
import SystemPackage

/// What writing a merge result into the data directory did, path by path.
public struct ApplyReport: Sendable {
    public var written = 0
    public var removed = 0
    /// The paths written into or removed from the data directory, in order: the first
    /// `touchedKept` of them (the `received` event names 100; a small apply flushes each one), not
    /// all 100k of a first sync (6 MB held to the end of the merge). `touchedCount` counts them all.
    public var touched: [FilePath] = []
    public var touchedCount = 0
    public static let touchedKept = 512

    mutating func touch(_ path: FilePath) {
        touchedCount += 1
        if touched.count < Self.touchedKept { touched.append(path) }
    }
    /// A receive-only device's local edits that incoming changes replaced (their bytes are kept in
    /// `refs/syncagent/kept`, in commit `keptCommit`).
    public var replacedLocal: [FilePath] = []
    public var keptCommit: ObjectID?
    /// Paths that changed on disk after the plan's baseline: left exactly as they are; the caller
    /// commits them as local changes (then they meet the peer's version like any other change).
    public var localChanges: [FilePath] = []
    /// Local changes the merge took in (each a conflict with the peer's version).
    public var keptLocal: [FilePath] = []
    /// Paths this device could not write; the rest was applied. They are retried, and never taken
    /// for deletions meanwhile.
    public var failures: [ApplyFailure] = []
    public init() {}
}

/// One path the data directory could not take, and what to do about it.
public struct ApplyFailure: Error, Sendable, CustomStringConvertible {
    public let path: FilePath
    public let errno: Errno
    /// Something syncagent does not sync (a FIFO, a file it cannot read...) sitting at the path.
    public var obstacle: Obstacle?
    public init(path: FilePath, errno: Errno, obstacle: Obstacle? = nil) {
        self.path = path
        self.errno = errno
        self.obstacle = obstacle
    }
    public var description: String {
        // An empty directory is a marker in the store, a name the user never made: the directory is named.
        let path = Store.shown(self.path)
        if let obstacle {
            return "cannot write \(path.display) into the data directory: \(obstacle.what) is in the way. syncagent never removes it; "
                + "move it away and the synced version lands by itself. The rest is synced."
        }
        let what: String
        switch errno {
        case .fileNameTooLong: what = "the name is too long for this file system; rename it on the device that made it"
        case .permissionDenied, .notPermitted: what = "permission denied; fix the permissions of its directory"
        case .readOnlyFileSystem: what = "the file system is read-only; remount it read-write"
        case .noSpace: what = "no space left on the disk that holds the data directory; free some space"
        case .fileExists, .notDirectory: what = "a file is where a directory must be; move it away"
        case .directoryNotEmpty, .isDirectory: what = "a directory with files is where a file must be; move it away"
        case .resourceTemporarilyUnavailable: what = "it could not be written at the last try"
        case .noData: what = "the store lacks this version's object (a power cut took it while a ref named it); it is copied again from a peer or hub on this machine that has it, (`git fsck` on the store says what else is missing)"
        default: what = "\(errno)"
        }
        return "cannot write \(path.display) into the data directory: \(what). The rest is synced; it is retried."
    }
}

/// Something at a path of the data directory that syncagent does not sync and never removes: a
/// FIFO, a socket, a device node, a file this user cannot read, or a directory above the path it
/// cannot enter. Its presence is never a deletion of a tracked path; a version that cannot be
/// written because of it waits in the unapplied list until it goes away.
public struct Obstacle: Sendable, Equatable {
    public let path: FilePath
    /// What it is, for messages: "a FIFO", "a file this user cannot read (permission denied)".
    public let what: String
}

extension Store {
    /// The data directory's side of applying (checks and writes that need no store state).
    var disk: DataDirectory {
        var disk = DataDirectory(root: data)
        disk.optimistic = !resumingApply
        return disk
    }

    func obstacle(at path: FilePath) -> Obstacle? { disk.obstacle(at: path) }

    func diskMatches(_ path: FilePath, _ side: ConflictSide?, entry: IndexEntry?) -> Bool {
        disk.diskMatches(path, side, entry: entry)
    }

    /// Applying this many paths at a time bounds what is held between the writes and their record.
    static let applySlice = 2048

    /// Checks and writes each item's path, on every core (at most 4 workers) when there are many, each
    /// worker with a repository handle of its own. A path is checked right before it is written.
    /// The small old files the new versions displaced are left at temporary names in `leftovers`
    /// (`removeLeftovers` removes them once every file has landed).
    func placeAll(_ items: [DataDirectory.PlaceItem], leftovers: inout [DataDirectory.Leftover]) -> [DataDirectory.Placement] {
        // One worker more than cores: a worker waiting in the kernel (the journal, a directory's
        // lock) leaves its core to another (0.55 s -> 0.52 s for 10k files on two cores).
        let workers = items.count >= 64 ? max(1, min(4, ProcessInfo.processInfo.activeProcessorCount + 1)) : 1
        let disk = self.disk
        guard workers > 1 else {
            var disk = disk
            disk.writebackAtOnce = true  // few files: flushed one by one at the end (mostly)
            var counter: UInt64 = 0
            return items.map { disk.placeChecked($0, repo: repo, counter: &counter, leftovers: &leftovers) }
        }
        let gitDir = self.gitDir
        let results = Mutex<([DataDirectory.Placement?], [DataDirectory.Leftover])>((Array(repeating: nil, count: items.count), []))
        // Contiguous runs of the sorted paths (workers seldom meet in one directory), taken in turn
        // by whichever worker is free: one slow run does not leave the other cores idle at the end.
        let run = max(32, items.count / (workers * 8))
        let nextRun = Atomic<Int>(0)
        inParallel(workers: workers) { worker in
            var counter = UInt64(worker) << 40  // temporary names never meet another worker's
            guard let repo = try? Repository.openForReading(gitDir: gitDir) else { return }  // its paths: .failed(.ioError)
            var mine: [(Int, DataDirectory.Placement)] = []
            var displaced: [DataDirectory.Leftover] = []
            while true {
                let start = nextRun.add(run, ordering: .relaxed).oldValue
                guard start < items.count else { break }
                for i in start..<min(start + run, items.count) {
                    mine.append((i, disk.placeChecked(items[i], repo: repo, counter: &counter, leftovers: &displaced)))
                }
            }
            results.withLock { all in
                for (i, placement) in mine { all.0[i] = placement }
                all.1 += displaced
            }
        }
        return results.withLock { all in
            leftovers += all.1
            return all.0.map { $0 ?? .failed(.ioError) }
        }
    }

    /// Removes the displaced old files `placeAll` left, on every core when there are many.
    func removeLeftovers(_ leftovers: [DataDirectory.Leftover]) {
        let workers = leftovers.count >= 256 ? max(1, min(4, ProcessInfo.processInfo.activeProcessorCount)) : 1
        inParallel(workers: workers) { worker in
            for i in (leftovers.count * worker / workers)..<(leftovers.count * (worker + 1) / workers) {
                try? Files.remove(leftovers[i].path)
            }
        }
    }

    /// Leftovers holding more than this are removed after the slice that made them, not at the end.
    static let leftoverBytes: Int64 = 64 << 20

    /// Moves the data directory along `changes` (from the tree it holds to a new tree), path by path.
    /// Each path is checked against the baseline right before it is touched: a file that changed
    /// since is left as it is (reported in `localChanges`). A path that cannot be written does not
    /// stop the others (reported in `failures`, remembered, retried by `retryUnapplied`). The index
    /// follows the new tree; what was written is flushed at the end (`makeDurable`).
    func apply(_ changes: [TreeChange]) throws -> ApplyReport {
        try apply(total: changes.count) { body in try body(changes) }
    }

    /// The same, for changes `feed` hands over in chunks (a walk of a tree, never held whole: a
    /// first sync's 100k paths were 14 MB of the agent's peak). Each chunk is written before the
    /// next is read; the index is saved and the data flushed once, at the end. Only for changes
    /// that remove nothing (removals must come deepest first over the whole list).
    func apply(total: Int, feed: (_ body: ([TreeChange]) throws -> Void) throws -> Void) throws -> ApplyReport {
        var report = ApplyReport()
        guard total > 0 else { return report }
        let index = try liveIndex()
        // A receive-only device: an incoming change takes a locally edited path; the local bytes
        // go into the store first.
        var replace: Set<FilePath> = []
        var keptSides: [FilePath: ConflictSide] = [:]
        var unapplied = loadUnapplied()
        var done = 0
        var markerPaths: [FilePath] = []
        var removalCounter: UInt64 = 1 << 60  // temporary names apart from the writers'
        // Old files the new versions displaced: removed once every file has landed (and if this
        // throws; a killed agent's are removed at its next start).
        var leftovers: [DataDirectory.Leftover] = []
        var leftoverBytes: Int64 = 0
        defer { removeLeftovers(leftovers) }
        try feed { chunk in
            var changes = chunk
            if !policy.rules.isEmpty {
                // Paths this device does not keep on disk: the index (and so `main`) follows the merge,
                // the data directory is not touched.
                for change in changes where !policy.materializes(change.path) {
                    if let new = change.new { try index.add(change.path, blob: new.oid, mode: new.mode) }
                    else { try index.remove(change.path) }
                }
                changes = changes.filter { policy.materializes($0.path) }
            }
            /// A replaced path must still hold what was kept; bytes written since are kept too.
            func keepAgainIfChanged(_ path: FilePath) throws {
                guard replace.contains(path), (try? diskSide(path)) ?? nil != keptSides[path] else { return }
                let again = try keepLocalVersions([path], why: "local edits replaced by incoming changes")
                if let side = again.kept[path] { keptSides[path] = side }
                report.keptCommit = again.commit?.id ?? report.keptCommit
            }
            /// The local file an incoming version displaced (now at a temporary name): its bytes are kept
            /// as `path`'s unless they are what was kept already; then the temporary goes.
            func keepDisplaced(_ temp: FilePath, as path: FilePath) {
                if let stat = try? FileStat.of(temp), stat.isStorable {
                    var blob: Oid?
                    if stat.kind == .symlink {
                        blob = (try? Files.readLink(temp)).flatMap { try? repo.createBlob($0) }
                    } else if case .written(let id) = try? repo.writeBlob(fromFile: temp) {
                        blob = id  // streamed when big; nothing else writes to the temporary
                    }
                    if let blob {
                        let side = ConflictSide(oid: blob, mode: Self.gitMode(stat))
                        if side != keptSides[path] {
                            let kept = ConflictSide(oid: blob, mode: side.mode)
                            report.keptCommit = ((try? keep([(path, kept)], why: "local edits replaced by incoming changes")) ?? nil)?.id ?? report.keptCommit
                            keptSides[path] = kept
                        }
                    }
                }
                try? Files.remove(temp)
            }
            if policy.mode == .receiveOnly {
                let edited = changes.filter { change in
                    !diskMatches(change.path, change.old, entry: index.entry(change.path)) && !diskMatches(change.path, change.new, entry: nil)
                }.map(\.path)
                if !edited.isEmpty {
                    let saved = try keepLocalVersions(edited, why: "local edits replaced by incoming changes")
                    report.keptCommit = saved.commit?.id ?? report.keptCommit
                    keptSides.merge(saved.kept) { $1 }
                    report.replacedLocal += edited
                    replace.formUnion(edited)
                    var held = loadHeld()
                    for path in edited { held[path] = nil }
                    saveHeld(held)
                }
            }
            /// Carries out what the plan says one path's outcome means (`ApplyPlan.Step`).
            func carryOut(_ step: ApplyPlan.Step, _ change: TreeChange, keeping: Set<FilePath>) throws {
                let path = change.path
                if let displaced = step.keepDisplaced { keepDisplaced(displaced, as: path) }
                switch step.index {
                case .stage(let landing): try stage(index, path, change.new!, landing: landing)
                case .add: try index.add(path, blob: change.new!.oid, mode: change.new!.mode)
                case .remove: try index.remove(path)
                }
                switch step.unapplied {
                case .clear: unapplied[path] = nil
                case .keepOrAdd(let baseline): if unapplied[path] == nil { unapplied[path] = baseline }
                case .unchanged: break
                }
                switch step.reported {
                case .nothing: break
                case .written:
                    report.written += 1
                    report.touch(path)
                case .removed:
                    report.removed += 1
                    report.touch(path)
                case .localChange: report.localChanges.append(path)
                case .failure(let errno, let obstacle): report.failures.append(ApplyFailure(path: path, errno: errno, obstacle: obstacle))
                }
                if step.pruneParents { pruneEmptyParents(of: path, keeping: keeping) }
            }
            // Directories (their markers) are made or removed between the removals and the additions
            // of files; directories that keep a marker are never pruned as empty.
            // (The list is not copied: at 100k paths each copy of it was 8 MB of the peak.)
            let order = ApplyPlan.order(changes)
            markerPaths += order.markers.map(\.path)
            let keptDirectories = Set(order.markers.filter { $0.new != nil }.map { DirectoryMarker.directory(of: $0.path) })
            for change in order.removals {
                let entry = index.entry(change.path)
                let check = ApplyPlan.removal(
                    obstacle: obstacle(at: change.path) != nil, replacing: replace.contains(change.path),
                    diskHoldsOldOrNothing: diskMatches(change.path, change.old, entry: entry) || diskMatches(change.path, nil, entry: nil))
                var result: ApplyPlan.Removed?
                if check == .remove {
                    try keepAgainIfChanged(change.path)
                    do throws(Errno) {
                        let verify = !replace.contains(change.path)
                        let gone = try disk.remove(change.path, expected: verify ? [change.old] : nil, entry: entry, counter: &removalCounter)
                        result = gone ? .removed : .changedMeanwhile
                    } catch {
                        result = .failed(error)
                    }
                }
                try carryOut(ApplyPlan.afterRemoval(check, result: result, old: change.old), change, keeping: keptDirectories)
            }
            try applyDirectories(order.markers, index: index, unapplied: &unapplied, report: &report, keeping: keptDirectories)
            let additions = order.additions
            // Written in slices, each on every core; what each path came to is recorded in order.
            let before = done
            // Slices of a twentieth of a big merge at least: progress moves in steps a person sees.
            let sliceSize = max(64, min(Self.applySlice, total / 20))
            for start in stride(from: 0, to: additions.count, by: sliceSize) {
                let slice = additions[start..<min(start + sliceSize, additions.count)].map { changes[$0] }
                let items = slice.map { change in
                    DataDirectory.PlaceItem(change: change, entry: index.entry(change.path), replacing: replace.contains(change.path),
                              unappliedOld: unapplied[change.path].map { $0 == Self.absent ? nil : $0 })
                }
                disk.makeParents(of: items.lazy.filter { $0.change.old == nil && !$0.replacing }.map(\.change.path))
                let held = leftovers.count
                let outcomes = placeAll(items, leftovers: &leftovers)
                leftoverBytes += leftovers[held...].reduce(0) { $0 + $1.bytes }
                if leftoverBytes > Self.leftoverBytes {  // the disk's room comes before speed
                    removeLeftovers(leftovers)
                    leftovers.removeAll()
                    leftoverBytes = 0
                }
                for (item, outcome) in zip(items, outcomes) {
                    try carryOut(ApplyPlan.afterPlacing(outcome, old: item.change.old), item.change, keeping: keptDirectories)
                }
                done += slice.count
                if total >= Self.progressFrom { onProgress?(Self.mergeTask, done, total) }
            }
            done = before + chunk.count
        }
        try saveIndex(index)
        saveUnapplied(unapplied)
        makeDurable(report.touched + markerPaths, count: report.touchedCount + markerPaths.count)
        return report
    }

    /// Writes all of `tree` into a data directory that holds nothing merged yet (a first sync, or
    /// one a kill interrupted), walking the tree in chunks of `firstSyncChunk` paths instead of
    /// holding its list; `total` is the number of paths, from an earlier walk.
    func applyWhole(_ tree: Oid, total: Int) throws -> ApplyReport {
        try apply(total: total) { body in
            var chunk: [TreeChange] = []
            chunk.reserveCapacity(firstSyncChunk)
            try repo.walkDiff(nil, tree) { change in
                chunk.append(change)
                if chunk.count == firstSyncChunk {
                    try body(chunk)
                    chunk.removeAll(keepingCapacity: true)
                }
            }
            if !chunk.isEmpty { try body(chunk) }
        }
    }

    /// What an apply wrote, made durable: for a small one an `fsync` per regular file and per
    /// directory along the paths (new names, removals, pruned parents); a big one, or one whose
    /// flush fails, pays one `syncfs` of the data directory's file system.
    private func makeDurable(_ paths: [FilePath], count: Int) {
        if count <= Repository.writeLogLimit {
            var files: [FilePath] = []
            var directories = Set<FilePath>()
            for path in paths {
                let abs = data.pushing(path)
                if let stat = (try? FileStat.of(abs)) ?? nil, stat.kind == .regular { files.append(abs) }
                var up = path.removingLastComponent()
                while !up.isEmpty {
                    directories.insert(data.pushing(up))
                    up = up.removingLastComponent()
                }
                directories.insert(data)
            }
            if Durability.flushFiles(files, andDirectories: Array(directories)) { return }
        }
        Durability.flushFileSystem(containing: data)
    }

    /// Makes and removes the directories whose markers these changes add and remove. A directory
    /// that still holds something (not synced, or not ours) is left; one that cannot be made (a
    /// file or an obstacle is there) waits like any unwritten path.
    private func applyDirectories(_ markers: [TreeChange], index: Index, unapplied: inout [FilePath: ConflictSide],
                                  report: inout ApplyReport, keeping: Set<FilePath>) throws {
        for change in markers where change.new == nil {
            let dir = DirectoryMarker.directory(of: change.path)
            try index.remove(change.path)
            unapplied[change.path] = nil
            guard !keeping.contains(dir) else { continue }
            if (try? FileStat.of(data.pushing(dir)))??.kind == .directory, Files.removeEmptyDirectory(data.pushing(dir)) {
                report.removed += 1
                report.touch(dir)
                pruneEmptyParents(of: dir, keeping: keeping)
            }
        }
        for change in markers.sortedInBytes(by: { $0.path }) {
            guard let new = change.new else { continue }
            let dir = DirectoryMarker.directory(of: change.path)
            do {
                var prefix = data
                for component in dir.components {
                    prefix.append(component)
                    if let stat = try FileStat.of(prefix), stat.kind != .directory { throw Errno.fileExists }
                }
                if try FileStat.of(data.pushing(dir)) == nil {
                    try Files.makeDirectories(data.pushing(dir))
                    report.written += 1
                    report.touch(dir)
                }
                unapplied[change.path] = nil
            } catch {
                let errno = error as? Errno ?? .ioError
                report.failures.append(ApplyFailure(path: dir, errno: errno, obstacle: obstacle(at: dir)))
                if unapplied[change.path] == nil { unapplied[change.path] = Self.absent }
            }
            try index.add(change.path, blob: new.oid, mode: new.mode)
        }
    }

    /// Tries again the paths an earlier merge could not write. Returns what happened.
    public func retryUnapplied() throws -> ApplyReport {
        let unapplied = loadUnapplied()
        guard !unapplied.isEmpty, let head = try head() else { return ApplyReport() }
        let tree = try repo.commit(head).tree
        var changes: [TreeChange] = []
        for (path, old) in unapplied {
            let target = try repo.entry(at: path, inTree: tree)
            let wanted = target?.mode == EntryMode.tree ? nil : target
            let before: ConflictSide? = old == Self.absent ? nil : old
            changes.append(TreeChange(path: path, old: before, new: wanted))
        }
        return try apply(changes)
    }

    /// Paths an earlier merge could not write, as the user knows them: an empty directory's marker
    /// is the directory (as `ApplyFailure.path` names it).
    public var unappliedPaths: [FilePath] { Array(Set(loadUnapplied().keys.map(Self.shown))) }

    /// The path the user knows: a `DirectoryMarker` is its directory.
    static func shown(_ path: FilePath) -> FilePath {
        DirectoryMarker.isMarker(path) ? DirectoryMarker.directory(of: path) : path
    }

    /// Whether any path waits to be written (no list made).
    public var hasUnappliedPaths: Bool { !loadUnapplied().isEmpty }

    /// The paths the data directory does not hold as the store does because they could not be
    /// written, each with what stands in the way when that is known (for `status` while stopped,
    /// and `conflicts`). Looks at each path on disk.
    public func stuckPaths() -> [ApplyFailure] {
        Set(loadUnapplied().keys.map(Self.shown)).sortedInBytes().map { path in
            if let obstacle = obstacle(at: path) { return ApplyFailure(path: path, errno: .fileExists, obstacle: obstacle) }
            return ApplyFailure(path: path, errno: .resourceTemporarilyUnavailable)
        }
    }

    /// Stages `side` at `path` with the stat data of the file now there. With a `landing`: the
    /// stat data the file had right after the apply wrote it with a `WriteStamp` (marked as such:
    /// `Index.isStamped`; a write since then shows as other stat data), or none when the stamp did
    /// not show (what is there may be a write made since: the next look reads it).
    private func stage(_ index: Index, _ path: FilePath, _ side: ConflictSide, landing: DataDirectory.Landing = .link) throws(GitError) {
        switch landing {
        case .stamped(let stat) where Self.gitMode(stat) == side.mode:
            return try index.add(path, blob: side.oid, mode: side.mode, stat: IndexStat(stat), stamped: true)
        case .stamped, .unconfirmed:  // (a stamped file whose mode is not the one asked for, too)
            return try index.add(path, blob: side.oid, mode: side.mode)
        case .link:
            break
        }
        if let st = try? FileStat.of(data.pushing(path)) {
            try index.add(path, blob: side.oid, mode: side.mode, stat: IndexStat(st))
        } else {
            try index.add(path, blob: side.oid, mode: side.mode)
        }
    }

    func pruneEmptyParents(of path: FilePath, keeping: Set<FilePath> = []) {
        var dir = path
        dir.removeLastComponent()
        while !dir.isEmpty, !keeping.contains(dir), Files.removeEmptyDirectory(data.pushing(dir)) {
            dir.removeLastComponent()
        }
    }

    // MARK: the apply journal (<store>/syncagent/applying): "<target commit> <expected head|->"

    private var journalFile: FilePath { gitDir.appending("syncagent").appending("applying") }

    /// Notes, before the data directory is touched, which commit `main` moves to once it is written,
    /// so a killed agent finishes the job at its next start instead of taking half-written files
    /// for local changes.
    func beginApply(target: Oid, expected: Oid?, peer: String) {
        try? Files.makeDirectories(journalFile.removingLastComponent())
        try? Files.remove(journalFile)
        try? Files.create(journalFile, bytes: Array("\(target.hex) \(expected?.hex ?? "-") \(peer)\n".utf8), executable: false)
    }

    func endApply() { try? Files.remove(journalFile) }

    /// At start-up: finishes a merge a killed agent was writing into the data directory (each path
    /// checked as usual), then moves `main` to it. Returns what it wrote, nil when there was nothing.
    public func finishInterruptedApply() throws -> ApplyReport? {
        guard let bytes = try? Files.read(journalFile) else { return nil }
        defer { endApply() }
        resumingApply = true
        defer { resumingApply = false }
        let parts = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard parts.count == 2 || parts.count == 3, let target = Oid(hex: parts[0]), repo.hasObject(target) else { return nil }
        let expected = Oid(hex: parts[1])
        let peer = parts.count == 3 ? parts[2] : "a peer"
        let head = try head()
        guard head == expected, head != target else { return nil }
        let baseTree = try head.map { id throws in try repo.commit(id).tree }
        let targetTree = try repo.commit(target).tree
        var report: ApplyReport
        if baseTree == nil {  // a first sync: walked, as `fastForward` does
            report = try Libgit2.withoutCachingTrees {
                var total = 0
                try repo.walkDiff(nil, targetTree) { _ in total += 1 }
                return try applyWhole(targetTree, total: total)
            }
        } else {
            report = try apply(try repo.diffTrees(baseTree, targetTree))
        }
        guard !report.localChanges.isEmpty else {
            try moveRef(Store.mainRef, to: target, expected: head, message: "syncagent: finish an interrupted merge")
            return report
        }
        // Files that changed while the merge was being written (before the kill, or since): kept,
        // each a conflict with the merge's version, as the merge itself would have recorded them.
        let ourBook = try ConflictBook.load(repo)
        var book = ourBook
        var records: [ConflictRecord] = []
        _ = try commitKeptLocal(&report, target: targetTree, baseTree: baseTree, parents: [target], expected: head,
                                peer: peer, theirTip: target, book: &book, records: &records,
                                now: Int64(Date().timeIntervalSince1970),
                                message: "\(device): finish an interrupted merge of \(peer)")
        if book != ourBook {
            try ConflictBook.save(repo, book, device: device, message: "\(device): conflict records of an interrupted merge with \(peer)")
        }
        return report
    }

    // MARK: the unapplied list (<store>/syncagent/unapplied): "<path hex> <old blob hex|-> <old mode>"

    static let absent = ConflictSide(oid: Oid.zero, mode: 0)

    private var unappliedFile: FilePath { gitDir.appending("syncagent").appending("unapplied") }

    /// The list, read from disk once per store object and kept in memory after that (this store
    /// object is its only writer).
    func loadUnapplied() -> [FilePath: ConflictSide] {
        if let cached = unappliedCache.value { return cached }
        let list = readUnapplied()
        unappliedCache.value = list
        return list
    }

    private func readUnapplied() -> [FilePath: ConflictSide] {
        guard let bytes = try? Files.read(unappliedFile) else { return [:] }
        var out: [FilePath: ConflictSide] = [:]
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let parts = line.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
            guard parts.count == 3 else { continue }
            let path = FilePath(bytes: ConflictRecord.bytes(fromHex: parts[0]))
            if parts[1] == "-" {
                out[path] = Self.absent
            } else if let oid = Oid(hex: parts[1]), let mode = UInt32(parts[2], radix: 8) {
                out[path] = ConflictSide(oid: oid, mode: mode)
            }
        }
        return out
    }

    func saveUnapplied(_ list: [FilePath: ConflictSide]) {
        guard list != unappliedCache.value else { return }
        unappliedCache.value = list
        let file = unappliedFile
        if list.isEmpty {
            try? Files.remove(file)
            return
        }
        var text = ""
        for (path, old) in list {
            text += ConflictRecord.hex(path.bytes) + " " + (old == Self.absent ? "- 0" : "\(old.oid.hex) \(String(old.mode, radix: 8))") + "\n"
        }
        try? Files.makeDirectories(file.removingLastComponent())
        let temp = file.removingLastComponent().appending("unapplied.new")
        try? Files.remove(temp)
        if (try? Files.create(temp, bytes: Array(text.utf8), executable: false)) != nil {
            try? Files.rename(temp, to: file)
        }
    }

    /// For the commit path: a path an earlier merge could not write, whose disk state is still what
    /// it was before that merge. Its absence (or old bytes) is not a local change.
    func isUnappliedAndUntouched(_ path: FilePath, unapplied: [FilePath: ConflictSide]) -> Bool {
        guard let old = unapplied[path] else { return false }
        return diskMatches(path, old == Self.absent ? nil : old, entry: nil)
    }
}
