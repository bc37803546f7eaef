import FileSystem
import FoundationEssentials
import Glibc
import HubSeal
internal import Git
internal import ObjectStorage
import Synchronization
import SystemPackage

/// What an encrypted hub refused to be believed about, or could not be read with this key: said
/// with the hub, the device branch, and what to do. Nothing of that fetch is applied.
public struct SealedHubError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case wrongKey, tampered, replayed, plain }
    public let kind: Kind
    public let hub: String
    public let detail: String
    /// A push names a commit no push opened so far holds (another device's branch may bring it).
    let tipsNotHere: Bool

    public init(kind: Kind, hub: String, detail: String) {
        self.init(kind: kind, hub: hub, detail: detail, tipsNotHere: false)
    }

    init(kind: Kind, hub: String, detail: String, tipsNotHere: Bool) {
        self.kind = kind
        self.hub = hub
        self.detail = detail
        self.tipsNotHere = tipsNotHere
    }
    public var description: String {
        switch kind {
        case .wrongKey:
            "the encrypted hub \(hub) holds data this device's key cannot open (\(detail)): the key differs from the one the "
                + "other devices use. Copy the hub's key file from a device that syncs (`key_file` in its config); nothing was applied."
        case .tampered:
            "the encrypted hub \(hub) gave data that fails its check (\(detail)): it was changed on the hub or on the way. "
                + "Nothing of it was applied; check the hub's disk and who can write to it."
        case .replayed:
            "the encrypted hub \(hub) shows an older or rewritten history (\(detail)): a hub must never go back. "
                + "Nothing of it was applied; restore the hub from a backup that is not older, or push again from the devices."
        case .plain:
            "the hub \(hub) holds unencrypted branches (\(detail)), written by a device without the hub's key or by an older "
                + "version. Give every device the key (`key_file`) and use a new, empty repository for the encrypted hub."
        }
    }
}

/// An encrypted hub (issue 48): each device pushes its history as sealed objects with a sealed
/// manifest per push to `refs/heads/devices/<HMAC of its name>`, through a bare repository of its
/// own beside the store (`<state>/hubs/<hub>.sealed.git`) that holds the sealed history; what it
/// opens from the others goes into the store as plain objects, and their `main`s and records into
/// the same tracking refs a plain hub fills, so merging is as with any hub.
extension Store {
    static func sealedDir(gitDir: FilePath, hub: String) -> FilePath {
        gitDir.removingLastComponent().appending("hubs").appending("\(hub).sealed.git")
    }

    /// The sealed side for this hub and key: made anew when the url or the key changed (a new
    /// hub, or a key rotated), so nothing sealed under the old key is believed to be there.
    static func openSealed(gitDir: FilePath, hub: String, stamp url: String, key: HubKey) throws -> (Repository, FilePath) {
        let path = sealedDir(gitDir: gitDir, hub: hub)
        let stamp = Array("\(url)\n\(key.deviceBranch("(fingerprint)"))\n".utf8)
        let stampFile = path.appending("syncagent-hub")
        if let old = try? Files.read(stampFile), old != stamp {
            let aside = path.removingLastComponent().appending("\(hub).sealed.old-\(getpid())")
            if (try? Files.rename(path, to: aside)) != nil { try? Files.removeTree(aside) }
            KnownOnHub.forget(path)
        }
        let repo = try Repository.openOrCreateBare(gitDir: path)
        // Sealed objects are random bytes: no delta search for them when a push builds its pack.
        // libgit2 1.5 reads its pack builder's big-file threshold from `pack.deltaCacheSize` (not
        // `pack.bigFileThreshold`): at 1, every object is "big" and none is searched. A search
        // over 2 MB sealed photos was 90% of a push's time (perf: `git_delta_create_from_index`).
        try? repo.ensureConfig("pack.deltaCacheSize", int64: 1)
        if (try? Files.read(stampFile)) != stamp {
            let fd = try FileDescriptor.open(stampFile, .writeOnly, options: [.create, .truncate], permissions: [.ownerReadWrite])
            try fd.closeAfter { _ = try fd.writeAll(stamp) }
        }
        return (repo, path)
    }

    static let sealedOut = "refs/heads/out"
    static let sealedPending = "refs/heads/pending"
    static func sealedFetched(_ branch: String) -> String { "refs/sealed/\(branch)" }
    static func sealedOpened(_ branch: String) -> String { "refs/opened/\(branch)" }
    static let sealSignature = Signature(name: "syncagent", email: "sealed@syncagent", time: 0)

    /// The plain ids the hub holds sealed (what this device pushed or opened): never sealed again.
    /// The file only grows (20 bytes an id), so a process keeps what it read and reads only what
    /// was added since (a push or a fetch of one change no longer reads every id the hub holds).
    struct KnownOnHub {
        let file: FilePath
        var ids: Set<Oid>
        /// Bytes of the file `ids` holds, and the file's inode (a sealed side made anew is another file).
        var bytes = 0
        var inode: UInt64 = 0

        private static let cache = Mutex<[FilePath: KnownOnHub]>([:])

        static func load(_ sealed: FilePath) -> KnownOnHub {
            let file = sealed.appending("syncagent-known")
            var known = cache.withLock { $0[file] } ?? KnownOnHub(file: file, ids: [])
            guard let stat = (try? FileStat.of(file)) ?? nil else {
                cache.withLock { $0[file] = nil }  // a sealed side made anew: nothing of the old one is believed
                return KnownOnHub(file: file, ids: [])
            }
            if stat.inode != known.inode || Int(stat.size) < known.bytes { known = KnownOnHub(file: file, ids: [], inode: stat.inode) }
            if Int(stat.size) > known.bytes, let fd = try? FileDescriptor.open(file, .readOnly) {
                defer { try? fd.close() }
                var more = [UInt8](repeating: 0, count: Int(stat.size) - known.bytes)
                let got = (try? more.withUnsafeMutableBytes { try fd.read(fromAbsoluteOffset: Int64(known.bytes), into: $0) }) ?? 0
                let whole = got / 20 * 20
                var i = 0
                while i < whole { known.ids.insert(Oid(bytes: more[i..<(i + 20)])); i += 20 }
                known.bytes += whole
                // A write cut short (a full disk, a power cut): later records stay aligned.
                if got == more.count, got % 20 != 0 {
                    _ = file.withPlatformString { truncate($0, off_t(known.bytes)) }
                }
            }
            cache.withLock { $0[file] = known }
            return known
        }

        /// Drops what this process read of `sealed`'s file (the sealed side is being made anew).
        static func forget(_ sealed: FilePath) {
            _ = cache.withLock { $0.removeValue(forKey: sealed.appending("syncagent-known")) }
        }

        mutating func add(_ more: [Oid]) throws {
            guard !more.isEmpty else { return }
            let fd = try FileDescriptor.open(file, .writeOnly, options: [.create, .append], permissions: [.ownerReadWrite])
            try fd.closeAfter { _ = try fd.writeAll(more.flatMap(\.bytes)) }
            ids.formUnion(more)
            if let stat = (try? FileStat.of(file)) ?? nil {
                if stat.inode != inode { self = Self.load(file.removingLastComponent()) } else if Int(stat.size) == bytes + 20 * more.count {
                    bytes += 20 * more.count
                    Self.cache.withLock { $0[file] = self }
                }
            }
        }
    }

    /// Past this many objects a push seals, or a fetch opens, into a pack of their own rather than
    /// one loose file each (3,000 new files were 3,000 files created, then read again to be packed).
    static let sealedLooseLimit = 64

    /// Of objects this store had already, the loose files young enough that their own writer may
    /// not have made them durable yet (`Repository.isYoungLoose`), and the young packs: flushed
    /// with what a fetch opened, before a ref names them all.
    static func youngRelied(_ ids: [Oid], in repo: Repository) -> [FilePath] {
        guard !ids.isEmpty else { return [] }
        return ids.filter(repo.isYoungLoose).map(repo.looseObjectPath) + recentPacks(in: repo.gitDir)
    }

    private static func manifest(of envelope: Oid, in sealed: Repository, key: HubKey, branch: String, hub: String) throws -> HubManifest {
        let root = try sealed.commit(envelope).tree
        guard let m = try sealed.treeEntries(root).first(where: { $0.name == "m" && !$0.isTree }) else {
            throw SealedHubError(kind: .tampered, hub: hub, detail: "a push on branch \(branch.prefix(8)) has no manifest")
        }
        let bytes = try sealed.blobData(m.id)
        do throws(HubSealError) {
            return try key.openManifest(bytes, branch: branch)
        } catch .unreadable {
            throw SealedHubError(kind: .wrongKey, hub: hub, detail: "the manifest of a push on branch \(branch.prefix(8))")
        } catch {
            throw SealedHubError(kind: .tampered, hub: hub, detail: "\(error)")
        }
    }

    /// Seals what `main` and the records hold that the hub lacks, as one more push on this device's
    /// sealed branch, and pushes it (never forced).
    public static func sealedHubPush(gitDir: FilePath, data: FilePath, hub: String, url: String, stamp: String, device: String,
                                     key: HubKey, auth: PeerAuth?, shouldCancel: @escaping () -> Bool, transfer: Transfer?) throws -> HubPush {
        let repo = try Repository.open(gitDir: gitDir, workdir: data)
        guard let main = try repo.resolveReference(Store.mainRef) else { return .upToDate }
        let book = try repo.resolveReference(ConflictBook.ref)
        let (sealed, sealedPath) = try openSealed(gitDir: gitDir, hub: hub, stamp: stamp, key: key)
        let previous = try sealed.resolveReference(sealedOut)
        // Up to date only with pushes of this hub and key behind it (a new hub or key: everything again).
        if previous != nil, try repo.resolveReference(hubPushed(hub)) == main, try repo.resolveReference(hubRecords(hub, device)) == book {
            return .upToDate
        }
        var known = KnownOnHub.load(sealedPath)
        let branch = key.deviceBranch(device)
        let counter = try previous.map { try manifest(of: $0, in: sealed, key: key, branch: branch, hub: hub).counter } ?? 0
        let envelope: Oid
        let objects: [Oid]
        if let pending = try sealed.resolveReference(sealedPending), pending != previous,
           try sealed.commit(pending).parents == (previous.map { [$0] } ?? []),
           let m = try? manifest(of: pending, in: sealed, key: key, branch: branch, hub: hub),
           m.counter == counter + 1, m.main == main.hex, m.records == book?.hex {
            // The same push again (the last one failed or timed out): sealed once, not per retry.
            envelope = pending
            objects = m.objects.compactMap(Oid.init(hex:))
        } else {
            objects = try repo.objectsBehind([main, book].compactMap { $0 }, known: { known.ids.contains($0) })
            sealed.recordWrites()
            let batch = objects.count > sealedLooseLimit ? try PackBatch(gitDir: sealedPath) : nil
            var entries: [(name: String, id: Oid, isTree: Bool)] = []
            for id in objects {
                let name = key.objectName(id.hex)
                let bytes = try key.sealObject(try repo.readRaw(id), name: name)
                entries.append((name, try batch?.writeBlob(bytes) ?? sealed.createBlob(bytes), false))
                if shouldCancel() { throw GitError(code: -1, errorClass: 0, message: "the push was cancelled", call: "seal") }
            }
            try batch?.flush()
            let pushed = HubManifest(device: device, counter: counter + 1, main: main.hex, records: book?.hex, objects: objects.map(\.hex))
            let root = try sealed.writeTree([("m", try sealed.createBlob(try key.sealManifest(pushed, branch: branch)), false),
                                             ("o", try sealed.writeTree(entries), true)])
            envelope = try sealed.createCommit(tree: root, parents: previous.map { [$0] } ?? [], author: sealSignature,
                                               committer: sealSignature, message: "sealed\n", updateRef: nil)
            // The push is kept until the hub has it: a retry (or the next push, after a power cut
            // that took what followed) finds it whole and sends it again, never a rival of it.
            flushObjects(of: sealed, written: sealed.takeWrites(), packs: batch?.packFiles ?? [])
            try sealed.setReference(sealedPending, to: envelope, message: "syncagent: to push to \(hub)")
            flushRefs([sealedPending], under: sealedPath)
        }
        let refused = try sealed.push(url: url, refspecs: ["\(sealedPending):refs/heads/devices/\(branch)"], auth: auth?.remote,
                                      shouldCancel: shouldCancel, transfer: transfer)
        if let first = refused.first {
            // As with a plain hub: the server's words are shown, never read; a branch another
            // device moved under this name is told by the next fetch.
            let said = first.serverSaid.suffix(3).joined(separator: "; ")
            var refusal = HubRefusal(hub: hub, url: url, device: device, detail: "it refused this device's sealed branch "
                                     + "\(branch.prefix(8)): \(first.reason)" + (said.isEmpty ? "" : "; the server said: \(said)"))
            refusal.clash = false
            throw refusal
        }
        try sealed.setReference(sealedOut, to: envelope, message: "syncagent: pushed to \(hub)")
        flushRefs([sealedOut], under: sealedPath)
        try known.add(objects)  // (lost in a power cut: the next push seals those again, nothing worse)
        try repo.setReference(hubPushed(hub), to: main, message: "syncagent: pushed to \(hub)")
        try repo.setReference(hubBranch(hub, device), to: main, message: "syncagent: pushed to \(hub)")
        if let book { try repo.setReference(hubRecords(hub, device), to: book, message: "syncagent: pushed to \(hub)") }
        flushRefs([hubPushed(hub), hubBranch(hub, device)] + (book == nil ? [] : [hubRecords(hub, device)]), under: gitDir)
        return .pushed(ObjectID(main))
    }

    /// Fetches every device's sealed branch, checks and opens what is new (each push's manifest:
    /// whose it is, its number; each object: its name, its bytes, its id), writes the objects into
    /// the store and sets the devices' tracking refs; returns the other devices with work, in merge
    /// order. A branch the hub changed, dropped from, reordered or took back, or that this key
    /// cannot open, is refused on its own (`refused` hears why) and nothing of it is applied; the
    /// other devices' branches are taken as usual.
    public static func sealedHubFetch(gitDir: FilePath, data: FilePath, hub: String, url: String, stamp: String, device: String,
                                      key: HubKey, auth: PeerAuth?, shouldCancel: @escaping () -> Bool, transfer: Transfer?,
                                      refused: (SealedHubError) -> Void) throws -> [HubDevice] {
        let repo = try Repository.open(gitDir: gitDir, workdir: data)
        let (sealed, sealedPath) = try openSealed(gitDir: gitDir, hub: hub, stamp: stamp, key: key)
        // What the last fetch saw is forgotten first: a branch deleted on the hub is gone here too.
        for glob in ["refs/sealed/*", "refs/plain-records/*"] {
            for (name, _) in try sealed.references(matching: glob) { try sealed.deleteReference(name) }
        }
        // (Durable before `refs/opened/*` may name what it brought.)
        try durably(gitDir: sealedPath) { () throws(GitError) in
            try sealed.fetch(url: url, refspecs: ["+refs/heads/devices/*:refs/sealed/*", "+refs/syncagent/devices/*:refs/plain-records/*"],
                             auth: auth?.remote, shouldCancel: shouldCancel, transfer: transfer)
        }
        var known = KnownOnHub.load(sealedPath)
        let own = key.deviceBranch(device)
        if let first = try sealed.references(matching: "refs/plain-records/*").first {
            refused(SealedHubError(kind: .plain, hub: hub, detail: String(first.name.dropFirst("refs/plain-records/".count))))
        }
        // A push may name another device's commit that only that device's push holds (a merge,
        // or a fast-forward to it, pushed after it): a branch whose tips are not here yet waits
        // for the others and is opened again after them; only what no branch brings is refused.
        var waiting: [(branch: String, tip: Oid, error: SealedHubError)] = []
        var pending = try sealed.references(matching: "refs/sealed/*").map { (String($0.name.dropFirst("refs/sealed/".count)), $0.target) }
        while true {
            waiting = []
            var openedAny = false
            for (branch, tip) in pending {
                do {
                    guard branch.count == 32, branch.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
                        throw SealedHubError(kind: .plain, hub: hub, detail: "devices/\(branch)")
                    }
                    let opened = try openBranch(branch, tip: tip, own: own, device: device, repo: repo, sealed: sealed, key: key, hub: hub,
                                                known: known, shouldCancel: shouldCancel)
                    try known.add(opened.filter { !known.ids.contains($0) })
                    if !opened.isEmpty { openedAny = true }  // (only what a branch brought can unblock another)
                } catch let error as SealedHubError where error.tipsNotHere {
                    waiting.append((branch, tip, error))
                } catch let error as SealedHubError {
                    refused(error)
                }
            }
            guard openedAny, !waiting.isEmpty else { break }
            pending = waiting.map { ($0.branch, $0.tip) }
        }
        for left in waiting { refused(left.error) }
        return try mergeOrder(repo, devices: try hubDevices(repo, hub: hub, device: device))
    }

    /// One device's new pushes on the hub: checked, opened, applied (its tracking refs moved) or,
    /// when anything is wrong, refused whole. Returns the object ids it opened.
    private static func openBranch(_ branch: String, tip: Oid, own: String, device: String, repo: Repository, sealed: Repository,
                                   key: HubKey, hub: String, known: KnownOnHub, shouldCancel: () -> Bool) throws -> [Oid] {
        let out = try sealed.resolveReference(sealedOut)
        if branch == own, let out {
            let behind = try out == tip || sealed.isDescendant(out, of: tip)
            if behind { return [] }  // the hub is behind this device's own pushes (a restored backup): the next push heals it
        }
        // This device's own branch continues from what it pushed (or adopted), never from an
        // older reading of it.
        let done = branch == own ? try out ?? sealed.resolveReference(sealedOpened(branch)) : try sealed.resolveReference(sealedOpened(branch))
        if done == tip { return [] }
        var lastCounter = 0
        if let done {
            guard try sealed.isDescendant(tip, of: done) else {
                let older = try sealed.isDescendant(done, of: tip)
                throw SealedHubError(kind: .replayed, hub: hub, detail: older
                    ? "branch \(branch.prefix(8)) is back at an earlier push than this device has seen"
                    : "branch \(branch.prefix(8)) no longer holds the pushes this device has seen")
            }
            lastCounter = try manifest(of: done, in: sealed, key: key, branch: branch, hub: hub).counter
        }
        var envelopes: [Oid] = []
        try sealed.walk(from: tip, firstParentOnly: true) { id in
            if id == done { return false }
            envelopes.append(id)
            return true
        }
        var opened: [Oid] = []
        var last: HubManifest?
        repo.recordWrites()
        var batch: PackBatch?
        var relied: [Oid] = []
        var foundInPacks = false
        // Every manifest read and checked first, before anything is written.
        var manifests: [(envelope: Oid, manifest: HubManifest)] = []
        for envelope in envelopes.reversed() {
            let m = try manifest(of: envelope, in: sealed, key: key, branch: branch, hub: hub)
            guard key.deviceBranch(m.device) == branch else {
                throw SealedHubError(kind: .tampered, hub: hub, detail: "a push of \(m.device) on another device's branch")
            }
            guard m.counter == lastCounter + 1 else {
                throw SealedHubError(kind: m.counter <= lastCounter ? .replayed : .tampered, hub: hub,
                                     detail: "\(m.device)'s push number \(m.counter) follows number \(lastCounter)")
            }
            lastCounter = m.counter
            manifests.append((envelope, m))
        }
        // A tip another device's push holds, not opened yet: this branch waits for that one
        // (`sealedHubFetch`) before it writes anything, so nothing it would write waits unflushed.
        if branch != own, let m = manifests.last?.manifest {
            let listed = Set(manifests.flatMap { $0.manifest.objects.compactMap(Oid.init(hex:)) })
            for tip in [m.main, m.records].compactMap({ $0 }) {
                guard let id = Oid(hex: tip), !listed.contains(id), !known.ids.contains(id), !repo.hasObject(id) else { continue }
                throw SealedHubError(kind: .tampered, hub: hub, detail: "\(m.device)'s push \(m.counter) names \(tip.prefix(12)), which no push holds",
                                     tipsNotHere: true)
            }
        }
        for (envelope, m) in manifests {
            if branch != own {
                let files = try sealed.treeEntries(try sealed.commit(envelope).tree)
                guard let o = files.first(where: { $0.name == "o" && $0.isTree }) else {
                    throw SealedHubError(kind: .tampered, hub: hub, detail: "\(m.device)'s push \(m.counter) has no objects")
                }
                let byName = Dictionary(try sealed.treeEntries(o.id).map { ($0.name, $0.id) }, uniquingKeysWith: { a, _ in a })
                if batch == nil, m.objects.count > sealedLooseLimit { batch = try PackBatch(gitDir: repo.gitDir) }
                for hex in m.objects {
                    guard let want = Oid(hex: hex) else { throw SealedHubError(kind: .tampered, hub: hub, detail: "an object id '\(hex)'") }
                    if known.ids.contains(want) { opened.append(want); continue }
                    if repo.hasObject(want) {
                        relied.append(want)
                        opened.append(want)
                        continue
                    }
                    let name = key.objectName(hex)
                    guard let blob = byName[name] else {
                        throw SealedHubError(kind: .tampered, hub: hub, detail: "object \(hex.prefix(12)) of \(m.device)'s push \(m.counter) is missing")
                    }
                    let raw: [UInt8]
                    do { raw = try key.openObject(try sealed.blobData(blob), name: name) } catch {
                        throw SealedHubError(kind: .tampered, hub: hub, detail: "object \(hex.prefix(12)) of \(m.device)'s push \(m.counter) does not open")
                    }
                    guard try batch?.writeRaw(raw) ?? repo.writeRaw(raw) == want else {
                        throw SealedHubError(kind: .tampered, hub: hub, detail: "object \(hex.prefix(12)) of \(m.device)'s push \(m.counter) is not what its id says")
                    }
                    opened.append(want)
                    if shouldCancel() { throw GitError(code: -1, errorClass: 0, message: "the fetch was cancelled", call: "open") }
                }
            }
            last = m
        }
        try batch?.flush()
        // An object the batch found in one of the store's packs (written by another path since the
        // check above) is in no list to flush: then the packs young enough to be unflushed are.
        if batch?.foundStored == true { foundInPacks = true }
        guard let m = last else { return opened }
        if branch == own {
            // Pushes under this device's name that this state does not hold: its own, from a state
            // that lost them (then continue from them: a power cut took the note of a push that
            // reached the hub, or the whole sealed side), or another device using the same name.
            let theirs = m.main.flatMap(Oid.init(hex:))
            let mine = try repo.resolveReference(Store.mainRef)
            let ownHistory = theirs.map { t in repo.hasObject(t) && ((try? mine.map { try repo.isDescendant($0, of: t) || $0 == t }) ?? false) } ?? true
            guard ownHistory || (out == nil && mine == nil) else {
                throw HubRefusal(hub: hub, url: "", device: device, detail: "pushes under this name hold a main this device never had")
            }
            try sealed.setReference(sealedOut, to: tip, message: "syncagent: this device's pushes, from \(hub)")
            flushRefs([sealedOut], under: sealed.gitDir)
        } else {
            let main = m.main.flatMap(Oid.init(hex:)), records = m.records.flatMap(Oid.init(hex:))
            // Everything the tips name must be here before a ref names them (another device's
            // objects it left out were opened from that device's branch).
            for tip in [main, records].compactMap({ $0 }) where !repo.hasObject(tip) {
                throw SealedHubError(kind: .tampered, hub: hub, detail: "\(m.device)'s push \(m.counter) names \(tip.hex.prefix(12)), which no push holds")
            }
            flushObjects(of: repo, written: repo.takeWrites(), packs: batch?.packFiles ?? [],
                         also: youngRelied(relied, in: repo) + (foundInPacks && relied.isEmpty ? recentPacks(in: repo.gitDir) : []))
            if let main { try repo.setReference(hubBranch(hub, m.device), to: main, message: "syncagent: opened from \(hub)") }
            if let records { try repo.setReference(hubRecords(hub, m.device), to: records, message: "syncagent: opened from \(hub)") }
        }
        try sealed.setReference(sealedOpened(branch), to: tip, message: "syncagent: opened from \(hub)")
        return opened
    }
}
