import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// The result of committing one batch.
public struct CommitOutcome: Sendable {
    /// The new commit; nil when the batch changed nothing.
    public var commit: ObjectID?
    public var summary: ChangeSummary
    /// Paths whose file changed while it was being read: commit them again in a later batch.
    public var retry: Set<FilePath>
    /// Things syncagent does not sync (FIFOs, sockets, devices, files it cannot read) seen for the
    /// first time and skipped. A tracked path under one is kept as it is, never deleted.
    public var skipped: [Obstacle]
    /// Changes the rules keep back that were not held before (`syncagent held`).
    public var newlyHeld: [HeldChange] = []
}

extension Store {
    /// Commits the current on-disk state of exactly these paths (relative to the data directory).
    /// Costs O(paths): only their index entries are updated; the tree cache covers the rest.
    /// Paths the rules keep local (`never`, or not this device's under `devices`) are left alone;
    /// changes the rules hold back (`manual`, over `max_bytes`, any change on a receive-only device)
    /// are kept in the store and listed as held instead of committed, unless `send` lists them.
    /// - Parameters:
    ///   - reason: put first in the message (e.g. which conflict a resolution settles).
    ///   - send: held paths to commit anyway (`syncagent send`).
    ///   - ahead: these files hashed already, on other threads (`prehashAhead`).
    public func commit(paths: Set<FilePath>, now: Date = Date(), reason: String? = nil,
                       send: Set<FilePath> = [], ahead: PrehashJob? = nil,
                       unchanged: Set<FilePath>? = nil) throws -> CommitOutcome {
        let index = try liveIndex()
        let ownWrites = try unchanged ?? unchangedOwnWrites(among: paths)
        repo.refreshObjects()  // packs a fetch or the pre-hash wrote since: a known blob is not written again
        var changes: [(path: FilePath, before: Oid?, after: Oid?)] = []
        var retry: Set<FilePath> = []
        var skipped: [Obstacle] = []
        var newestMtime: Int64?

        func unstage(_ path: FilePath) throws(GitError) {
            if let old = index.entry(path) {
                try index.remove(path)
                changes.append((path, old.oid, nil))
            }
        }
        var heldList = loadHeld()
        var newlyHeld: [HeldChange] = []
        let unapplied = loadUnapplied()
        func unstageDirectory(_ path: FilePath) throws(GitError) {
            let under = index.entries(under: path)
            guard !under.isEmpty else { return }
            // What a merge could not write under it (a FIFO stood where the directory was) and is
            // still not there: no deletion of this device's; it lands by itself (`retryUnapplied`).
            // Only while nothing stands there: a file now at the directory's path (a local change)
            // replaces what the directory held, as before.
            let vacant = !unapplied.isEmpty && ((try? FileStat.of(data.pushing(path))) ?? nil) == nil
            let unwritten: Set<FilePath> = !vacant ? [] : Set(under.map(\.path).filter { isUnappliedAndUntouched($0, unapplied: unapplied) })
            if unwritten.isEmpty && policy.rules.isEmpty && policy.mode == .sendReceive {
                try index.removeDirectory(path)
                changes.append(contentsOf: under.map { ($0.path, $0.oid, nil) })
                return
            }
            // The rules still apply file by file: a path this device does not keep is not deleted
            // by its directory's absence, and a held path's deletion is held.
            for entry in under where policy.materializes(entry.path) && !unwritten.contains(entry.path) {
                if !send.contains(entry.path), let why = policy.holdReason(entry.path, size: nil) {
                    let change = HeldChange(path: entry.path, reason: why, bytes: nil, blob: nil)
                    if heldList[entry.path]?.reason != why { newlyHeld.append(change) }
                    heldList[entry.path] = change
                    continue
                }
                try index.remove(entry.path)
                changes.append((entry.path, entry.oid, nil))
            }
        }

        var unappliedTouched = false
        var obstructed: [FilePath: ConflictSide] = [:]
        /// Something we do not sync stands at `path`: what the store holds there and under it stays
        /// (its presence is never a deletion) and waits to be written when it goes away.
        func obstruct(_ obstacle: Obstacle) {
            if warnedSpecial.insert(obstacle.path).inserted { skipped.append(obstacle) }
            for entry in [index.entry(obstacle.path)].compactMap({ $0 }) + index.entries(under: obstacle.path)
            where unapplied[entry.path] == nil {
                obstructed[entry.path] = Self.absent
            }
        }
        // Parents sort before their children, so a directory replaced by a file (or the reverse)
        // is cleared before the new entries go in.
        let ordered = paths.sortedInBytes()
        // Before any file of this batch is looked at: what stat data the index may keep (`settledStat`).
        let lookedAt = WriteStamp.coarseNow()
        // Many files at once (a bulk copy, a big merge's own writes read back): they are hashed on
        // every core first, a chunk at a time, the next chunk while this one goes into the index.
        // A chunk's hashes are all that is held: the whole batch's cost 22 MB at 100k files.
        let chunked = ahead == nil && ordered.count >= Self.prehashThreshold
        let step = chunked ? Self.prehashChunk : max(ordered.count, 1)
        func hashAhead(from start: Int) -> PrehashJob? {
            guard chunked, start < ordered.count else { return nil }
            // This device's own writes, stamped and untouched since, are not read again (below);
            // a chunk with few others left hashes them in the loop.
            let list = ordered[start..<min(start + step, ordered.count)].filter { !index.isStamped($0) && policy.materializes($0) }
            guard list.count >= Self.prehashThreshold / 4 else { return nil }
            return PrehashJob(list: list, gitDir: gitDir, data: data)
        }
        var job = ahead ?? hashAhead(from: 0)
        defer { job?.cancel() }  // a commit that failed half-way: no thread keeps writing
        // The commit flushes just the objects it wrote (`moveRef`): the loose ones it logs and the
        // pre-hash's packs, so the data directory's own dirty pages (a folder of photos just
        // copied) are not written out on the way. Past `writeLogLimit` loose objects, or when the
        // pre-hash found a blob already packed, it flushes the file system.
        repo.recordWrites()
        defer { _ = repo.takeWrites() }
        var packs: [String]? = []
        var looked = 0
        defer { if ordered.count >= Self.progressFrom { onProgress?(Self.commitTask, ordered.count, ordered.count) } }
        for start in stride(from: 0, to: ordered.count, by: step) {
            let prehashed = job?.result() ?? [:]
            if let job { packs = job.packs().flatMap { mine in packs.map { $0 + mine } } }
            let hashedAt = job?.startedAt ?? lookedAt
            job = hashAhead(from: start + step)
            if !prehashed.isEmpty { repo.refreshObjects() }  // the workers' packs
            for path in ordered[start..<min(start + step, ordered.count)] {
                looked += 1
                if ordered.count >= Self.progressFrom, looked % 16 == 0 { onProgress?(Self.commitTask, looked, ordered.count) }
                // Look, ask `CommitDecision`, do it.
                if CommitDecision.passesOver(ignored: path.isEmpty || PathRules.isIgnored(path: path),
                                             materializes: policy.materializes(path), ownWrite: ownWrites.contains(path)) { continue }
                // A file hashed ahead is a regular file this user read a moment ago, unchanged while it
                // was read: no obstacle to look for, no second look. A write since then is a change of
                // its own, seen by the watcher (or by the next scan's stat data).
                let unmoved = prehashed[path]?.stat
                let obstacle = unmoved == nil ? self.obstacle(at: path) : nil
                let stat = obstacle != nil ? nil : unmoved ?? ((try? FileStat.of(data.pushing(path))) ?? nil)
                let before = index.entry(path)
                var look = CommitDecision.Look(obstacle: obstacle != nil, kind: stat?.kind, tracked: before != nil)
                if obstacle == nil {
                    look.holdReason = send.contains(path) ? nil : policy.holdReason(path, size: stat?.isStorable == true ? stat?.size : nil)
                    look.unappliedUntouched = unapplied[path] == nil ? nil : isUnappliedAndUntouched(path, unapplied: unapplied)
                    // A file a merge wrote here carries a `WriteStamp` mtime that no write since can
                    // have left: stat data still equal to the entry's are its bytes (the watcher
                    // reports every merge's own writes). Otherwise no stat shortcut: two same-size
                    // writes in one clock tick leave identical stat data; hashing is what tells.
                    if let before, let stat, index.isStamped(path) { look.stampedUnchanged = Self.statMatches(before, stat) }
                }
                let decision = CommitDecision.decide(look)
                if decision.releasesHold { heldList[path] = nil }
                if decision.overridesUnapplied { unappliedTouched = true }
                switch decision.action {
                case .leave:
                    continue
                case .obstruct:
                    // (obstacle(at:) saw it first, unless it just came)
                    obstruct(obstacle ?? Obstacle(path: path, what: "a \(stat.map { "\($0.kind)" } ?? "file")"))
                    continue
                case .hold(let why):
                    if diskMatches(path, before.map { ConflictSide(oid: $0.oid, mode: $0.mode) }, entry: before) {
                        heldList[path] = nil  // back to what the store has: nothing to hold
                    } else if let change = hold(path, stat: stat, reason: why), heldList[path] != change {
                        if heldList[path]?.reason != why { newlyHeld.append(change) }
                        heldList[path] = change
                    }
                    continue
                case .remove:
                    try unstage(path)
                    try unstageDirectory(path)
                    continue
                case .removeFile:
                    try unstage(path)
                    continue
                case .keepStamped:
                    try unstageDirectory(path)
                    continue
                case .stage:
                    try unstageDirectory(path)
                }
                guard let stat else { continue }
                do {
                    // The bytes are read exactly as they are (never through .gitattributes filters).
                    let blob: Oid
                    switch try blobFromDisk(path, stat: stat, prehashed: prehashed[path]) {
                    case .written(let id):
                        blob = id
                    case .missing:
                        retry.insert(path)  // it changed kind or went away meanwhile: look again
                        continue
                    case .unreadable:
                        obstruct(Obstacle(path: path, what: "a file this user cannot read"))
                        continue
                    case .changedWhileRead:
                        // Its size changed while it was read (appends). Commit the bytes there are now
                        // and read it again in a later batch.
                        guard let snapshot = snapshot(path, stat: stat) else {
                            retry.insert(path)
                            continue
                        }
                        try index.add(path, blob: snapshot, mode: Self.gitMode(stat))
                        changes.append((path, before?.oid, snapshot))
                        newestMtime = max(newestMtime ?? stat.mtimeSeconds, stat.mtimeSeconds)
                        retry.insert(path)
                        continue
                    }
                    let mode = Self.gitMode(stat)
                    if let settled = Self.settledStat(stat, lookedAt: unmoved == nil ? lookedAt : hashedAt) {
                        try index.add(path, blob: blob, mode: mode, stat: settled)
                    } else {
                        try index.add(path, blob: blob, mode: mode)
                    }
                    if before?.oid != blob || before?.mode != mode {
                        changes.append((path, before?.oid, blob))
                        newestMtime = max(newestMtime ?? stat.mtimeSeconds, stat.mtimeSeconds)
                    }
                    // Rewritten while we read it? Then what we hashed may be stale: read it again later.
                    if unmoved == nil, let again = try? FileStat.of(data.pushing(path)), again != stat {
                        retry.insert(path)
                    }
                }
            }
        }

        try updateDirectoryMarkers(index, for: paths, send: send) { changes.append(($0, $1, $2)) }

        if unappliedTouched || !obstructed.isEmpty {
            // The user wrote the path themselves: that is now the change to commit.
            var rest = unapplied
            for path in paths where rest[path] != nil && obstacle(at: path) == nil && !isUnappliedAndUntouched(path, unapplied: unapplied) {
                rest[path] = nil
            }
            rest.merge(obstructed) { old, _ in old }
            saveUnapplied(rest)
        }
        saveHeld(heldList)
        let parent = try repo.headCommit()
        let parentTree = try parent.map { id throws(GitError) in try repo.commit(id).tree }
        // `main`'s tree rebuilt along these paths only (the index holds them as they are now).
        // A merge's own writes read back are walked too: should the merge's ref move have failed
        // after its files were staged, this puts them in `main` as the index has them.
        let tree = try treeFollowingIndex(index, base: parentTree, paths: paths.union(changes.map(\.path)))
        // Nothing changed, or nothing to store yet: empty batches make no commit.
        guard tree != parentTree, parent != nil || index.count > 0 else {
            try saveIndex(index)
            return CommitOutcome(commit: nil, summary: ChangeSummary(), retry: retry, skipped: skipped, newlyHeld: newlyHeld)
        }
        let summary = ChangeSummary(changes: changes)
        let when = newestMtime ?? Int64(now.timeIntervalSince1970)
        let author = Signature(name: device, email: "\(device)@syncagent", time: when)
        let committer = Signature(name: device, email: "\(device)@syncagent", time: Int64(now.timeIntervalSince1970))
        let id = try repo.createCommit(tree: tree, parents: parent.map { [$0] } ?? [], author: author,
                                       committer: committer,
                                       message: (reason.map { "\(device): \($0)\n\n" } ?? "") + summary.message(device: device),
                                       updateRef: nil)
        try moveRef(Store.mainRef, to: id, expected: parent, message: "syncagent: commit", written: packs == nil ? nil : repo.takeWrites(), packs: packs ?? [])
        try saveIndex(index)
        return CommitOutcome(commit: id.id, summary: summary, retry: retry, skipped: skipped, newlyHeld: newlyHeld)
    }

    /// Of these paths, a merge's own writes read back (the watcher reports each one): stamped by
    /// the apply, not held or unapplied, and their stat data still the entry's. They are what the
    /// store has; a commit looks at nothing else of them. One lstat each, none for other paths.
    public func unchangedOwnWrites(among paths: Set<FilePath>) throws -> Set<FilePath> {
        let index = try liveIndex()
        let stamped = paths.filter { index.isStamped($0) }
        guard !stamped.isEmpty else { return [] }
        let held = loadHeld(), unapplied = loadUnapplied()
        return stamped.filter { path in
            guard held[path] == nil, unapplied[path] == nil, let entry = index.entry(path),
                  let now = (try? FileStat.of(data.pushing(path))) ?? nil else { return false }
            return Self.statMatches(entry, now)
        }
    }

    /// Keeps `DirectoryMarker`s true for the directories these changed paths touch: a directory on
    /// disk with nothing else under it in the index gets one, any other loses it. O(paths x depth).
    func updateDirectoryMarkers(_ index: Index, for paths: Set<FilePath>, send: Set<FilePath> = [],
                                change: (FilePath, Oid?, Oid?) -> Void) throws(GitError) {
        var dirs: Set<FilePath> = []
        for path in paths where !path.isEmpty {
            // `DirectoryMarker.candidates(for:)`, walked without making the list of them.
            var dir = DirectoryMarker.isMarker(path) ? DirectoryMarker.directory(of: path) : path
            // A path tracked as a file keeps no marker (the loop's own test below, made here
            // because most paths of a batch are files: a set and a sort of all of them was a
            // tenth of a 100k-file start-up commit). Markers alone change below, never it.
            if dir == path, index.entry(dir) != nil { dir.removeLastComponent() }
            // Walked from the deepest up: one already in came with every directory above it.
            while !dir.isEmpty, dirs.insert(dir).inserted { dir.removeLastComponent() }
        }
        guard !dirs.isEmpty else { return }
        let unapplied = loadUnapplied()
        var emptyBlob: Oid?
        // Deepest first: a directory's marker is settled before its parent looks at what it holds.
        for dir in dirs.sortedInBytes().reversed() {
            guard !PathRules.isIgnored(path: dir) else { continue }
            let marker = DirectoryMarker.marker(of: dir)
            guard policy.materializes(marker), send.contains(marker) || policy.holdReason(marker, size: 0) == nil else { continue }
            // Something that is not a directory we can read stands there (a FIFO, an unreadable
            // directory), or a file is still tracked at the path: its marker stays as it is.
            guard index.entry(dir) == nil, obstacle(at: dir) == nil else { continue }
            // A marker a merge could not write here (a FIFO stood there) and still no directory: no
            // deletion of this device's; the directory is made when it can be (`retryUnapplied`).
            if isUnappliedAndUntouched(marker, unapplied: unapplied) { continue }
            let stat: FileStat?
            do { stat = try FileStat.of(data.pushing(dir)) } catch { continue }  // cannot look: leave it as it is
            let has = index.entry(marker)
            let wanted = stat?.kind == .directory && !index.hasEntries(under: dir, except: marker)
            if wanted, has == nil {
                let blob: Oid
                if let emptyBlob { blob = emptyBlob } else { blob = try repo.createBlob([]) }
                emptyBlob = blob
                try index.add(marker, blob: blob, mode: EntryMode.file)
                change(marker, nil, blob)
            } else if !wanted, let has {
                try index.remove(marker)
                change(marker, has.oid, nil)
            }
        }
    }

    /// Every path that differs between the data directory and the index: a full scan, for start-up,
    /// after a lost-events overflow, and for `status` while the agent is stopped.
    public func changedSinceLastCommit() throws -> Set<FilePath> {
        let index = try liveIndex()
        // An entry written in the same clock tick as the index file cannot be trusted by its stat data.
        let indexStat = try? FileStat.of(gitDir.appending("index"))
        var changed: Set<FilePath> = []
        // Which index entries the walk met, by position: a byte per entry where a set of their
        // paths cost 8 MB at 100k files, on top of the index itself.
        var seen = [Bool](repeating: false, count: index.count)
        var files = 0
        var directories: [FilePath] = []
        var withContent: Set<FilePath> = []  // directories that hold something synced
        var lastWithContent: FilePath?  // (a directory's entries come together: one insert each)
        Directory.walk(data, descend: { dir in !PathRules.isIgnored(path: dir) }) { path, kind in
            guard !PathRules.isIgnored(path: path) else { return }
            if kind == .directory || kind == .regular || kind == .symlink, policy.materializes(path) {
                let parent = path.removingLastComponent()
                if parent != lastWithContent {
                    withContent.insert(parent)
                    lastWithContent = parent
                }
            }
            guard kind != .directory else {
                directories.append(path)
                return
            }
            files += 1
            if files % 2000 == 0 { onProgress?(Self.scanTask, files, nil) }
            guard let (position, entry) = index.find(path) else {
                changed.insert(path)
                return
            }
            seen[position] = true
            guard let stat = try? FileStat.of(data.pushing(path)),
                  Self.statMatches(entry, stat),
                  !Self.isRacy(entry, indexStat) else {
                changed.insert(path)
                return
            }
        }
        // A directory whose marker is not what it should be (see `updateDirectoryMarkers`).
        for dir in directories {
            let marker = index.find(DirectoryMarker.marker(of: dir))
            if let marker { seen[marker.position] = true }
            if (marker != nil) == withContent.contains(dir) { changed.insert(dir) }
        }
        for position in seen.indices where !seen[position] {
            if let path = index.path(at: position) { changed.insert(path) }
        }
        if files >= 2000 { onProgress?(Self.scanTask, files, files) }  // the end of it
        return changed
    }

    /// The blob of the file or link at `path`, written into the store byte for byte (a pre-hashed
    /// result is used when the file's stat data is still the one it was hashed with).
    func blobFromDisk(_ path: FilePath, stat: FileStat, prehashed: Prehashed? = nil) throws(GitError) -> Repository.FileBlob {
        if let prehashed, prehashed.stat == stat { return .written(prehashed.oid) }
        let abs = data.pushing(path)
        if stat.kind == .symlink {
            guard let target = try? Files.readLink(abs) else { return .missing }
            return .written(try repo.createBlob(target))
        }
        return try repo.writeBlob(fromFile: abs)
    }

    /// Reads a regular file that keeps changing into a blob, as it is at this moment.
    private func snapshot(_ path: FilePath, stat: FileStat) -> Oid? {
        guard stat.kind == .regular, let bytes = try? Files.read(data.pushing(path)) else { return nil }
        return try? repo.createBlob(bytes)
    }

    static func gitMode(_ stat: FileStat) -> UInt32 {
        stat.kind == .symlink ? EntryMode.link : (stat.isExecutable ? EntryMode.executable : EntryMode.file)
    }

    static func statMatches(_ entry: IndexEntry, _ stat: FileStat) -> Bool {
        guard stat.isStorable else { return false }
        return entry.mode == gitMode(stat)
            && entry.size == UInt32(truncatingIfNeeded: stat.size)
            && entry.mtimeSeconds == Int32(truncatingIfNeeded: stat.mtimeSeconds)
            && entry.mtimeNanoseconds == UInt32(truncatingIfNeeded: stat.mtimeNanoseconds)
            && entry.inode == UInt32(truncatingIfNeeded: stat.inode)
            // Every write sets ctime, and nobody can set it back: an edit that keeps the size and
            // puts the mtime back (`touch -r`, rsync -t, a clock set back) still shows here.
            && entry.ctimeSeconds == Int32(truncatingIfNeeded: stat.ctimeSeconds)
            && entry.ctimeNanoseconds == UInt32(truncatingIfNeeded: stat.ctimeNanoseconds)
    }

    /// The stat data the index may keep for a file whose bytes were read after `stat` was taken:
    /// only when the file last changed before `lookedAt` (the coarse clock read before that look).
    /// Then any write since carries a later time and shows; a file changed in the very clock tick
    /// of the look could be written again in that tick, same size, and keep identical stat data
    /// (git's "racily clean" entry), so it is recorded without stat data and read again next time.
    /// Times a file system rounds (FAT, exFAT) must be 2 s older (`WriteStamp.modified`). (What the
    /// apply's swap trusts, `DataDirectory.untouched`, rests on this.)
    static func settledStat(_ stat: FileStat, lookedAt: timespec) -> IndexStat? {
        WriteStamp.modified(stat, before: lookedAt, changeTime: true) ? IndexStat(stat) : nil
    }

    static func isRacy(_ entry: IndexEntry, _ indexStat: FileStat?) -> Bool {
        guard let indexStat else { return true }
        let entrySeconds = Int64(entry.mtimeSeconds)
        return entrySeconds > indexStat.mtimeSeconds
            || (entrySeconds == indexStat.mtimeSeconds && Int64(entry.mtimeNanoseconds) >= indexStat.mtimeNanoseconds)
    }
}
