import FileSystem
internal import Git
import SystemPackage

/// After the machine stopped under the agent (`AgentSession`): what a power cut did to files the
/// user's programs wrote without flushing them is told apart from an edit, and never committed
/// over the versions the peers hold.
extension Store {
    /// Of these changed paths, the tracked files a power cut damaged rather than a person edited:
    /// gone, emptied (the index recorded bytes there), or older or shorter than the version the index
    /// recorded (a modification time before the recorded one: the disk went back in time). A file
    /// with a newer time and any size is an edit made before the cut and is committed as usual
    /// (in-place rewrites the program never flushed may then be a mix: nothing can tell).
    public func powerCutDamage(among paths: [FilePath]) throws -> [FilePath] {
        let index = try liveIndex()
        var damaged: [FilePath] = []
        for path in paths {
            // Gone: a file whose name never reached the disk (made, or moved there, and never
            // flushed with its directory). Its committed version comes back. (A deletion the user's
            // program did flush, not committed before the cut, comes back too: nothing is lost, and
            // deleting it again syncs.)
            if ((try? FileStat.of(data.pushing(path))) ?? nil) == nil {
                let tracked = [index.entry(path)].compactMap { $0 } + index.entries(under: path)
                damaged += tracked.map(\.path).filter { policy.materializes($0) && !DirectoryMarker.isMarker($0) && ((try? FileStat.of(data.pushing($0))) ?? nil) == nil }
                continue
            }
            guard let entry = index.entry(path), !entry.isLink, policy.materializes(path),
                  let stat = (try? FileStat.of(data.pushing(path))) ?? nil, stat.kind == .regular else { continue }
            let recordedTime = (Int64(entry.mtimeSeconds), Int64(entry.mtimeNanoseconds))
            let hasStat = recordedTime != (0, 0)
            let diskTime = (stat.mtimeSeconds, stat.mtimeNanoseconds)
            let committedSize: Int64 = hasStat ? Int64(entry.size) : ((try? repo.blobSize(entry.oid)) ?? 0)
            if stat.size == 0 && committedSize > 0 { damaged.append(path); continue }
            guard hasStat else { continue }
            if diskTime < recordedTime || (stat.size < committedSize && diskTime == recordedTime) { damaged.append(path) }
        }
        return Array(Set(damaged)).sortedInBytes()
    }

    /// Puts `main`'s version back at these paths; what the disk held is kept in the store first
    /// (`refs/syncagent/kept`, whose commit this returns). What the apply could not write is in the
    /// report (`localChanges`: written again meanwhile, left as it is).
    public func putBackCommitted(_ paths: [FilePath]) throws -> (report: ApplyReport, kept: ObjectID?) {
        let kept = try keepLocalBytes(paths, why: "what a power cut left on disk")
        let tree = try head().map { id throws in try repo.commit(id).tree }
        var changes: [TreeChange] = []
        for path in paths.sortedInBytes() {
            guard let wanted = try tree.flatMap({ t throws in try repo.entry(at: path, inTree: t) }), wanted.mode != EntryMode.tree else { continue }
            changes.append(TreeChange(path: path, old: try diskSide(path), new: wanted))
        }
        let report = try apply(changes)
        return (report, kept?.id)
    }
}
