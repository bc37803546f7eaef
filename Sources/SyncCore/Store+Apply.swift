import FileSystem
import Foundation
import Git
import SystemPackage

/// What writing a merge result into the data directory did, path by path.
public struct ApplyReport: Sendable {
    public var written = 0
    public var removed = 0
    /// Every path written into or removed from the data directory (the `received` event's paths).
    public var touched: [FilePath] = []
    /// A receive-only device's local edits that incoming changes replaced (their bytes are kept in
    /// `refs/syncagent/kept`, in commit `keptCommit`).
    public var replacedLocal: [FilePath] = []
    public var keptCommit: Oid?
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
    /// What stands at `path` that is not a regular file, link or directory this user can use; nil
    /// when nothing does (absent, or something syncable). Looks at the path only (a directory above
    /// it that is not a directory is `place`'s business).
    func obstacle(at path: FilePath) -> Obstacle? {
        let abs = data.pushing(path)
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
                guard let above = (try? FileStat.of(data.pushing(prefix))) ?? nil else { return nil }
                if above.kind == .directory { continue }
                if above.kind == .symlink { return nil }  // a link there now: a real change
                if above.kind == .regular {
                    // a file there now: a real change, unless this user cannot read it
                    let readable = data.pushing(prefix).withPlatformString { access($0, R_OK) } == 0
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

    /// Moves the data directory along `changes` (from the tree it holds to a new tree), path by path.
    /// Each path is checked against the baseline right before it is touched: a file that changed
    /// since is left as it is (reported in `localChanges`). A path that cannot be written does not
    /// stop the others (reported in `failures`, remembered, retried by `retryUnapplied`). The index
    /// follows the new tree; the files written are flushed with one `syncfs`.
    func apply(_ changes: [TreeChange]) throws -> ApplyReport {
        var report = ApplyReport()
        guard !changes.isEmpty else { return report }
        let index = try liveIndex()
        var changes = changes
        if !policy.rules.isEmpty {
            // Paths this device does not keep on disk: the index (and so `main`) follows the merge,
            // the data directory is not touched.
            for change in changes where !policy.materializes(change.path) {
                if let new = change.new { try index.add(change.path, blob: new.oid, mode: new.mode) }
                else { try index.remove(change.path) }
            }
            changes = changes.filter { policy.materializes($0.path) }
        }
        // A receive-only device: an incoming change takes a locally edited path; the local bytes
        // go into the store first.
        var replace: Set<FilePath> = []
        var keptSides: [FilePath: ConflictSide] = [:]
        /// A replaced path must still hold what was kept; bytes written since are kept too.
        func keepAgainIfChanged(_ path: FilePath) throws {
            guard replace.contains(path), (try? diskSide(path)) ?? nil != keptSides[path] else { return }
            let again = try keepLocalVersions([path], why: "local edits replaced by incoming changes")
            if let side = again.kept[path] { keptSides[path] = side }
            report.keptCommit = again.commit ?? report.keptCommit
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
                        report.keptCommit = (try? keep([(path, kept)], why: "local edits replaced by incoming changes")) ?? report.keptCommit
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
                report.keptCommit = saved.commit
                keptSides = saved.kept
                report.replacedLocal = edited
                replace = Set(edited)
                var held = loadHeld()
                for path in edited { held[path] = nil }
                saveHeld(held)
            }
        }
        var unapplied = loadUnapplied()
        // Directories (their markers) are made or removed between the removals and the additions
        // of files; directories that keep a marker are never pruned as empty.
        let markers = changes.filter { DirectoryMarker.isMarker($0.path) }
        changes.removeAll { DirectoryMarker.isMarker($0.path) }
        let keptDirectories = Set(markers.filter { $0.new != nil }.map { DirectoryMarker.directory(of: $0.path) })
        // Removals first, deepest first, so a directory can become a file and a file a directory.
        let removals = changes.filter { $0.new == nil }.sorted { $1.path.bytes.lexicographicallyPrecedes($0.path.bytes) }
        for change in removals {
            let entry = index.entry(change.path)
            if obstacle(at: change.path) != nil {
                // The path goes from the store; what stands on disk was never ours and stays.
                unapplied[change.path] = nil
                try index.remove(change.path)
                continue
            }
            if !replace.contains(change.path) && !diskMatches(change.path, change.old, entry: entry) && !diskMatches(change.path, nil, entry: nil) {
                report.localChanges.append(change.path)
            } else {
                try keepAgainIfChanged(change.path)
                do {
                    try Files.remove(data.pushing(change.path))
                    report.removed += 1
                    report.touched.append(change.path)
                    unapplied[change.path] = nil
                    pruneEmptyParents(of: change.path, keeping: keptDirectories)
                } catch {
                    report.failures.append(ApplyFailure(path: change.path, errno: error))
                    if unapplied[change.path] == nil { unapplied[change.path] = change.old ?? Self.absent }
                }
            }
            try index.remove(change.path)
        }
        try applyDirectories(markers, index: index, unapplied: &unapplied, report: &report, keeping: keptDirectories)
        var counter: UInt64 = 0
        var step = 0
        for change in changes.sorted(by: { $0.path.bytes.lexicographicallyPrecedes($1.path.bytes) }) {
            step += 1
            if changes.count >= 1000, step % 500 == 0 { onProgress?(Self.mergeTask, step, changes.count) }
            guard let new = change.new else { continue }
            let entry = index.entry(change.path)
            if diskMatches(change.path, new, entry: nil) {
                try stage(index, change.path, new)
                unapplied[change.path] = nil
                continue
            }
            if let obstacle = obstacle(at: change.path) {
                // Never removed or replaced: the peer's version waits (the store has it) and lands
                // when the obstacle goes away (`retryUnapplied`).
                report.failures.append(ApplyFailure(path: change.path, errno: .fileExists, obstacle: obstacle))
                if unapplied[change.path] == nil { unapplied[change.path] = Self.absent }
                try index.add(change.path, blob: new.oid, mode: new.mode)
                continue
            }
            let unappliedOld = unapplied[change.path].map { $0 == Self.absent ? nil : $0 }
            let untouchedSinceFailure = unappliedOld.map { diskMatches(change.path, $0, entry: nil) } ?? false
            guard replace.contains(change.path) || diskMatches(change.path, change.old, entry: entry) || untouchedSinceFailure else {
                report.localChanges.append(change.path)
                try index.add(change.path, blob: new.oid, mode: new.mode)
                continue
            }
            do {
                if let displaced = try place(new, at: change.path, counter: &counter, displace: replace.contains(change.path)) {
                    // What the local file held at the very moment it was replaced: kept unless it
                    // is what was kept already.
                    keepDisplaced(displaced, as: change.path)
                }
            } catch {
                report.failures.append(ApplyFailure(path: change.path, errno: error))
                if unapplied[change.path] == nil { unapplied[change.path] = change.old ?? Self.absent }
                try index.add(change.path, blob: new.oid, mode: new.mode)
                continue
            }
            try stage(index, change.path, new)
            report.written += 1
            report.touched.append(change.path)
            unapplied[change.path] = nil
        }
        try saveIndex(index)
        saveUnapplied(unapplied)
        Durability.flushFileSystem(containing: data)
        if changes.count >= 1000 { onProgress?(Self.mergeTask, changes.count, changes.count) }  // the end of it
        return report
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
                report.touched.append(dir)
                pruneEmptyParents(of: dir, keeping: keeping)
            }
        }
        for change in markers.sorted(by: { $0.path.bytes.lexicographicallyPrecedes($1.path.bytes) }) {
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
                    report.touched.append(dir)
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
            let wanted = target?.mode == 0o040000 ? nil : target
            let before: ConflictSide? = old == Self.absent ? nil : old
            changes.append(TreeChange(path: path, old: before, new: wanted))
        }
        return try apply(changes)
    }

    /// Paths an earlier merge could not write, with what the data directory held before.
    public var unappliedPaths: [FilePath] { Array(loadUnapplied().keys) }

    /// The paths the data directory does not hold as the store does because they could not be
    /// written, each with what stands in the way when that is known (for `status` while stopped,
    /// and `conflicts`). Looks at each path on disk.
    public func stuckPaths() -> [ApplyFailure] {
        loadUnapplied().keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }.map { path in
            if let obstacle = obstacle(at: path) { return ApplyFailure(path: path, errno: .fileExists, obstacle: obstacle) }
            return ApplyFailure(path: path, errno: .resourceTemporarilyUnavailable)
        }
    }

    /// Writes one entry at `path` through a short-named temporary beside it, then `rename`.
    /// With `displace`, a file or link already at the path is swapped out atomically and left at the
    /// returned temporary name (for the caller to keep, then remove) instead of being dropped.
    @discardableResult
    private func place(_ side: ConflictSide, at path: FilePath, counter: inout UInt64, displace: Bool = false) throws(Errno) -> FilePath? {
        let target = data.pushing(path)
        let dir = target.removingLastComponent()
        // Never write through a link: a directory above the path that is now a symbolic link (not
        // committed yet) would take the file outside the data directory.
        var prefix = data
        for component in path.components.dropLast() {
            prefix.append(component)
            if let stat = try FileStat.of(prefix), stat.kind != .directory { throw .fileExists }
        }
        if let stat = try FileStat.of(target), stat.kind == .directory {
            // Its tracked files were removed above; what is left is not ours to delete.
            guard Files.removeDirectoryWithoutFiles(target) else { throw .directoryNotEmpty }
        }
        try Files.makeDirectories(dir)
        let temp = AgentTemporary.path(in: dir, counter: &counter)
        if side.mode == 0o120000 {
            let bytes: [UInt8]
            do { bytes = try repo.blobData(side.oid) } catch { throw .ioError }
            try Files.createLink(temp, target: bytes)
        } else {
            // Streamed: a big file costs a fixed buffer, not its size.
            try Files.create(temp, executable: side.mode == 0o100755) { [repo] sink in
                try repo.streamBlob(side.oid) { chunk in try sink.write(chunk) }
            }
        }
        do {
            if displace, let old = try FileStat.of(target), old.isStorable {
                do {
                    try Files.exchange(temp, target)
                    return temp
                } catch where error == .invalidArgument || error == .notSupported {
                    // A file system without RENAME_EXCHANGE: the bytes kept before the merge are
                    // what is kept; replace as usual.
                }
            }
            try Files.rename(temp, to: target)
        } catch {
            try? Files.remove(temp)
            throw error
        }
        return nil
    }

    /// Stages `side` at `path` with the stat data of the file now there.
    private func stage(_ index: Index, _ path: FilePath, _ side: ConflictSide) throws(GitError) {
        if let st = try? FileStat.of(data.pushing(path)) {
            try index.add(path, blob: side.oid, mode: side.mode, stat: IndexStat(
                size: st.size, mtimeSeconds: st.mtimeSeconds, mtimeNanoseconds: st.mtimeNanoseconds,
                ctimeSeconds: st.ctimeSeconds, ctimeNanoseconds: st.ctimeNanoseconds, inode: st.inode, device: st.device))
        } else {
            try index.add(path, blob: side.oid, mode: side.mode)
        }
    }

    /// Whether the data directory holds exactly `side` at `path` (nil: no file or link there).
    /// `entry` is the index's record of the path: when its stat data matches, the file is not read.
    func diskMatches(_ path: FilePath, _ side: ConflictSide?, entry: IndexEntry?) -> Bool {
        if DirectoryMarker.isMarker(path) {
            // A marker is never on disk: it matches when its directory is (or is not) there.
            let isDirectory = (try? FileStat.of(data.pushing(DirectoryMarker.directory(of: path))))??.kind == .directory
            return isDirectory == (side != nil)
        }
        let abs = data.pushing(path)
        guard let stat = try? FileStat.of(abs) else { return side == nil }
        guard let side else { return stat.kind == .directory }  // a directory is not a lost file
        if let entry, entry.oid == side.oid, entry.mode == side.mode, Self.statMatches(entry, stat) {
            return true
        }
        switch stat.kind {
        case .regular:
            guard (side.mode == 0o100755) == stat.isExecutable, side.mode != 0o120000 else { return false }
            if stat.size > 1 << 20 { return Oid.hashing(file: abs) == side.oid }
            guard let bytes = try? Files.read(abs) else { return false }
            return Oid.hashing(bytes) == side.oid
        case .symlink:
            guard side.mode == 0o120000, let target = try? Files.readLink(abs) else { return false }
            return Oid.hashing(target) == side.oid
        default:
            return false
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
        let parts = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard parts.count == 2 || parts.count == 3, let target = Oid(hex: parts[0]), repo.hasObject(target) else { return nil }
        let expected = Oid(hex: parts[1])
        let peer = parts.count == 3 ? parts[2] : "a peer"
        let head = try head()
        guard head == expected, head != target else { return nil }
        let baseTree = try head.map { id throws in try repo.commit(id).tree }
        let targetTree = try repo.commit(target).tree
        var report = try apply(try repo.diffTrees(baseTree, targetTree))
        guard !report.localChanges.isEmpty else {
            try moveRef("refs/heads/main", to: target, expected: head, message: "syncagent: finish an interrupted merge")
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
