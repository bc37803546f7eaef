import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import HubSeal
import SystemPackage

/// A hub refused to take this device's branch: another device pushes under the same name.
public struct HubRefusal: Error, Sendable, CustomStringConvertible {
    public let hub: String
    public let url: String
    public let device: String
    public let detail: String
    /// False: the server refused for another reason (permissions, disk, a hook), said in `detail`.
    public var clash = true
    public var description: String {
        guard clash else {
            return "the hub \(hub) (\(url)) refused the push (\(detail)); nothing was forced. Check that the account may "
                + "write to the repository and that the server's disk has room; the push is retried after the next fetch "
                + "(which also tells whether another device pushes under this name)."
        }
        return "the hub \(hub) (\(url)) holds a devices/\(device) branch this device did not push (\(detail)): another device "
            + "uses the name '\(device)' too. Give every device its own `device` name in its config; nothing was forced."
    }
}

/// A device seen through a hub: what its tracking refs name after a fetch (its `main`, unwrapped,
/// and its conflict records). Equal states need no merge again once one went through.
public struct HubDevice: Sendable, Equatable {
    public let name: String
    public let main: ObjectID?
    public let records: ObjectID?

    public init(name: String, main: ObjectID?, records: ObjectID?) {
        self.name = name
        self.main = main
        self.records = records
    }
}

/// What one push to a hub did.
public enum HubPush: Sendable, Equatable {
    case upToDate
    case pushed(ObjectID)
}

/// SPEC "Hub": an ordinary git repository shared by many devices. Each device pushes only
/// `refs/heads/devices/<device>` and `refs/syncagent/devices/<device>/conflicts`, fast-forward only,
/// and merges every other device's branch like a direct peer named `<hub>/<device>`.
/// Locally: `refs/hubs/<hub>/heads/*` and `refs/hubs/<hub>/records/*` mirror the hub as last
/// fetched; `refs/hubs/<hub>/pushed` is what this device's last confirmed push sent, `pushing` what
/// the last attempt sent (it may have landed unseen). A branch for this device on the hub that is
/// neither belongs to another device with the same name.
extension Store {
    /// The peer name a device seen through a hub is merged as (its tracking refs, its status entry).
    public static func hubPeer(_ hub: String, device: String) -> String { "\(hub)/\(device)" }

    /// Removes the lock files a push of this device's own branches left in a hub on this machine
    /// when the agent was killed in the middle of it (libgit2 writes `<ref>.lock`, then renames it):
    /// left there, every later push failed with "failed to lock file". Only this device pushes those
    /// refs (the same-name check guards that), and only while holding its agent lock, which the
    /// caller holds: a lock found now is stale.
    @discardableResult
    public static func clearStaleHubLocks(hubGitDir: FilePath, device: String) -> [FilePath] {
        let mine = [FilePath("refs/heads/devices/\(device).lock"), FilePath("refs/syncagent/devices/\(device)/conflicts.lock")]
        return mine.map { hubGitDir.pushing($0) }.filter { lock in
            (try? FileStat.of(lock)) != nil && (try? Files.remove(lock)) != nil  // (remove is fine with nothing there)
        }
    }

    static func hubBranch(_ hub: String, _ device: String) -> String { "refs/hubs/\(hub)/heads/\(device)" }
    static func hubRecords(_ hub: String, _ device: String) -> String { "refs/hubs/\(hub)/records/\(device)/conflicts" }
    static func hubPushed(_ hub: String) -> String { "refs/hubs/\(hub)/pushed" }
    static func hubPushing(_ hub: String) -> String { "refs/hubs/\(hub)/pushing" }
    /// The author of a wrapper on a hub branch: its second parent is the device's real `main`.
    static let hubEmail = "syncagent.hub@syncagent"

    /// What a device's hub branch stands for: its `main`, under a wrapper if there is one.
    static func unwrap(_ repo: Repository, _ tip: Oid) throws(GitError) -> Oid {
        let info = try repo.commit(tip)
        return info.author.email == hubEmail && info.parents.count == 2 ? info.parents[1] : tip
    }

    /// Fetches every device's branch and conflict records from the hub and points each device's
    /// tracking refs at them. Returns the other devices seen with what their tracking refs name,
    /// the one whose `main` covers the most first (`mergeOrder`). An empty hub is no error.
    public static func hubFetch(gitDir: FilePath, data: FilePath, hub: String, url: String, device: String, localGitDir: FilePath? = nil,
                                auth: PeerAuth? = nil, shouldCancel: @escaping () -> Bool = { false },
                                transfer: Transfer? = nil, key: HubKey? = nil, stamp: String? = nil,
                                refused: (SealedHubError) -> Void = { _ in }) throws -> [HubDevice] {
        if let key {
            return try sealedHubFetch(gitDir: gitDir, data: data, hub: hub, url: url, stamp: stamp ?? url, device: device, key: key,
                                      auth: auth, shouldCancel: shouldCancel, transfer: transfer, refused: refused)
        }
        let repo = try Repository.open(gitDir: gitDir, workdir: data)
        if let localGitDir {
            let mirror = try copyFromLocalHub(repo, gitDir: gitDir, hub: hub, device: device, source: localGitDir,
                                              shouldCancel: shouldCancel, transfer: transfer)
            return try mergeOrder(repo, devices: try hubDevices(repo, hub: hub, device: device, mirror: mirror))
        }
        try durably(gitDir: gitDir) { () throws(GitError) in
            try repo.fetch(url: url, refspecs: ["+refs/heads/devices/*:refs/hubs/\(hub)/heads/*",
                                                "+refs/syncagent/devices/*:refs/hubs/\(hub)/records/*"],
                           auth: auth?.remote, shouldCancel: shouldCancel, transfer: transfer)
        }
        return try mergeOrder(repo, devices: try hubDevices(repo, hub: hub, device: device))
    }

    /// A hub on this machine, like a path peer (`Store.fetch`): its devices' branches and records
    /// read straight from its refs, only the objects this store lacks copied (no pack built and
    /// indexed per fetch: with many devices, every push meant one such fetch on every device),
    /// the refs moved once the copies are durable. Returns the mirror as it now stands
    /// (`refs/hubs/<hub>/*`, name to tip).
    private static func copyFromLocalHub(_ repo: Repository, gitDir: FilePath, hub: String, device: String, source path: FilePath,
                                         shouldCancel: @escaping () -> Bool, transfer: Transfer?) throws(GitError) -> [String: Oid] {
        let wanted = try hubRefs(path)
        // What this store mirrors (`KnownRefs`: read from disk at the first round only).
        var mirrored = try KnownRefs.under("refs/hubs/\(hub)/", in: repo)
        let moved = wanted.map { (ref: $0.name.starts(with: "refs/heads/devices/")
                                    ? hubBranch(hub, String($0.name.dropFirst("refs/heads/devices/".count)))
                                    : "refs/hubs/\(hub)/records/" + $0.name.dropFirst("refs/syncagent/devices/".count), tip: $0.tip) }
            .filter { mirrored[$0.ref] != $0.tip }
        guard !moved.isEmpty else { return mirrored }
        // The mirror's tips and `main` are refs of this store: a commit they reach is whole here.
        let refTips = Array(mirrored.values) + [try repo.resolveReference(mainRef)].compactMap { $0 }
        // A tip this store's refs reach already (another device's branch moved to the join this
        // device made too: with many devices, most moves after a burst) needs no copy, and no
        // opening of the hub's packs to find that out.
        let tips = Set(moved.map(\.tip))
        let present = tips.filter { repo.hasObject($0) }
        // (A history a power cut left incomplete, here or under a ref tip, cannot be read through:
        // then everything is copied as before, which brings back what is missing.)
        let whole = present.isEmpty ? [] : (try? repo.reachable(Array(present), fromAny: refTips)) ?? []
        let lacking = Array(tips.subtracting(whole))
        if !lacking.isEmpty {
            // Small copies loose, anything more into one pack: a loose object is a file, an
            // inode and an fsync each (100 devices: a burst brings each device a few hundred).
            _ = try throughRollUps(of: path) { source throws(GitError) in
                try copyDurably(into: repo, gitDir: gitDir, from: source, tips: lacking, refTips: refTips, limits: ObjectCopyLimits(looseLimit: 8),
                                shouldCancel: shouldCancel, transfer: transfer)
            }
        }
        // This device's own branch and records are also moved by its push (loose, through
        // libgit2): written loose here too. The other devices' are written together.
        let own = [hubBranch(hub, device), hubRecords(hub, device)]
        for item in moved where own.contains(item.ref) { try KnownRefs.set(repo, item.ref, to: item.tip) }
        try KnownRefs.set(repo, moved.filter { !own.contains($0.ref) }.map { ($0.ref, $0.tip) })
        for item in moved { mirrored[item.ref] = item.tip }
        return mirrored
    }

    /// The devices' branches and records on a hub on this machine (`refs/heads/devices/*`, and
    /// each branch's `refs/syncagent/devices/<device>/conflicts`), read from its files without
    /// opening it with libgit2: a round that finds nothing moved (most rounds, with many
    /// devices) costs one listing of the branches and one read of each device's records. A hub
    /// that is not a store, or refs that cannot be read, are read by libgit2 (every ref under
    /// both prefixes), whose error names the problem.
    static func hubRefs(_ path: FilePath) throws(GitError) -> [(name: String, tip: Oid)] {
        let read = RefSnapshot.readHub(gitDir: path)
        var refs: [(name: String, tip: Oid)] = []
        if read.whole, (try? FileStat.of(path.appending("HEAD"))) != nil {
            for (name, hex) in read.snapshot.refs {
                // A name that is not UTF-8 is no device's (device names are ASCII): left out.
                guard let name = String(validating: name, as: UTF8.self), let tip = String(validating: hex, as: UTF8.self).flatMap(Oid.init(hex:)) else { continue }
                refs.append((name, tip))
            }
            return refs.sorted { $0.name < $1.name }
        }
        let source = try Repository.openForReading(gitDir: path)
        for prefix in RefSnapshot.hubPrefixes { refs += try source.references(matching: prefix + "*").map { ($0.name, $0.target) } }
        return refs
    }

    /// The order to merge the devices in: a join of many devices' work first (it covers the most;
    /// the devices it covers are then up to date, not one merge each), then the newest, then by
    /// name. With many devices after a burst, most tips are joins of most of the burst.
    static func mergeOrder(_ repo: Repository, devices: [HubDevice]) throws(GitError) -> [HubDevice] {
        var keyed: [(covers: Int, time: Int64, device: HubDevice)] = []
        for other in devices {
            guard let tip = other.main?.oid else {
                keyed.append((0, 0, other))
                continue
            }
            let info = try repo.commit(tip)
            let covers = info.author.email == joinEmail ? info.parents.count : 1
            keyed.append((covers, info.author.time, other))
        }
        return keyed.sorted { ($0.covers, $0.time) != ($1.covers, $1.time) ? ($0.covers, $0.time) > ($1.covers, $1.time) : $0.device.name < $1.device.name }
            .map(\.device)
    }

    /// When the newest commit a peer's tracking ref names was made (ISO 8601), if there is one.
    public func tipTime(peer: String) throws -> String? {
        guard let tip = try repo.resolveReference(Self.trackingRef(peer)) else { return nil }
        let time = try repo.commit(tip).author.time
        return ISOTime.string(time)
    }

    /// The other devices the hub had at the last fetch (for `status`, also when the agent is stopped).
    public func hubDevices(hub: String) throws -> [String] {
        let prefix = "refs/hubs/\(hub)/heads/"
        return try repo.references(matching: prefix + "*").map { String($0.name.dropFirst(prefix.count)) }
            .filter { $0 != device && Config.isValidName($0) }.sorted()
    }

    /// The other devices this store mirrors of the hub, by name, with their tracking refs pointed
    /// at the mirror (a device's `main` unwrapped, its records). `mirror`: the mirror's refs as
    /// the caller has them (a copy from a hub on this machine), else read here in one pass. A
    /// tracking ref this process set already is not read again (`KnownRefs`): with 100 devices,
    /// a round read and compared 200 of them.
    static func hubDevices(_ repo: Repository, hub: String, device: String, mirror: [String: Oid]? = nil) throws(GitError) -> [HubDevice] {
        var refs: [String: Oid] = [:]
        if let mirror { refs = mirror } else {
            for (name, tip) in try repo.references(matching: "refs/hubs/\(hub)/*") { refs[name] = tip }
        }
        let heads = "refs/hubs/\(hub)/heads/"
        var devices: [HubDevice] = []
        var tracking: [(ref: String, id: Oid)] = []  // written together, in one rewrite of packed-refs
        for (name, target) in refs where name.hasPrefix(heads) {
            let other = String(name.dropFirst(heads.count))
            // A branch name that is no device name (or is ours) is not merged.
            guard other != device, Config.isValidName(other) else { continue }
            let peer = hubPeer(hub, device: other)
            let main = try unwrap(repo, target)
            tracking.append((trackingRef(peer), main))
            var records = refs[hubRecords(hub, other)]
            if let records {
                tracking.append((ConflictBook.peerRef(peer), records))
            } else {
                records = try repo.resolveReference(ConflictBook.peerRef(peer))  // (what a merge reads)
            }
            devices.append(HubDevice(name: other, main: main.id, records: records?.id))
        }
        try KnownRefs.set(repo, tracking)
        return devices.sorted { $0.name < $1.name }
    }

    /// Pushes `main` and the conflict records to this device's branch on the hub, never forced.
    /// When `main` does not contain what was pushed before, the branch gets a wrapper commit on
    /// top of both (first parent the branch, second `main`, `main`'s tree), so it stays a
    /// fast-forward; the others merge the wrapped `main`. A branch on the hub that this device did
    /// not push belongs to another device with the same name: `HubRefusal`, and nothing is pushed.
    /// `localGitDir`: the hub is that repository on this machine: the objects are copied into it
    /// and its refs moved directly (`pushToLocalHub`), as for a fetch from it.
    public static func hubPush(gitDir: FilePath, data: FilePath, hub: String, url: String, device: String, localGitDir: FilePath? = nil,
                               auth: PeerAuth? = nil, shouldCancel: @escaping () -> Bool = { false },
                               transfer: Transfer? = nil, key: HubKey? = nil, stamp: String? = nil) throws -> HubPush {
        if let key {
            return try sealedHubPush(gitDir: gitDir, data: data, hub: hub, url: url, stamp: stamp ?? url, device: device, key: key,
                                     auth: auth, shouldCancel: shouldCancel, transfer: transfer)
        }
        let repo = try Repository.open(gitDir: gitDir, workdir: data)
        guard let main = try repo.resolveReference(Store.mainRef) else { return .upToDate }
        let book = try repo.resolveReference(ConflictBook.ref)
        let onHub = try repo.resolveReference(hubBranch(hub, device))
        let pushed = try repo.resolveReference(hubPushed(hub))
        // What a push that may or may not have landed (the agent stopped or the link broke) sent.
        let pushing = try repo.resolveReference(hubPushing(hub))
        let recordsOnHub = try repo.resolveReference(hubRecords(hub, device))
        // A tip this device's own history holds is its own push, whatever its refs say: a power
        // cut can take `pushed` back (the push landed, the ref moved after it never reached the
        // disk) and a later `pushing` moves past it. Another device under this name pushes what
        // this history lacks.
        func isOwn(_ tip: Oid) -> Bool {
            guard repo.hasObject(tip) else { return false }
            return [main, pushing, pushed].compactMap { $0 }.contains { mine in (try? repo.isDescendant(mine, of: tip)) == true }
        }
        if let onHub, onHub != pushed, onHub != pushing, onHub != main, !isOwn(onHub) {
            throw HubRefusal(hub: hub, url: url, device: device, detail: pushed == nil && pushing == nil
                ? "this device never pushed to it"
                : "its tip \(onHub.hex.prefix(12)) is not what this device pushed (\((pushing ?? pushed)!.hex.prefix(12)))")
        }
        var target = main
        if let onHub, onHub != main, !(try repo.isDescendant(main, of: onHub)) {
            // `main` does not contain the branch's tip (a join stands for its tips and leaves out
            // what was pushed; after one wrapper, `main` never contains the wrappers): the branch
            // gets a wrapper on top of both. Receivers merge the wrapped `main`, never the wrapper.
            func wrapsMain(_ id: Oid) throws -> Bool {
                let info = try repo.commit(id)
                return info.author.email == hubEmail && info.parents.count == 2 && info.parents[1] == main
            }
            if try wrapsMain(onHub) {
                target = onHub
            } else if let pushing, try wrapsMain(pushing), try repo.isDescendant(pushing, of: onHub) {
                target = pushing  // made by an attempt that did not land
            } else {
                let info = try repo.commit(main)
                let sig = Signature(name: device, email: hubEmail, time: info.author.time)
                target = try repo.createCommit(tree: info.tree, parents: [onHub, main], author: sig, committer: sig,
                                               message: "syncagent: \(device)'s hub branch moves to its main \(main.hex.prefix(12))\n",
                                               updateRef: nil)
            }
        }
        var refspecs: [String] = []
        var updates: [(ref: String, to: Oid)] = []
        if target != onHub {
            try repo.setReference(hubPushing(hub), to: target, message: "syncagent: to push to \(hub)")
            refspecs.append("\(hubPushing(hub)):refs/heads/devices/\(device)")
            updates.append(("refs/heads/devices/\(device)", target))
        }
        var records = book
        if let book, let recordsOnHub, book != recordsOnHub, !(try repo.isDescendant(book, of: recordsOnHub)) {
            let onHubInfo = try repo.commit(recordsOnHub)
            if onHubInfo.author.email == hubEmail, onHubInfo.parents.count == 2, onHubInfo.parents[1] == book {
                records = recordsOnHub  // wrapped already
            } else {
                // The book adopted another device's records: a commit on top of both keeps the
                // records branch a fast-forward (same tree: the records as this device has them).
                let info = try repo.commit(book)
                let sig = Signature(name: device, email: hubEmail, time: info.author.time)
                records = try repo.createCommit(tree: info.tree, parents: [recordsOnHub, book], author: sig, committer: sig,
                                                message: "syncagent: \(device)'s records on the hub\n", updateRef: nil)
            }
        }
        if let records, records != recordsOnHub {
            try repo.setReference("refs/hubs/\(hub)/pushing-records", to: records, message: "syncagent: to push to \(hub)")
            refspecs.append("refs/hubs/\(hub)/pushing-records:refs/syncagent/devices/\(device)/conflicts")
            updates.append(("refs/syncagent/devices/\(device)/conflicts", records))
        }
        guard !refspecs.isEmpty else { return .upToDate }
        Durability.flushFileSystem(containing: gitDir)
        let refused = if let localGitDir {
            try pushToLocalHub(repo, hubGitDir: localGitDir, updates: updates,
                               wereOnHub: try onHubAtLastLook(repo, hub: hub),
                               shouldCancel: shouldCancel, transfer: transfer)
        } else {
            try repo.push(url: url, refspecs: refspecs, auth: auth?.remote, shouldCancel: shouldCancel, transfer: transfer)
        }
        if let first = refused.first {
            let said = first.serverSaid.suffix(3).joined(separator: "; ")
            // What the server refused for is only in its words; they are shown, never read. A
            // branch another device moved under this name (a push that is no fast-forward) is told
            // by the next round: its fetch sees a tip this history lacks (the check above).
            var refusal = HubRefusal(hub: hub, url: url, device: device,
                                     detail: "it refused \(first.ref): \(first.reason)" + (said.isEmpty ? "" : "; the server said: \(said)"))
            refusal.clash = false
            throw refusal
        }
        if target != onHub {
            try repo.setReference(hubPushed(hub), to: target, message: "syncagent: pushed to \(hub)")
            try repo.setReference(hubBranch(hub, device), to: target, message: "syncagent: pushed to \(hub)")
            KnownRefs.note(repo, hubBranch(hub, device), target)
            // What the hub accepted is what the next push starts from: on disk before anything
            // else is done (a cut that takes it back leaves a tip this device would not know).
            flushRefs([hubPushed(hub), hubBranch(hub, device)], under: gitDir)
        }
        if let records, refspecs.contains(where: { $0.hasPrefix("refs/hubs/\(hub)/pushing-records") }) {
            try repo.setReference(hubRecords(hub, device), to: records, message: "syncagent: pushed to \(hub)")
            KnownRefs.note(repo, hubRecords(hub, device), records)
        }
        return .pushed(target.id)
    }
}

extension Store {
    /// A push to a hub on this machine: the objects its refs lack copied into it (into packs, as a
    /// push leaves them, which `compactHubPacks` rolls up) and made durable, then each ref moved
    /// only if it is still what was read and the move is a fast-forward, and made durable. What
    /// libgit2's push to a path did, without building a pack with a delta search, indexing it
    /// again on the other side, and listing every ref of the hub first (with 100 devices, a sixth
    /// of each agent's work in a burst). Returns the refs refused, in `PushRefusal`'s terms.
    /// Tips the hub's own refs had: its branches and records as last fetched, and what a push
    /// confirmed (never what an attempt only tried to send: `pushing` may name a tip whose history
    /// never all reached the hub).
    static func onHubAtLastLook(_ repo: Repository, hub: String) throws(GitError) -> [Oid] {
        let prefix = "refs/hubs/\(hub)/"
        return try KnownRefs.under(prefix, in: repo).filter { name, _ in
            name.hasPrefix(prefix + "heads/") || name.hasPrefix(prefix + "records/") || name == hubPushed(hub)
        }.map(\.value)
    }

    /// `wereOnHub`: tips the hub's refs had at some time (its objects are never removed, so what
    /// they reach is whole there): a commit they reach needs no look at every ref of the hub.
    /// The copy reads this store's packs whole, by path (`PackTransfer`), while the engine's store
    /// care may remove packs it rolled up, and looks up what the hub has while another device may
    /// roll the hub's packs up: it runs through `throughRollUps`, which lists the packs anew.
    static func pushToLocalHub(_ repo: Repository, hubGitDir: FilePath, updates: [(ref: String, to: Oid)], wereOnHub: [Oid],
                               shouldCancel: @escaping () -> Bool, transfer: Transfer?) throws(GitError) -> [PushRefusal] {
        let hub = try throughRollUps(of: hubGitDir) { hub throws(GitError) in
            _ = try copyDurably(into: hub, gitDir: hubGitDir, from: repo, tips: updates.map(\.to), refTips: wereOnHub,
                                limits: ObjectCopyLimits(looseLimit: 0), shouldCancel: shouldCancel, transfer: transfer)
            return hub
        }
        var refused: [PushRefusal] = []
        var moved: [String] = []
        for update in updates {
            let current = try hub.resolveReference(update.ref)
            if current == update.to { continue }
            var fastForward = true
            if let current { fastForward = repo.hasObject(current) ? try repo.isDescendant(update.to, of: current) : false }
            if !fastForward {
                refused.append(PushRefusal(ref: update.ref, reason: "cannot push non-fastforwardable reference"))
                continue
            }
            do {
                try hub.updateReference(update.ref, to: update.to, expected: current, message: "push")
                moved.append(update.ref)
            } catch where [GitError.Code.modified, GitError.Code.exists, GitError.Code.locked].contains(error.code) {
                refused.append(PushRefusal(ref: update.ref, reason: "another push moved it meanwhile"))
            }
        }
        flushRefs(moved, under: hubGitDir)
        return refused
    }

    /// Whether the hub already holds everything `main` stands for: every real tip behind it (a
    /// join stands for its parents) is in the history of some device's branch there, as last
    /// fetched, or of what this device pushed. Then pushing `main` only tells the others that this
    /// device has it all; each of them makes the same join from the same branches by itself.
    public func hubHoldsMain(hub: String) throws -> Bool {
        guard let main = try repo.resolveReference(Self.mainRef) else { return true }
        var onHub: [Oid] = []
        for (_, tip) in try repo.references(matching: "refs/hubs/\(hub)/heads/*") { onHub.append(tip) }
        if let pushed = try repo.resolveReference(Self.hubPushed(hub)) { onHub.append(pushed) }
        let tips = try joinTips([main])
        return try repo.reachable(tips, fromAny: onHub).count == tips.count
    }
}
