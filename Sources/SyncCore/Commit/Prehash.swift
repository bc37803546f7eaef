import FileSystem
import Dispatch
import FoundationEssentials
import Glibc
import Platform
internal import Git
internal import ObjectStorage
import Synchronization
import SystemPackage

/// A regular file's blob, written ahead of the commit loop, with the stat data it had while it was
/// read. A write after that is an event of its own (or, with no agent running, a stat difference at
/// the next scan), so the commit loop takes the pair as it is.
struct Prehashed: Sendable {
    let oid: Oid
    let stat: FileStat
}

extension Store {
    /// Below this many paths a batch is hashed in the commit loop itself.
    public static let prehashThreshold = 256
    /// How many files a big batch hashes ahead at a time (see `commit(paths:)`).
    static let prehashChunk = 4096

    /// Writes the blobs of the regular files among `paths` on as many threads as there are cores
    /// (at most 4), each with a repository handle of its own (libgit2 objects are never shared
    /// between threads). A file that changes while it is read is left to the commit loop.

    /// Starts hashing `paths` on other threads and returns at once (nil for a batch small enough
    /// to hash in the commit loop): the start-up commit hashes its next chunk while the engine
    /// commits the one before. Give the job to `commit(paths:ahead:)`. `always`: however few the
    /// paths (a slice of big files, `slicesBySize`).
    public func prehashAhead(_ paths: Set<FilePath>, always: Bool = false) -> PrehashJob? {
        // Never the files this device does not keep (`never`, another device's): nothing would
        // name their blobs.
        let list = policy.rules.isEmpty ? paths : paths.filter { policy.materializes($0) }
        guard always || list.count >= Self.prehashThreshold, !list.isEmpty else { return nil }
        return PrehashJob(list: list.sortedInBytes(), gitDir: gitDir, data: data)
    }

    /// - Parameter list: in path order (`precedesInBytes`), a contiguous run per worker: each pack
    ///   holds its files in the order a peer's apply reads them, so reading a blob maps the pack
    ///   window the one before it used instead of a new one per file.
    /// Also returns the names of the packs the workers finished (`PackBatch.names`), which the
    /// commit makes durable before its ref names their objects; nil when some id found is not in
    /// them (an object already in another of the store's packs: the commit flushes the file system).
    static func prehash(_ list: [FilePath], gitDir: FilePath, data: FilePath,
                        cancelled: @Sendable () -> Bool = { false }) -> (found: [FilePath: Prehashed], packs: [String]?, written: [String]) {
        let workers = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))
        guard workers > 1 else { return ([:], [], []) }
        // At its size: merged into as it grew, it was copied at each doubling (two tables alive).
        let found = Mutex<[FilePath: Prehashed]>(Dictionary(minimumCapacity: list.count))
        let packs = Mutex<[String]?>([])
        let written = Mutex<[String]>([])
        inParallel(workers: workers) { worker in
            guard let repo = try? Repository.open(gitDir: gitDir, workdir: data) else { return }
            // Small files go into packs written straight from memory: no inode per object, nothing
            // to repack later (a pack batch per worker, one pack each 32 MiB).
            // Without a batch nothing is hashed here: a loose object written through this handle
            // would be in no list the commit flushes.
            guard let batch = try? PackBatch(gitDir: gitDir) else { return }
            // Every pack it finished, also when cancelled below (`PrehashJob.cancel` flushes them).
            defer { written.withLock { $0 += batch.names } }
            let range = (list.count * worker / workers)..<(list.count * (worker + 1) / workers)
            var mine: [FilePath: Prehashed] = [:]
            mine.reserveCapacity(range.count)
            var stats = Repository.blankStats
            for i in range {
                if cancelled() { return }  // its pack, unfinished, is dropped with the batch
                let path = list[i]
                // One open and two fstats per file: what was read is what the file held from the
                // first fstat to the second (a symbolic link, a FIFO or a file that changed meanwhile
                // is left to the commit loop).
                guard !PathRules.isIgnored(path: path),
                      case .written(let oid)? = try? repo.writeBlob(fromFile: data.pushing(path), batch: batch, stats: &stats)
                else { continue }
                let before = FileStat(stats.before)
                guard before.kind == .regular, FileStat(stats.after) == before else { continue }
                mine[path] = Prehashed(oid: oid, stat: before)
            }
            // Objects still in memory are not in the store: without their pack, none of this
            // worker's results is used (the commit loop reads those files itself).
            defer { packs.withLock { $0 = batch.foundStored ? nil : $0.map { $0 + batch.names } } }
            if (try? batch.flush()) == nil { return }
            found.withLock { $0.merge(mine) { a, _ in a } }
        }
        return (found.withLock { $0 }, packs.withLock { $0 }, written.withLock { $0 })
    }
}

/// The blobs of a batch's files, being hashed on threads of their own (`Store.prehashAhead`).
public final class PrehashJob: @unchecked Sendable {
    private let finished = DispatchSemaphore(value: 0)
    /// Written once by the hashing thread before `finished` is signalled; read only after it.
    private var found: [FilePath: Prehashed] = [:]
    private var packNames: [String]? = []
    /// Every pack the job finished, named or not in `packNames`.
    private var packsWritten: [String] = []
    private let packDir: FilePath
    private let stop = Atomic<Bool>(false)
    /// The coarse clock before any of the job's files was looked at (`Store.settledStat`).
    let startedAt = WriteStamp.coarseNow()

    /// - Parameter list: in path order (`precedesInBytes`).
    init(list: [FilePath], gitDir: FilePath, data: FilePath) {
        packDir = gitDir.appending("objects").appending("pack")
        // A named thread of its own (not Dispatch's global pool): it outlives this call, and
        // `ps -L` shows what it is.
        OwnThread.start(name: "syncagent-hash") { [self] in
            (found, packNames, packsWritten) = Store.prehash(list, gitDir: gitDir, data: data) { [self] in stop.load(ordering: .relaxed) }
            finished.signal()
        }
    }

    /// The files hashed, once every thread is done.
    func result() -> [FilePath: Prehashed] {
        finished.wait()
        finished.signal()  // for a second caller
        return found
    }

    /// The packs the job wrote (names as `PackBatch.names` gives them), once every thread is done;
    /// nil when some blob it found is in none of them.
    func packs() -> [String]? {
        _ = result()
        return packNames
    }

    /// Stops the hashing threads at their next file and waits until none of them writes into the
    /// store any more (a job whose batch will not be committed: a pack it finished stays behind,
    /// unreferenced, until the store is repacked). Those packs are made durable here: a copy from
    /// a peer that finds one of their blobs skips it, and a ref may then reach it with nothing
    /// else flushing it (rare: a stop during the start-up commit, a commit that failed).
    public func cancel() {
        stop.store(true, ordering: .relaxed)
        _ = result()
        let files = packsWritten.flatMap { [packDir.appending("pack-\($0).pack"), packDir.appending("pack-\($0).idx")] }
        if !files.isEmpty, !Durability.flushFiles(files, andDirectories: [packDir]) {
            Durability.flushFileSystem(containing: packDir)
        }
    }
}
