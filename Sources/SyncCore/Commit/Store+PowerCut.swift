import FileSystem
internal import Git
internal import ObjectStorage
import SystemPackage

/// After the machine stopped under the agent (`AgentSession`): what a power cut did to files the
/// user's programs wrote without flushing them is told apart from an edit, and never committed
/// over the versions the peers hold.
extension Store {
    /// Of these changed paths, the tracked files a power cut damaged rather than a person edited:
    /// gone, emptied (the index recorded bytes there), zero-filled, cut short (a prefix of the
    /// recorded version), or older than the version the index
    /// recorded (an inode change time before the recorded one: the disk went back in time). A file
    /// changed later is an edit made before the cut and is committed as usual (in-place rewrites
    /// the program never flushed may then be a mix: nothing can tell).
    /// `bootTime`: a file whose inode changed after it was changed since the machine came back.
    /// Paths the rules hold back (receive-only edits, manual paths) are not looked at.
    public func powerCutDamage(among paths: [FilePath], bootTime: Int64 = .max) throws -> [FilePath] {
        let index = try liveIndex()
        let held = loadHeld()
        var damaged: [FilePath] = []
        var changedFiles: [FilePath: Oid] = [:]  // tracked files none of the rules below caught: older versions?
        for path in paths where held[path] == nil {
            if let stat = (try? FileStat.of(data.pushing(path))) ?? nil, stat.ctimeSeconds > bootTime { continue }
            // Gone: a file whose name never reached the disk (made, or moved there, and never
            // flushed with its directory). Its committed version comes back. (A deletion the user's
            // program did flush, not committed before the cut, comes back too: nothing is lost, and
            // deleting it again syncs.)
            if ((try? FileStat.of(data.pushing(path))) ?? nil) == nil {
                let tracked = [index.entry(path)].compactMap { $0 } + index.entries(under: path)
                damaged += tracked.map(\.path).filter { policy.materializes($0) && !DirectoryMarker.isMarker($0) && ((try? FileStat.of(data.pushing($0))) ?? nil) == nil }
                continue
            }
            if index.entry(path) == nil, index.entries(under: path).isEmpty {
                // Back from the dead: a file deleted (or moved away) and committed just before the
                // cut, whose removal never reached the disk. It is what `main` deleted, byte for byte.
                damaged += try resurrected(under: path)
                continue
            }
            guard let current = index.entry(path), !current.isLink, policy.materializes(path),
                  let stat = (try? FileStat.of(data.pushing(path))) ?? nil, stat.kind == .regular else { continue }
            // An entry put back at `main` at start (the index file was saved before `main` last
            // moved here): what the file recorded then is the reference. The disk holding exactly
            // that version's bytes, while `main` moved on, went back in time.
            if current.mtimeSeconds == 0, let before = recordedBeforeReconcile[path], before.oid != current.oid,
               Oid.hashing(file: data.pushing(path)) == before.oid {
                damaged.append(path)
                continue
            }
            let entry = current.mtimeSeconds == 0 ? (recordedBeforeReconcile[path] ?? current) : current
            // The inode's change time: no program can set it, every write, rename or chmod moves
            // it forward. Earlier on disk than what the index recorded: the disk went back in time.
            // (The modification time is no guide: `cp -p` and `touch -d` set old ones, a merge's
            // writes carry a stamp of their own.)
            let recorded = (Int64(entry.ctimeSeconds), Int64(entry.ctimeNanoseconds))
            let hasStat = recorded != (0, 0)
            let disk = (stat.ctimeSeconds, stat.ctimeNanoseconds)
            let committedSize: Int64 = hasStat ? Int64(entry.size) : ((try? repo.blobSize(entry.oid)) ?? 0)
            if stat.size == 0 && committedSize > 0 { damaged.append(path); continue }
            // Its name and size reached the disk, its bytes did not (XFS, ext4 with data=writeback).
            if isAllZeros(data.pushing(path), size: stat.size) { damaged.append(path); continue }
            // Cut short: the first bytes of the committed version and nothing after them (a file
            // written and committed, whose later blocks never reached the disk: seed 7001 cut 15,
            // 768 KiB of a 4 MB photo went to the watch).
            if stat.size < committedSize, isPrefix(of: entry.oid, file: data.pushing(path), size: stat.size) {
                damaged.append(path)
                continue
            }
            // Older than recorded, or exactly what was recorded before `main` moved past it.
            let sameAsRecorded = disk == recorded && stat.size == committedSize && entry.oid != current.oid
            if hasStat, disk < recorded || sameAsRecorded { damaged.append(path); continue }
            if changedFiles.count < Self.wentBackLimit, stat.size <= 64 << 20,
               let oid = Oid.hashing(file: data.pushing(path)), oid != current.oid {
                changedFiles[path] = oid
            }
        }
        damaged += try wentBack(changedFiles)
        return Array(Set(damaged)).sortedInBytes()
    }

    /// At most this many changed files are looked up in `main`'s history after a power cut.
    static let wentBackLimit = 2_000

    /// The files whose bytes are exactly a version one of the last `resurrectionDepth` commits of
    /// `main` held at that path before, and not `main`'s own: the disk went back to what a merge
    /// or an earlier commit wrote (an in-place rewrite that was never flushed). No timestamp is
    /// needed, so this holds however the file system keeps inode times across a cut. A person can
    /// hardly have made such a change while the machine was off; a program that put an older
    /// version back just before the cut loses that step on disk only (what the disk held is kept).
    func wentBack(_ files: [FilePath: Oid]) throws -> [FilePath] {
        guard !files.isEmpty, let head = try head() else { return [] }
        var pending = files
        var found: [FilePath] = []
        var seen = 0
        try repo.walk(from: head, firstParentOnly: true) { id in
            seen += 1
            let tree = try repo.commit(id).tree
            for (file, disk) in pending {
                guard let side = try repo.entry(at: file, inTree: tree) else { continue }
                if side.oid == disk {
                    if seen > 1 { found.append(file) }  // main's own version is an edit back to it, not damage
                    pending[file] = nil
                }
            }
            return !pending.isEmpty && seen < Self.resurrectionDepth
        }
        return found
    }

    /// Whether the file holds nothing but zero bytes (read up to 64 MiB; a bigger one counts as not).
    /// Whether the file at `path` (`size` bytes) holds exactly the first `size` bytes of blob `id`.
    func isPrefix(of id: Oid, file path: FilePath, size: Int64) -> Bool {
        guard size <= 64 << 20, let bytes = try? Files.read(path), Int64(bytes.count) == size else { return false }
        var at = 0
        var same = true
        struct Enough: Error {}
        do {
            try repo.streamBlob(id) { chunk in
                let n = min(chunk.count, bytes.count - at)
                if n > 0, !bytes[at..<(at + n)].elementsEqual(chunk.prefix(n)) { same = false }
                at += n
                if !same || at >= bytes.count { throw Enough() }
            }
        } catch is Enough {
        } catch {
            return false
        }
        return same && at == bytes.count
    }

    func isAllZeros(_ path: FilePath, size: Int64) -> Bool {
        guard size > 0, size <= 64 << 20, let bytes = try? Files.read(path), Int64(bytes.count) == size else { return false }
        return bytes.allSatisfy { $0 == 0 }
    }

    /// Commits of `main` looked through for a file a cut brought back (the deletion it undid was
    /// among the last the agent made before the cut).
    static let resurrectionDepth = 100

    /// The regular files at or under `path` (untracked) whose bytes are exactly a version one of
    /// the last `resurrectionDepth` commits of `main` held at that path: a deletion (or a move away)
    /// committed before the cut whose unlink never reached the disk, possibly with an in-place
    /// rewrite before it that did not reach the disk either (seed 5000, cut 179: replaced, then
    /// renamed away, committed in two steps; the cut brought back the version before both).
    func resurrected(under path: FilePath) throws -> [FilePath] {
        guard policy.materializes(path) else { return [] }
        let files = regularFiles(atOrUnder: path)
        guard files.count <= 10_000 else { return [] }
        return try wentBack(Dictionary(uniqueKeysWithValues: files.compactMap { f in Oid.hashing(file: data.pushing(f)).map { (f, $0) } }))
    }

    /// The regular files at `path` (a file) or under it (a directory) in the data directory.
    func regularFiles(atOrUnder path: FilePath) -> [FilePath] {
        guard let stat = (try? FileStat.of(data.pushing(path))) ?? nil else { return [] }
        if stat.kind == .regular { return [path] }
        var files: [FilePath] = []
        if stat.kind == .directory {
            Directory.walk(data.pushing(path)) { rel, kind in if kind == .regular { files.append(path.pushing(rel)) } }
        }
        return files
    }

    /// Puts `main`'s version back at these paths (removes what `main` does not hold); what the disk
    /// held is kept in the store first
    /// (`refs/syncagent/kept`, whose commit this returns). What the apply could not write is in the
    /// report (`localChanges`: written again meanwhile, left as it is).
    public func putBackCommitted(_ paths: [FilePath]) throws -> (report: ApplyReport, kept: ObjectID?) {
        let (kept, keptSides) = try keepLocalVersions(paths, why: "what a power cut left on disk")
        let tree = try head().map { id throws in try repo.commit(id).tree }
        var changes: [TreeChange] = []
        for path in paths.sortedInBytes() {
            // Nothing in `main` (a file the cut brought back): it goes again.
            let wanted = try tree.flatMap({ t throws in try repo.entry(at: path, inTree: t) })
            guard wanted?.mode != EntryMode.tree else { continue }
            // Replaced only if it still holds what was kept (bytes written since stay, as edits).
            let disk = keptSides[path]
            if disk == nil, ((try? FileStat.of(data.pushing(path))) ?? nil) != nil { continue }  // could not be kept
            guard disk != nil || wanted != nil else { continue }
            changes.append(TreeChange(path: path, old: disk, new: wanted))
        }
        let report = try apply(changes)
        return (report, kept?.id)
    }

    // MARK: new files a power cut may have broken (<store>/syncagent/power-cut-left: "<path hex> <size> <mtime s> <mtime ns> <inode>")

    /// Where a write the power cut short ends: programs write through buffers of whole 4 KiB
    /// pages, and the kernel writes a file's bytes back page by page.
    static let tornWriteBoundary: Int64 = 4096

    /// Of these changed paths, the new files (nothing committed there) a power cut may have
    /// broken: empty, zero-filled (a program made them and never flushed their bytes), or a
    /// whole number of 4 KiB pages (a write the power cut short: only its first pages reached the
    /// disk; seed 8000 cut 86, 768 KiB of a 3 MB photo no device held yet went to the watch).
    /// A torn new file holds no zeros and has no committed version to compare with: its size is
    /// the only sign, and one whole file in 4,096 has such a size too. Nothing can be put back,
    /// so they are kept out of commits while they stay as they are (`powerCutLeft`).
    /// Only files last changed before the machine came back (`bootTime`) are looked at.
    public func newFilesAPowerCutMayHaveBroken(among paths: [FilePath], bootTime: Int64 = .max) throws -> [FilePath] {
        let index = try liveIndex()
        var out: [FilePath] = []
        for path in paths where index.entry(path) == nil && index.entries(under: path).isEmpty && policy.materializes(path) {
            for file in regularFiles(atOrUnder: path) {
                guard let stat = (try? FileStat.of(data.pushing(file))) ?? nil, stat.kind == .regular, stat.ctimeSeconds <= bootTime,
                      stat.size % Self.tornWriteBoundary == 0 || isAllZeros(data.pushing(file), size: stat.size) else { continue }
                out.append(file)
            }
        }
        return out
    }

    private var powerCutLeftFile: FilePath { gitDir.appending("syncagent").appending("power-cut-left") }

    /// The new files kept out of commits, as they were when the cut was found.
    public func powerCutLeft() -> [FilePath] { Array(loadPowerCutLeft().keys).sortedInBytes() }

    func loadPowerCutLeft() -> [FilePath: PowerCutStamp] {
        if let cached = powerCutLeftCache { return cached }
        var out: [FilePath: PowerCutStamp] = [:]
        for line in ((try? Files.read(powerCutLeftFile)) ?? []).split(separator: UInt8(ascii: "\n")) {
            let parts = line.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
            guard parts.count == 5, let size = Int64(parts[1]), let s = Int64(parts[2]), let ns = Int64(parts[3]), let ino = UInt64(parts[4]) else { continue }
            out[FilePath(bytes: ConflictRecord.bytes(fromHex: parts[0]))] = PowerCutStamp(size: size, seconds: s, nanoseconds: ns, inode: ino)
        }
        powerCutLeftCache = out
        return out
    }

    func savePowerCutLeft(_ list: [FilePath: PowerCutStamp]) {
        powerCutLeftCache = list
        if list.isEmpty { try? Files.remove(powerCutLeftFile); return }
        var text = ""
        for (path, stamp) in list { text += "\(ConflictRecord.hex(path.bytes)) \(stamp.size) \(stamp.seconds) \(stamp.nanoseconds) \(stamp.inode)\n" }
        let temp = powerCutLeftFile.removingLastComponent().appending("power-cut-left.new")
        try? Files.makeDirectories(powerCutLeftFile.removingLastComponent())
        try? Files.remove(temp)
        if (try? Files.create(temp, bytes: Array(text.utf8), executable: false)) != nil { try? Files.rename(temp, to: powerCutLeftFile) }
    }

    /// Keeps these files out of commits while they stay as they are now.
    public func holdPowerCutLeft(_ paths: [FilePath]) {
        var list = loadPowerCutLeft()
        for path in paths {
            guard let stat = (try? FileStat.of(data.pushing(path))) ?? nil else { continue }
            list[path] = PowerCutStamp(size: stat.size, seconds: stat.mtimeSeconds, nanoseconds: stat.mtimeNanoseconds, inode: stat.inode)
        }
        savePowerCutLeft(list)
    }

    /// Of these paths, the ones still as the power cut left them (not to be committed). Those
    /// changed or gone since, and those in `release` (`syncagent send`), leave the list.
    public func stillAsPowerCutLeft(among paths: Set<FilePath>, release: Set<FilePath> = []) -> Set<FilePath> {
        let list = loadPowerCutLeft()
        guard !list.isEmpty else { return [] }
        var kept = list
        var still: Set<FilePath> = []
        for path in paths.union(release) where list[path] != nil {
            let stat = (try? FileStat.of(data.pushing(path))) ?? nil
            if !release.contains(path), let stat, list[path] == PowerCutStamp(size: stat.size, seconds: stat.mtimeSeconds, nanoseconds: stat.mtimeNanoseconds, inode: stat.inode) {
                still.insert(path)
            } else {
                kept[path] = nil
            }
        }
        if kept.count != list.count { savePowerCutLeft(kept) }
        return still
    }

    /// Of these paths (what a merge met on disk: `localChanges`), the new files a power cut left
    /// empty or cut short, still so, that `main` now holds a version of: another device's real
    /// bytes came. That version goes on disk and what the disk held is kept in the store
    /// (`putBackCommitted`); they leave the list. Nil when there are none.
    public func takeIncomingOverPowerCutLeft(_ paths: [FilePath]) throws -> (paths: [FilePath], report: ApplyReport, kept: ObjectID?)? {
        let list = loadPowerCutLeft()
        guard !list.isEmpty else { return nil }
        let still = stillAsPowerCutLeft(among: Set(paths.filter { list[$0] != nil }))
        guard !still.isEmpty, let head = try head() else { return nil }
        let tree = try repo.commit(head).tree
        let met = try still.filter { path throws in try repo.entry(at: path, inTree: tree).map { $0.mode != EntryMode.tree } ?? false }.sortedInBytes()
        guard !met.isEmpty else { return nil }
        let (report, kept) = try putBackCommitted(met)
        let left = Set(met).subtracting(report.localChanges)  // bytes written meanwhile stay, held
        _ = stillAsPowerCutLeft(among: [], release: left)
        return (met, report, kept)
    }
}

/// A file's stat data as a power cut left it.
struct PowerCutStamp: Equatable, Sendable {
    var size: Int64
    var seconds: Int64
    var nanoseconds: Int64
    var inode: UInt64
}
