import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// A local change this device keeps back, and why (`syncagent held`).
public struct HeldChange: Sendable, Equatable {
    public var path: FilePath
    public var reason: HoldReason
    /// Size of the held file; nil for a held deletion.
    public var bytes: Int64?
    /// The held bytes, written into the store (kept reachable from `refs/syncagent/kept`); nil for
    /// a deletion and for a receive-only device's local edits (saved when they are reverted).
    public var blob: ObjectID?
}

extension Store {
    /// The ref whose commits keep every version this device held back, reverted or let an incoming
    /// change replace: one commit per batch, a flat tree of `<path as hex>` -> blob, the message
    /// naming the paths. Never shared (peers fetch `main` and the conflict records only).
    public static let keptRef = "refs/syncagent/kept"

    /// What to hold for `path`: its bytes go into the store now (manual, max_bytes), so the change
    /// survives a crash even if the file is then lost.
    func hold(_ path: FilePath, stat: FileStat?, reason: HoldReason) -> HeldChange? {
        guard let stat, stat.isStorable else { return HeldChange(path: path, reason: reason, bytes: nil, blob: nil) }
        var change = HeldChange(path: path, reason: reason, bytes: stat.size, blob: nil)
        if reason != .localChange {
            let abs = data.pushing(path)
            if case .written(let oid)? = try? blobFromDisk(path, stat: stat) { change.blob = oid.id }
            _ = abs
            if let blob = change.blob, heldCache.value?[path]?.blob != blob {
                _ = try? keep([(path, ConflictSide(oid: blob.oid, mode: Self.gitMode(stat)))], why: "held (\(reason.rawValue))")
            }
        }
        return change
    }

    /// Adds these versions to `refs/syncagent/kept`; returns the commit.
    @discardableResult
    func keep(_ versions: [(path: FilePath, side: ConflictSide)], why: String, now: Date = Date()) throws -> Oid? {
        guard !versions.isEmpty else { return nil }
        let tree = try repo.writeFlatTree(versions.map { (name: ConflictRecord.hex($0.path.bytes), blob: $0.side.oid) })
        let parent = try repo.resolveReference(Self.keptRef)
        let sig = Signature(name: device, email: "\(device)@syncagent", time: Int64(now.timeIntervalSince1970))
        let message = "\(device): \(why)\n\n" + versions.map { "\($0.side.oid.hex) \($0.path.display)" }.joined(separator: "\n") + "\n"
        let commit = try repo.createCommit(tree: tree, parents: parent.map { [$0] } ?? [], author: sig, committer: sig,
                                           message: message, updateRef: nil)
        try moveRef(Self.keptRef, to: commit, expected: parent, message: "syncagent: keep \(why)")
        return commit
    }

    // MARK: the held list (<store>/syncagent/held): "<path hex> <reason> <bytes|-> <blob hex|->"

    private var heldFile: FilePath { gitDir.appending("syncagent").appending("held") }

    public func loadHeld() -> [FilePath: HeldChange] {
        if let cached = heldCache.value { return cached }
        var out: [FilePath: HeldChange] = [:]
        if let bytes = try? Files.read(heldFile) {
            for line in bytes.split(separator: UInt8(ascii: "\n")) {
                let parts = line.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
                guard parts.count == 4, let reason = HoldReason(rawValue: parts[1]) else { continue }
                let path = FilePath(bytes: ConflictRecord.bytes(fromHex: parts[0]))
                out[path] = HeldChange(path: path, reason: reason, bytes: Int64(parts[2]), blob: ObjectID(hex: parts[3]))
            }
        }
        heldCache.value = out
        return out
    }

    func saveHeld(_ list: [FilePath: HeldChange]) {
        guard list != heldCache.value else { return }
        heldCache.value = list
        if list.isEmpty {
            try? Files.remove(heldFile)
            return
        }
        var text = ""
        for change in list.values.sortedInBytes(by: { $0.path }) {
            text += "\(ConflictRecord.hex(change.path.bytes)) \(change.reason.rawValue) \(change.bytes.map(String.init) ?? "-") \(change.blob?.hex ?? "-")\n"
        }
        try? Files.makeDirectories(heldFile.removingLastComponent())
        let temp = heldFile.removingLastComponent().appending("held.new")
        try? Files.remove(temp)
        if (try? Files.create(temp, bytes: Array(text.utf8), executable: false)) != nil {
            try? Files.rename(temp, to: heldFile)
        }
    }

    /// Held paths (all when `paths` is empty) that `send` may share: not a receive-only device's.
    public func sendable(_ paths: [FilePath]) -> [FilePath] {
        let held = loadHeld()
        let chosen = paths.isEmpty ? Array(held.keys) : paths.filter { held[$0] != nil }
        return chosen.filter { held[$0]?.reason != .localChange }
    }

    // MARK: receive-only

    /// `syncagent revert`: puts the store's version back at each locally edited path (all of them
    /// when `paths` is empty). The local bytes go to `refs/syncagent/kept` first. Returns the paths
    /// reverted and the commit that keeps their local bytes.
    public func revert(_ paths: [FilePath]) throws -> (reverted: [FilePath], kept: ObjectID?) {
        let held = loadHeld()
        let chosen = paths.isEmpty ? Array(held.keys) : paths
        let targets = chosen.filter { held[$0]?.reason == .localChange }
            .sortedInBytes()
        guard !targets.isEmpty else { return ([], nil) }
        let kept = try keepLocalBytes(targets, why: "reverted")
        let head = try head()
        let tree = try head.map { id throws in try repo.commit(id).tree }
        var changes: [TreeChange] = []
        for path in targets {
            let wanted = try tree.flatMap { t throws in try repo.entry(at: path, inTree: t) }
            let onDisk = try diskSide(path)
            changes.append(TreeChange(path: path, old: onDisk, new: wanted?.mode == EntryMode.tree ? nil : wanted))
        }
        _ = try apply(changes)
        var list = loadHeld()
        for path in targets { list[path] = nil }
        saveHeld(list)
        return (targets, kept?.id)
    }

    /// Saves what the disk holds at these paths into `refs/syncagent/kept` (nothing for a path with
    /// no file or link).
    func keepLocalBytes(_ paths: [FilePath], why: String) throws -> Oid? {
        try keepLocalVersions(paths, why: why).commit
    }

    /// `keepLocalBytes`, also saying what was kept at each path (no entry: nothing storable there).
    func keepLocalVersions(_ paths: [FilePath], why: String) throws -> (commit: Oid?, kept: [FilePath: ConflictSide]) {
        var versions: [(path: FilePath, side: ConflictSide)] = []
        for path in paths {
            guard let stat = try? FileStat.of(data.pushing(path)), stat.isStorable else { continue }
            var blob: Oid?
            if case .written(let oid) = try blobFromDisk(path, stat: stat) { blob = oid }
            if blob == nil, stat.kind == .regular, let bytes = try? Files.read(data.pushing(path)) {
                blob = try repo.createBlob(bytes)  // it keeps changing: keep what is there now
            }
            guard let blob else { continue }
            versions.append((path, ConflictSide(oid: blob, mode: Self.gitMode(stat))))
        }
        let commit = try keep(versions, why: why)
        return (commit, Dictionary(versions.map { ($0.path, $0.side) }, uniquingKeysWith: { a, _ in a }))
    }

    /// The file or link at `path` as a tree entry would have it (without writing it); nil if none.
    func diskSide(_ path: FilePath) throws -> ConflictSide? {
        let abs = data.pushing(path)
        guard let stat = try? FileStat.of(abs), stat.isStorable else { return nil }
        if stat.kind == .regular, stat.size > 1 << 20, let id = Oid.hashing(file: abs) {
            return ConflictSide(oid: id, mode: Self.gitMode(stat))
        }
        let bytes = stat.kind == .symlink ? try Files.readLink(abs) : try Files.read(abs)
        return ConflictSide(oid: Oid.hashing(bytes), mode: Self.gitMode(stat))
    }

    // MARK: the data directory follows the rules

    private var materializedFile: FilePath { gitDir.appending("syncagent").appending("materialize-rules.json") }

    /// At start-up, when the rules that decide what the data directory holds changed since the last
    /// run: writes the files this device now keeps (a device added to a `devices` list, a `never`
    /// rule dropped) and takes out the ones a `devices` list no longer gives it (only when the disk
    /// holds exactly the store's version; the store keeps them either way). A new `never` rule
    /// leaves the files as they are: they become the device's own. Returns what it did.
    public func followRules() throws -> (written: Int, removed: Int, leftAlone: [FilePath]) {
        let key = policy.materializeKey
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let current = (try? encoder.encode(key)).map(Array.init) ?? []
        let previousBytes = try? Files.read(materializedFile)
        guard previousBytes != current else { return (0, 0, []) }
        defer {
            try? Files.makeDirectories(materializedFile.removingLastComponent())
            try? Files.remove(materializedFile)
            try? Files.create(materializedFile, bytes: current, executable: false)
        }
        guard let head = try head() else { return (0, 0, []) }  // a new store: nothing was written yet
        // No record yet (a store from before rules existed): everything was written.
        let previousRules = previousBytes.flatMap { try? JSONDecoder().decode([SyncRule].self, from: Data($0)) } ?? []
        let before = PathPolicy(device: device, rules: previousRules)
        var additions: [TreeChange] = []
        var removed = 0
        var leftAlone: [FilePath] = []
        let index = try liveIndex()
        for file in try repo.treeFiles(try repo.commit(head).tree) {
            let was = before.materializes(file.path), now = policy.materializes(file.path)
            guard was != now else { continue }
            let side = ConflictSide(oid: file.oid, mode: file.mode)
            if now {
                if try FileStat.of(data.pushing(file.path)) == nil {
                    additions.append(TreeChange(path: file.path, old: nil, new: side))
                }
            } else if policy.rule(for: file.path)?.sync == .never {
                continue  // `never` makes the file this device's own: it stays as it is
            } else if diskMatches(file.path, side, entry: index.entry(file.path)) {
                // Out of the data directory only: the index (and so `main`) keeps it.
                if (try? Files.remove(data.pushing(file.path))) != nil {
                    removed += 1
                    pruneEmptyParents(of: file.path)
                }
            } else if try FileStat.of(data.pushing(file.path)) != nil {
                leftAlone.append(file.path)
            }
        }
        let report = try apply(additions)
        return (report.written, removed, leftAlone)
    }
}
