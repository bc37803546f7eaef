import FileSystem
import Foundation
internal import Git
import Synchronization
import SystemPackage

/// A regular file's blob, written ahead of the commit loop, with the stat data it had before it was
/// read (the loop uses it only while the file still has exactly that stat data).
struct Prehashed: Sendable {
    let oid: Oid
    let stat: FileStat
}

extension Store {
    /// Below this many paths a batch is hashed in the commit loop itself.
    public static let prehashThreshold = 256

    /// Writes the blobs of the regular files among `paths` on as many threads as there are cores
    /// (at most 4), each with a repository handle of its own (libgit2 objects are never shared
    /// between threads). A file that changes while it is read is left to the commit loop.
    func prehash(_ paths: Set<FilePath>) -> [FilePath: Prehashed] {
        // In path order, a contiguous run per worker: each pack holds its files in the order a
        // peer's apply reads them (sorted, a run per worker), so reading a blob maps the pack
        // window the one before it used instead of a new one per file.
        let list = paths.sorted { $0.precedesInBytes($1) }
        let workers = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))
        guard workers > 1 else { return [:] }
        let found = Mutex<[FilePath: Prehashed]>([:])
        let gitDir = self.gitDir, data = self.data
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            guard let repo = try? Repository.open(gitDir: gitDir, workdir: data) else { return }
            // Small files go into packs written straight from memory: no inode per object, nothing
            // to repack later (a pack batch per worker, one pack each 32 MiB).
            let batch = try? PackBatch(gitDir: gitDir)
            var mine: [FilePath: Prehashed] = [:]
            for i in (list.count * worker / workers)..<(list.count * (worker + 1) / workers) {
                let path = list[i]
                guard !PathRules.isIgnored(path: path),
                      let stat = (try? FileStat.of(data.pushing(path))) ?? nil, stat.kind == .regular,
                      case .written(let oid)? = try? repo.writeBlob(fromFile: data.pushing(path), batch: batch),
                      let again = (try? FileStat.of(data.pushing(path))) ?? nil, again == stat else { continue }
                mine[path] = Prehashed(oid: oid, stat: stat)
            }
            // Objects still in memory are not in the store: without their pack, none of this
            // worker's results is used (the commit loop reads those files itself).
            if let batch, (try? batch.flush()) == nil { return }
            found.withLock { $0.merge(mine) { a, _ in a } }
        }
        return found.withLock { $0 }
    }
}

extension IndexStat {
    /// The stat data of a file as `lstat` gave it.
    init(_ st: FileStat) {
        self.init(size: st.size, mtimeSeconds: st.mtimeSeconds, mtimeNanoseconds: st.mtimeNanoseconds,
                  ctimeSeconds: st.ctimeSeconds, ctimeNanoseconds: st.ctimeNanoseconds, inode: st.inode, device: st.device)
    }
}
