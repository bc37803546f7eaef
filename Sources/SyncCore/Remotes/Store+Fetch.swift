import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// Told as objects move between stores: (objects so far, objects in all when known, bytes so far).
public typealias Transfer = @Sendable (_ objects: Int, _ total: Int?, _ bytes: Int) -> Void

extension Store {
    public static func trackingRef(_ peer: String) -> String { "refs/remotes/\(peer)/main" }

    /// Fetches a peer's `main` and conflict records into tracking refs. Opens its own repository
    /// object, so it may run on any thread while the store's owner goes on.
    /// A peer whose store is on this machine (`localGitDir`) is not fetched through libgit2's
    /// local transport, which builds a pack in memory (a 1 GiB file cost 2 GiB): the objects this
    /// store lacks are copied one by one, big blobs through a fixed buffer, then the tracking
    /// references move once the copies are durable.
    /// Returns how many objects were copied from a peer on this machine (0 for a fetch through a
    /// transport, which libgit2 does not count here).
    @discardableResult
    public static func fetch(gitDir: FilePath, data: FilePath, peer: String, url: String, localGitDir: FilePath? = nil,
                             auth: PeerAuth? = nil, shouldCancel: @escaping () -> Bool = { false },
                             transfer: Transfer? = nil) throws -> Int {
        let repo = try Repository.open(gitDir: gitDir, workdir: data)
        if let localGitDir {
            let (main, book, copied) = try throughRollUps(of: localGitDir) { source throws(GitError) in
                let main = try source.resolveReference(Store.mainRef)
                let book = try source.resolveReference(ConflictBook.ref)
                let copied = try copyDurably(into: repo, gitDir: gitDir, from: source, tips: [main, book].compactMap { $0 },
                                             shouldCancel: shouldCancel, transfer: transfer)
                return (main, book, copied)
            }
            if let main { try repo.setReference(trackingRef(peer), to: main, message: "syncagent: copy from \(peer)") }
            if let book { try repo.setReference(ConflictBook.peerRef(peer), to: book, message: "syncagent: copy from \(peer)") }
            return copied
        }
        try durably(gitDir: gitDir) { () throws(GitError) in
            try repo.fetch(url: url, refspecs: ["+refs/heads/main:\(trackingRef(peer))",
                                                "+\(ConflictBook.ref):\(ConflictBook.peerRef(peer))"],
                           auth: auth?.remote, shouldCancel: shouldCancel, transfer: transfer)
        }
        return 0
    }

    /// Works with a store on this machine whose packs another process may roll up meanwhile (a
    /// hub's pushing devices, a peer's store care): a pack listed when the store was opened can be
    /// gone by the time its index or data is read, its objects already in the pack that replaced
    /// it. That is no fault of the store nor of its url: `body` runs again on the store opened
    /// anew, up to `attempts` times, before the error stands. Reading from it (a hub of 100 devices
    /// in a burst: the warning "cannot fetch ... check the peer's url" came twice a burst, for
    /// nothing), and copying into it (a push to a hub on a path: this store's care rolls its own
    /// packs up too). libgit2 itself skips a vanished pack on a lookup and looks again on a read
    /// that misses: what fails is a pack listed, then read by path (`PackTransfer`), in either store.
    static func throughRollUps<T>(of dir: FilePath, attempts: Int = 4,
                                  _ body: (Repository) throws(GitError) -> T) throws(GitError) -> T {
        var attempt = 1
        while true {
            do {
                return try body(try Repository.openForReading(gitDir: dir))
            } catch {
                guard attempt < attempts, packVanished(error) else { throw error }
                attempt += 1
            }
        }
    }

    /// Whether `error` says a pack's file was not there to open (the pure step of
    /// `throughRollUps`; libgit2 names the file, under the store's path as it spells it).
    static func packVanished(_ error: GitError) -> Bool {
        error.osError == ENOENT && error.message.contains("/objects/pack/pack-")
    }

    /// Copies the objects behind `tips` that this store lacks from a store on this machine, and
    /// makes them durable before any ref may point at them: the loose files it wrote and the packs
    /// that are new in `objects/pack` (written, linked or indexed), an fsync each, so what else is
    /// waiting on the file system (the peer's data directory, when it shares it) is not written out
    /// on the way; when that fails, the whole file system.
    /// A copy that fails or is cancelled flushes the file system too: the packs it put in place
    /// stay, and a later copy, finding their objects here, would not write (nor flush) them again.
    @discardableResult
    static func copyDurably(into repo: Repository, gitDir: FilePath, from source: Repository, tips: [Oid], refTips: [Oid]? = nil,
                            limits: ObjectCopyLimits = ObjectCopyLimits(),
                            shouldCancel: @escaping () -> Bool, transfer: Transfer? = nil) throws(GitError) -> Int {
        let before = packFiles(in: gitDir)
        let report: ObjectCopyReport
        do {
            report = try repo.copyMissingObjects(from: source, tips: tips, limits: limits, refTips: refTips, progress: { made in
                transfer?(made.objects, nil, made.bytes)
                return !shouldCancel()
            })
        } catch {
            Durability.flushFileSystem(containing: gitDir)
            throw error
        }
        // (Nothing copied may still rely on young objects here: a commit present that no ref reached.)
        guard report.objects > 0 || !report.reliedLoose.isEmpty else { return 0 }
        // What the copy wrote, and what it relied on that may not be on disk yet: young loose
        // objects its trees name, and young packs (a commit's batch, written ahead of its flush).
        flushNew(in: gitDir, packsSince: before,
                 loose: (report.looseIds + report.reliedLoose).map(repo.looseObjectPath) + recentPacks(in: gitDir),
                 packsWritten: report.packs + report.wholePacks > 0)
        return report.objects
    }

    /// Of the versions the data directory is still to get (`unapplied`), the ids this store lacks:
    /// a power cut took their objects while a ref kept naming them (seed 9503, cut 65). No fetch
    /// brings them again (the refs say the store has everything), so every retry failed.
    public func missingUnappliedObjects() throws -> [ObjectID] {
        let unapplied = loadUnapplied()
        guard !unapplied.isEmpty, let head = try head() else { return [] }
        let tree = try repo.commit(head).tree
        var out: [ObjectID] = []
        for path in unapplied.keys {
            guard let entry = try repo.entry(at: path, inTree: tree), entry.mode != EntryMode.tree,
                  !repo.hasObject(entry.oid) else { continue }
            out.append(ObjectID(entry.oid))
        }
        return out
    }

    /// Copies these objects from stores on this machine (the peers' and hubs' `gitDirs`) that have
    /// them, made durable; returns how many came.
    public func copyObjects(_ ids: [ObjectID], fromLocal gitDirs: [FilePath]) -> Int {
        var wanted = ids.map(\.oid)
        var copied = 0
        for dir in gitDirs where !wanted.isEmpty {
            guard let source = try? Repository.openForReading(gitDir: dir) else { continue }
            let before = Self.packFiles(in: gitDir)
            guard let report = try? repo.copyObjects(wanted, from: source), report.objects > 0 else { continue }
            Self.flushNew(in: gitDir, packsSince: before, loose: report.looseIds.map(repo.looseObjectPath),
                          packsWritten: report.packs > 0)
            copied += report.objects
            wanted.removeAll { repo.hasObject($0) }
        }
        return copied
    }

    /// The packs and indexes in `objects/pack` changed in the last `ObjectCopyReport.recentSeconds`.
    static func recentPacks(in gitDir: FilePath) -> [FilePath] {
        let packs = gitDir.appending("objects").appending("pack")
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return (packFiles(in: gitDir) ?? []).map { packs.appending($0) }.filter { path in
            guard let stat = (try? FileStat.of(path)) ?? nil else { return false }
            return Int64(now.tv_sec) - stat.ctimeSeconds <= ObjectCopyReport.recentSeconds
        }
    }

    /// The packs and their indexes in `objects/pack` (`pack-*.pack`, `pack-*.idx`: not the
    /// temporary files a pack is written under); nil when the folder cannot be read.
    static func packFiles(in gitDir: FilePath) -> Set<FilePath.Component>? {
        guard let entries = try? Directory.entries(of: gitDir.appending("objects").appending("pack")) else { return nil }
        return Set(entries.map(\.name).filter { name in
            name.stem.hasPrefix("pack-") && (name.extension == "pack" || name.extension == "idx")
        })
    }

    /// Makes durable what a fetch or a copy wrote: the packs new in `objects/pack` since `before`
    /// and the `loose` files, an fsync each; the whole file system when that fails, when a listing
    /// failed, or when `packsWritten` and no new pack is listed (what to flush is not known).
    static func flushNew(in gitDir: FilePath, packsSince before: Set<FilePath.Component>?, loose: [FilePath],
                         packsWritten: Bool) {
        let objects = gitDir.appending("objects"), packs = objects.appending("pack")
        guard let before, let new = packFiles(in: gitDir)?.subtracting(before),
              !packsWritten || new.contains(where: { $0.extension == "pack" }) else {
            return Durability.flushFileSystem(containing: gitDir)
        }
        guard !new.isEmpty || !loose.isEmpty else { return }
        if !Durability.flushImmutable(new.map { packs.appending($0) } + loose, andDirectories: [objects, packs]) {
            Durability.flushFileSystem(containing: gitDir)
        }
    }

    /// Runs a fetch, then makes the packs it wrote durable (an fsync each, or one `syncfs` when
    /// that fails), so everything a fetch brings is on disk before any ref of ours points at it and
    /// a fast-forward to it flushes nothing more (`integrateMain`). libgit2's fetch writes packs
    /// only (its indexer), never loose objects.
    /// A fetch that fails after libgit2 put a pack in place leaves it too: flushed all the same
    /// (as `copyDurably` does), so every pack in the store is durable and a write that finds an
    /// object already packed needs no flush of its own.
    static func durably(gitDir: FilePath, _ fetch: () throws(GitError) -> Void) throws(GitError) {
        let before = packFiles(in: gitDir)
        defer { flushNew(in: gitDir, packsSince: before, loose: [], packsWritten: false) }
        try fetch()
    }
}

extension Store {
    /// Whether this store is in step with a direct peer whose store is on this machine: the
    /// peer's `main` is this store's `main`, and its conflict records are the ones last fetched
    /// from it. A round would then fetch and merge nothing, so the idle safety poll (a net for a
    /// ref watch that lost its directory) costs a few small reads instead of a round: opening two
    /// repositories and a copy plan were about 10 ms of CPU each time, five times the idle target.
    /// `peerRefs`: the peer's refs, read whole (`RefSnapshot.readPeer`: the safety poll has read
    /// them already, to tell a move its watch missed). False
    /// when one of ours cannot be read or the peer has no `main` (the round then says why).
    public static func inStep(gitDir: FilePath, withPeer peer: String, peerRefs theirs: RefSnapshot) -> Bool {
        let ours = RefSnapshot.read(gitDir: gitDir, under: ["refs/heads/", "refs/remotes/\(peer)/"])
        guard ours.whole, let main = theirs.refs[Array(mainRef.utf8)] else { return false }
        return ours.snapshot.refs[Array(mainRef.utf8)] == main
            && ours.snapshot.refs[Array(ConflictBook.peerRef(peer).utf8)] == theirs.refs[Array(ConflictBook.ref.utf8)]
    }
}
