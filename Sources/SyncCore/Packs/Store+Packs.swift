import FoundationEssentials
import Glibc
import FileSystem
internal import Git
internal import ObjectStorage
import SystemPackage

extension Store {
    /// A finished pack in `objects/pack`: its `.pack` file and size.
    struct PackFile {
        let base: FilePath  // objects/pack/pack-<id>, without extension
        let size: Int
    }

    /// Keeps the number of pack files small (see `PackPlan`): every fetch brings one pack, and a
    /// store with thousands of them costs a file descriptor, an index map and a lookup slot each.
    /// Rolls the small packs up into one, makes it durable, removes them and reopens the object
    /// database. Returns how many packs were combined (0: nothing to do). Nothing is lost if it
    /// fails or is killed half-way: the old packs are removed only after the new one is on disk.
    @discardableResult
    public func compactPacks(threshold: Int = PackPlan.threshold) throws -> Int {
        let chosen = packsToCombine(threshold: threshold)
        guard !chosen.isEmpty else { return 0 }
        let name = try repo.writeCombinedPack(of: chosen.map { $0.addingToName(".idx") }, deflating: true)
        try finishCombining(chosen, into: name)
        return chosen.count
    }

    /// The packs (`objects/pack/pack-<id>`, no extension) to roll up now, at most
    /// `PackPlan.maxObjects` objects of them; empty when none.
    public func packsToCombine(threshold: Int = PackPlan.threshold) -> [FilePath] {
        let packs = packFiles()
        let chosen = PackPlan.toCombine(sizes: packs.map(\.size), threshold: threshold)
        var objects = [Int](repeating: 0, count: packs.count)
        for i in chosen {
            var index = packs[i].base
            index.extension = "idx"
            objects[i] = Repository.objectCount(packIndex: index) ?? 0
        }
        return PackPlan.capped(chosen, objects: objects).map { packs[$0].base }
    }

    /// A pack (`objects/pack/pack-<id>`, no extension) worth rewriting with its documents deflated
    /// (`PackFileWriter.deflateAtRest`: a commit or fetch of many files frames them in stored
    /// blocks and leaves deflate for when the store is at rest): the first whose sampled bytes are
    /// at least `deflateShare` such objects, largest pack first. Packs judged not worth it go into
    /// `judged` and are not read again (a pack's bytes never change under its name).
    /// A pack of more than `PackPlan.maxObjects` objects is left as it is (a roll-up holds a list
    /// of every object until the new index is written: a first commit of 100k tiny files would
    /// cost the agent about 10 MB for a moment, to save little).
    public func packToDeflate(judged: inout Set<String>) -> FilePath? {
        let packs = packFiles()
        judged.formIntersection(packs.map { $0.base.lastComponent?.string ?? "" })  // (removed packs are forgotten)
        for pack in packs.sorted(by: { $0.size > $1.size }) {
            let name = pack.base.lastComponent?.string ?? ""
            guard !judged.contains(name) else { continue }
            var index = pack.base
            index.extension = "idx"
            guard let objects = Repository.objectCount(packIndex: index) else { continue }
            guard objects <= PackPlan.maxObjects else {
                judged.insert(name)
                continue
            }
            guard let share = Repository.deflatableShare(packIndex: index) else { continue }  // (asked again next time)
            if share >= Self.deflateShare { return pack.base }
            judged.insert(name)
        }
        return nil
    }

    /// A pack is rewritten at rest when at least this share of its bytes would be deflated.
    public static let deflateShare = 0.25

    /// Writes one pack of the objects of these packs into the store at `gitDir`, on the caller's
    /// thread with a repository handle of its own (the slow half of a roll-up, kept off the
    /// engine: a new pack only adds objects). `deflating`: the store is at rest, so objects left in
    /// stored blocks are deflated into it. Returns its name, for `finishCombining`.
    public static func writeCombinedPack(gitDir: FilePath, of packs: [FilePath], deflating: Bool) throws -> String {
        try Repository.openForReading(gitDir: gitDir).writeCombinedPack(of: packs.map { $0.addingToName(".idx") }, deflating: deflating)
    }

    /// Makes these new packs durable (pack and index, and the directory naming them) before what
    /// they replace goes: an fsync each, not `syncfs` (which a FUSE file system never sees, and
    /// which waits for every other program's writes too); `syncfs` only when that fails.
    static func flushPacks(_ names: [String], gitDir: FilePath) {
        let dir = gitDir.appending("objects").appending("pack")
        let files = names.flatMap { name in ["pack", "idx", "rev"].map { dir.appending("pack-\(name).\($0)") } }
        if !Durability.flushExistingImmutable(files, andDirectories: [dir]) { Durability.flushFileSystem(containing: gitDir) }
    }

    /// The quick half of a roll-up, on the store's own thread: the new pack made durable, the packs
    /// it holds removed (the index first: a pack without one is invisible to readers), the object
    /// database reopened. Nothing is lost if it is never called: the objects are then stored twice.
    public func finishCombining(_ packs: [FilePath], into name: String) throws {
        Self.flushPacks([name], gitDir: gitDir)
        // (The new pack has an old one's name only when it holds exactly that pack's objects.)
        for pack in packs where pack.lastComponent?.string != "pack-" + name {
            let files = ["idx", "pack", "rev", "bitmap", "mtimes"].map { pack.addingToName("." + $0) }
            for file in files { try? Files.remove(file) }
            DurableFiles.forget(files)
        }
        try repo.reloadObjects()
    }

    /// `objects/pack/pack-*.pack` files that have their `.idx` and no `.keep`.
    func packFiles() -> [PackFile] { Self.packFiles(of: gitDir) }

    /// A hub on a path gets one new pack per push (libgit2's local transport writes one; a git
    /// server would unpack small pushes and run its own `gc`), and nobody else packs it: after
    /// months, every device's every lookup there would scan thousands. After a push, the pushing
    /// device rolls the hub's small packs up the way store care does its own (`PackPlan`), off
    /// the engine. Safe beside other devices reading, pushing and compacting: a pack goes only
    /// after a durable pack holding all its objects is in place (readers that miss an object look
    /// again and find it there), and a device that finds the hub being compacted
    /// (`objects/pack/syncagent-compacting`, younger than ten minutes) leaves it to that one.
    /// Returns how many packs were combined.
    /// More small packs than a device's own store tolerates before a roll-up: every device of a
    /// burst pushes, and a roll-up every few pushes was more work than the lookups it saved.
    public static let hubPackThreshold = 32

    @discardableResult
    public static func compactHubPacks(hubGitDir: FilePath, threshold: Int = Store.hubPackThreshold) throws -> Int {
        func choose() -> [FilePath] {
            let packs = packFiles(of: hubGitDir)
            return PackPlan.toCombine(sizes: packs.map(\.size), threshold: threshold).map { packs[$0].base }
        }
        guard !choose().isEmpty else { return 0 }
        let lock = hubGitDir.appending("objects").appending("pack").appending("syncagent-compacting")
        if let stat = try? FileStat.of(lock), Int64(Date().timeIntervalSince1970) - stat.mtimeSeconds > 600 {
            try? Files.remove(lock)  // left by an agent killed while compacting
        }
        guard (try? Files.create(lock, bytes: Array("\(getpid())\n".utf8), executable: false)) != nil else { return 0 }
        defer { try? Files.remove(lock) }
        // A push, copy or roll-up killed mid-way leaves temporaries behind; other devices may be
        // writing theirs right now, so only those an hour old go.
        _ = removeTemporaries(of: hubGitDir, modifiedBefore: Int64(Date().timeIntervalSince1970) - 3600)
        // Listed again under the lock: another device may have just rolled them up.
        let chosen = choose()
        guard !chosen.isEmpty else { return 0 }
        let name = try writeCombinedPack(gitDir: hubGitDir, of: chosen, deflating: true)
        Durability.flushFileSystem(containing: hubGitDir)
        var kept: [String] = []
        for pack in chosen where pack.lastComponent?.string != "pack-" + name {
            for ext in ["idx", "pack", "rev", "bitmap", "mtimes"] {
                do {
                    try Files.remove(pack.addingToName("." + ext))
                } catch {  // (a file already gone is no error: another device removed it)
                    kept.append("\(pack).\(ext) (\(error))")
                }
            }
            DurableFiles.forget(["idx", "pack", "rev", "bitmap", "mtimes"].map { pack.addingToName("." + $0) })
        }
        // Not removable (another account's file on a shared hub): said, so packs do not pile up unseen.
        if !kept.isEmpty { throw HubPackError(kept: kept) }
        return chosen.count
    }

    static func packFiles(of gitDir: FilePath) -> [PackFile] {
        let dir = gitDir.appending("objects").appending("pack")
        let names = Set(((try? Directory.entries(of: dir)) ?? []).map { $0.name.string })
        var packs: [PackFile] = []
        for name in names where name.hasPrefix("pack-") && name.hasSuffix(".pack") {
            let stem = String(name.dropLast(".pack".count))
            guard names.contains(stem + ".idx"), !names.contains(stem + ".keep"),
                  let stat = try? FileStat.of(dir.appending(name)) else { continue }
            packs.append(PackFile(base: dir.appending(stem), size: Int(stat.size)))
        }
        return packs
    }
}

/// What one slice of `packLooseObjects` did.
public struct LoosePackSlice: Sendable {
    /// Loose objects now in the new pack (their loose files removed).
    public var packed = 0
    /// Loose objects left loose on purpose: blobs bigger than `keepLooseAbove` (written out in
    /// chunks only while loose).
    public var keptLoose = 0
    /// Whether the slice was full, so more loose objects may wait.
    public var more = false
}

extension Store {
    /// Loose objects below this count are left alone (a pack per handful of objects would only
    /// make more packs to roll up).
    public static let looseMinimum = 256
    /// Loose files above this size are looked at for bytes stored uncompressed (`writeLoosePack`).
    static let storedFrom = 64 << 10

    /// Moves up to `maxObjects` loose objects into one new pack and removes their loose files:
    /// nothing is ever dropped or made unreachable, every object stays in the store, only where it
    /// is kept changes. The pack is made durable and checked to hold each object before that
    /// object's loose file goes. Blobs bigger than `keepLooseAbove` stay loose (they are streamed
    /// out of loose files only). Fewer than `minimum` loose objects: nothing is done.
    public func packLooseObjects(maxObjects: Int = 4096, maxBytes: Int = 16 << 20, minimum: Int = Store.looseMinimum,
                                 keepLooseAbove: Int = 16 << 20) throws -> LoosePackSlice {
        let written = try Self.writeLoosePack(repo: repo, gitDir: gitDir, maxObjects: maxObjects, maxBytes: maxBytes,
                                              minimum: minimum, keepLooseAbove: keepLooseAbove)
        return try finishLoosePack(written)
    }

    /// A pack of loose objects, written and checked, whose loose files may now go.
    public struct WrittenLoosePack: Sendable {
        var slice = LoosePackSlice()
        /// The loose files of the objects the new pack holds.
        var held: [FilePath] = []
    }

    /// The slow half of `packLooseObjects`, on the caller's thread with a repository handle of its
    /// own (a new pack only adds objects): chooses a slice, writes it as one pack, makes it durable
    /// and checks which objects it holds. Nothing is removed here.
    public static func writeLoosePack(gitDir: FilePath, maxObjects: Int = 4096, maxBytes: Int = 16 << 20,
                                      minimum: Int = Store.looseMinimum, keepLooseAbove: Int = 16 << 20) throws -> WrittenLoosePack {
        try writeLoosePack(repo: try Repository.openForReading(gitDir: gitDir), gitDir: gitDir, maxObjects: maxObjects,
                           maxBytes: maxBytes, minimum: minimum, keepLooseAbove: keepLooseAbove)
    }

    static func writeLoosePack(repo: Repository, gitDir: FilePath, maxObjects: Int, maxBytes: Int, minimum: Int,
                               keepLooseAbove: Int) throws -> WrittenLoosePack {
        var written = WrittenLoosePack()
        let found = repo.looseObjects(limit: maxObjects)
        guard found.count >= minimum else { return written }
        written.slice.more = found.count == maxObjects
        var chosen: [LooseFile] = []
        var stored: [LooseFile] = []  // big blobs kept uncompressed: random bytes
        var input = 0
        for file in found {
            // Compressed at most ~1000:1, so only files over 16 KiB can hold a 16 MiB object.
            let size = file.bytes * 1032 > keepLooseAbove || file.bytes > Self.storedFrom ? (try? repo.objectSize(file.id)) : nil
            if file.bytes * 1032 > keepLooseAbove, size ?? Int.max > keepLooseAbove {
                written.slice.keptLoose += 1
                continue
            }
            // A loose file as big as its object holds bytes deflate could not shrink (a photo):
            // copied into a pack as they are, not through the pack builder, which deflated them
            // again (9 MB/s here) and looked for deltas among them.
            if file.bytes > Self.storedFrom, let size, file.bytes >= size {
                stored.append(file)
            } else {
                chosen.append(file)
            }
            input += file.bytes
            if input > maxBytes { written.slice.more = true; break }
        }
        let count = chosen.count + stored.count
        guard count >= minimum || (written.slice.more && count > 0) else { return written }
        let name = chosen.isEmpty ? nil : try repo.writePack(of: chosen.map(\.id))
        var batchNames: [String] = []
        if !stored.isEmpty {
            let batch = try PackBatch(gitDir: gitDir, flushBytes: Int.max)
            for file in stored {
                let bytes = try repo.blobData(file.id)
                let written: Result<Oid, GitError> = bytes.withUnsafeBytes { raw in Result { () throws(GitError) in try batch.write(raw) } }
                _ = try written.get()
            }
            try batch.flush()
            batchNames = batch.names
        }
        flushPacks((name.map { [$0] } ?? []) + batchNames, gitDir: gitDir)
        var held: Set<Oid> = []
        if let name { held.formUnion(try repo.pack(name, holds: chosen.map(\.id))) }
        for packed in batchNames { held.formUnion(try repo.pack(packed, holds: stored.map(\.id))) }
        written.held = (chosen + stored).filter { held.contains($0.id) }.map(\.path)
        return written
    }

    /// The quick half, on the store's own thread: the loose files of the objects the new pack
    /// holds go, then the object database is reopened.
    public func finishLoosePack(_ written: WrittenLoosePack) throws -> LoosePackSlice {
        var slice = written.slice
        guard !written.held.isEmpty else { return slice }
        for path in written.held where (try? Files.remove(path)) != nil { slice.packed += 1 }
        DurableFiles.forget(written.held)
        for dir in Set(written.held.map { $0.removingLastComponent() }) { _ = Files.removeEmptyDirectory(dir) }
        try repo.reloadObjects()
        return slice
    }

    /// What the store takes on disk (allocated blocks of every file under it).
    public func diskBytes() -> Int64 {
        var total: Int64 = 0
        Directory.walk(gitDir) { rel, _ in
            total += (try? FileStat.of(gitDir.pushing(rel)))??.allocated ?? 0
        }
        return total
    }
}

/// Packs of a hub that were rolled up but could not be removed.
public struct HubPackError: Error, CustomStringConvertible {
    public let kept: [String]
    public var description: String {
        "rolled up, but could not remove \(kept.prefix(3).joined(separator: ", "))\(kept.count > 3 ? " and \(kept.count - 3) more" : "")"
    }
}
