internal import Git
internal import ObjectStorage
import Synchronization
import SystemPackage

/// The refs a hub's round keeps in this store (its mirror of the hub, `refs/hubs/<hub>/*`, and
/// each device's tracking refs) as this process last set or read them: with 100 devices, reading
/// 400 of them back every round, to find them unchanged, was a good part of each agent's work.
/// Only the agent that holds a store's lock moves them; the repair that may remove some runs
/// before any round (`forget`, all the same). The push notes what it sets of the mirror (`note`);
/// a fetch over the network moves the mirror itself, and is read whole (`Store.hubDevices`).
enum KnownRefs {
    private struct Known {
        var refs: [String: Oid] = [:]
        /// Prefixes whose refs were read whole from the store (`under`).
        var read: Set<String> = []
    }
    private static let known = Mutex<[FilePath: Known]>([:])

    /// Points `ref` at `id` unless this process knows it does already (`writeLooseRef`: no
    /// reflog; read first when this process has not seen it, nothing written when equal).
    /// Under the lock, so that two threads (a fetch abandoned after its timeout that finishes
    /// late, and the next one) never leave the memo saying other than the file.
    static func set(_ repo: Repository, _ ref: String, to id: Oid) throws(GitError) {
        try known.withLock { all throws(GitError) in
            let was = all[repo.gitDir]?.refs[ref]
            if was == id { return }
            var differs = true
            if was == nil { differs = try repo.resolveReference(ref) != id }
            if differs { try repo.writeLooseRef(ref, to: id) }
            all[repo.gitDir, default: Known()].refs[ref] = id
        }
    }

    /// `set` for many refs at once: the ones that move are written in one rewrite of
    /// `packed-refs` (`Repository.writePackedRefs`), not one loose file each. Only for refs no
    /// other code of this process writes loose (another device's mirror and tracking refs):
    /// the loose file a packed write removes would otherwise take back a newer value.
    static func set(_ repo: Repository, _ refs: [(ref: String, id: Oid)]) throws(GitError) {
        guard !refs.isEmpty else { return }
        try known.withLock { all throws(GitError) in
            var moving: [(name: String, id: Oid)] = []
            for (ref, id) in refs {
                let was = all[repo.gitDir]?.refs[ref]
                if was == id { continue }
                if was == nil, try repo.resolveReference(ref) == id {
                    all[repo.gitDir, default: Known()].refs[ref] = id
                    continue
                }
                moving.append((ref, id))
            }
            try repo.writePackedRefs(moving)
            for (ref, id) in moving { all[repo.gitDir, default: Known()].refs[ref] = id }
        }
    }

    /// Notes that `ref` points at `id` now (moved by other means, e.g. after a push).
    static func note(_ repo: Repository, _ ref: String, _ id: Oid) {
        known.withLock { $0[repo.gitDir, default: Known()].refs[ref] = id }
    }

    /// The refs whose names start with `prefix`, read from the store the first time only.
    static func under(_ prefix: String, in repo: Repository) throws(GitError) -> [String: Oid] {
        if let refs = known.withLock({ all in all[repo.gitDir].flatMap { $0.read.contains(prefix) ? $0.refs : nil } }) {
            return refs.filter { $0.key.hasPrefix(prefix) }
        }
        var refs: [String: Oid] = [:]
        for (name, tip) in try repo.references(matching: prefix + "*") { refs[name] = tip }
        known.withLock { all in
            all[repo.gitDir, default: Known()].refs.merge(refs) { _, read in read }
            all[repo.gitDir, default: Known()].read.insert(prefix)
        }
        return refs
    }

    /// Forgets what is known of the store at `gitDir` (its refs were changed by other means).
    static func forget(_ gitDir: FilePath) {
        _ = known.withLock { $0.removeValue(forKey: gitDir) }
    }
}
