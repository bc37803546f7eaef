import FileSystem
import Git
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
        let packs = packFiles()
        let chosen = PackPlan.toCombine(sizes: packs.map(\.size), threshold: threshold).map { packs[$0] }
        guard !chosen.isEmpty else { return 0 }
        let name = try repo.writeCombinedPack(of: chosen.map { FilePath($0.base.string + ".idx") })
        Durability.flushFileSystem(containing: gitDir)
        // (The new pack has an old one's name only when it holds exactly that pack's objects.)
        for pack in chosen where pack.base.lastComponent?.string != "pack-" + name {
            // The index first: a pack without one is invisible to readers.
            for ext in ["idx", "pack", "rev", "bitmap", "mtimes"] {
                try? Files.remove(FilePath(pack.base.string + "." + ext))
            }
        }
        try repo.reloadObjects()
        return chosen.count
    }

    /// `objects/pack/pack-*.pack` files that have their `.idx` and no `.keep`.
    func packFiles() -> [PackFile] {
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
