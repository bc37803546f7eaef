import ObjectStorage
import Synchronization
import SystemPackage

/// The `CommitGraph` of one store, shared by every handle this process opens on it (the engine's,
/// and the short-lived ones of each fetch and push on their own threads): a push asked whether
/// `main` still holds what it pushed before, and with a new handle each time the answer read the
/// whole history again (a churn of ten devices through one hub: half of each agent's CPU, growing
/// with every commit). A question holds the lock while it walks; after the first, walks are short.
final class SharedCommitGraph: Sendable {
    private let state: Mutex<CommitGraph>
    private static let registry = Mutex<[FilePath: SharedCommitGraph]>([:])

    init(limit: Int = 200_000) { state = Mutex(CommitGraph(limit: limit)) }

    /// The graph of the store at `gitDir` (one per path for the life of the process).
    static func of(_ gitDir: FilePath) -> SharedCommitGraph {
        registry.withLock { all in
            if let known = all[gitDir] { return known }
            let made = SharedCommitGraph()
            all[gitDir] = made
            return made
        }
    }

    func isReachable(_ target: Oid, fromAny descendants: [Oid], read: (Oid) throws(GitError) -> [Oid]) throws(GitError) -> Bool {
        try state.withLock { graph throws(GitError) -> Bool in try graph.isReachable(target, fromAny: descendants, read: read) }
    }

    func reachable(_ targets: Set<Oid>, fromAny descendants: [Oid], read: (Oid) throws(GitError) -> [Oid]) throws(GitError) -> Set<Oid> {
        try state.withLock { graph throws(GitError) -> Set<Oid> in try graph.reachable(targets, fromAny: descendants, read: read) }
    }

    func parents(of commits: [Oid], read: (Oid) throws(GitError) -> [Oid]) throws(GitError) -> [Oid] {
        try state.withLock { graph throws(GitError) -> [Oid] in
            var all: [Oid] = []
            for c in commits { all += try graph.parents(of: c, read: read) }
            return all
        }
    }

    /// The commits read lately, whole (a commit's bytes never change): a hub's round asks for the
    /// tip of every device (is it a wrapper, a join, how new), and each round's fetch opens a new
    /// handle, so each of those was a read and an inflate again, every round, for every device.
    private let infos = Mutex<[Oid: CommitInfo]>([:])
    static let infoLimit = 8192

    func info(_ id: Oid, read: (Oid) throws(GitError) -> CommitInfo) throws(GitError) -> CommitInfo {
        if let known = infos.withLock({ $0[id] }) { return known }
        let found = try read(id)
        infos.withLock { all in
            if all.count >= Self.infoLimit { all.removeAll(keepingCapacity: true) }
            all[id] = found
        }
        return found
    }
}

/// The parents and generation numbers of the commits one repository handle has read. Commits never
/// change, so each is read from disk once per handle; a reachability question then walks memory,
/// and only the commits above the generation of the one asked about. (libgit2 1.5 answers
/// `git_graph_reachable_from_any` with a new walk per call that reads every commit again, down
/// to the root: with 50 devices through one hub that was a quarter of each agent's work.)
/// Generation: 1 for a root, else one more than the highest of its parents'.
/// Used only under `SharedCommitGraph`'s lock (hence unchecked: it keeps nothing of a caller's).
final class CommitGraph: @unchecked Sendable {
    private var parents: [Oid: [Oid]] = [:]
    private var generations: [Oid: Int] = [:]
    /// Past this many commits, the older half (by generation) is forgotten before the next
    /// question (never during one: a generation needs every ancestor's at once, so one question
    /// may go past it). Questions are about recent commits: their generations come from their
    /// parents', which are kept, so nothing is read again. (Forgetting everything made every
    /// question after the 200,000th commit read the whole history again.)
    let limit: Int

    init(limit: Int = 200_000) { self.limit = limit }

    func parents(of id: Oid, read: (Oid) throws(GitError) -> [Oid]) throws(GitError) -> [Oid] {
        if let known = parents[id] { return known }
        let found = try read(id)
        parents[id] = found
        return found
    }

    func generation(of id: Oid, read: (Oid) throws(GitError) -> [Oid]) throws(GitError) -> Int {
        if let known = generations[id] { return known }
        // Depth first without recursion: a history of any length cannot overflow the stack.
        var stack = [id]
        while let top = stack.last {
            if generations[top] != nil {
                stack.removeLast()
                continue
            }
            let ps = try parents(of: top, read: read)
            let pending = ps.filter { generations[$0] == nil }
            if pending.isEmpty {
                generations[top] = 1 + (ps.compactMap { generations[$0] }.max() ?? 0)
                stack.removeLast()
            } else {
                stack.append(contentsOf: pending)
            }
        }
        return generations[id] ?? 1
    }

    /// Keeps the newest `limit / 2` commits by generation (and their parents); the rest is read
    /// again if a question goes that far back. Generations stay exact: each is only ever computed
    /// from its parents'.
    private func forgetOlderHalf() {
        let keep = limit / 2
        guard generations.count > keep else {
            parents = parents.filter { generations[$0.key] != nil }
            return
        }
        let cutoff = generations.values.sorted(by: >)[keep]
        generations = generations.filter { $0.value > cutoff }
        parents = parents.filter { generations[$0.key] != nil }
    }

    /// Which of `targets` are among `descendants` or in the history of any of them, in one walk
    /// down to the lowest generation among the targets (a hub's join of 100 devices asked
    /// `isReachable` once per tip, each walk from the 100 others: O(devices²)).
    func reachable(_ targets: Set<Oid>, fromAny descendants: [Oid], read: (Oid) throws(GitError) -> [Oid]) throws(GitError) -> Set<Oid> {
        var found: Set<Oid> = []
        guard !targets.isEmpty, !descendants.isEmpty else { return found }
        if parents.count > limit { forgetOlderHalf() }
        var floor = Int.max
        for target in targets { floor = min(floor, try generation(of: target, read: read)) }
        var seen: Set<Oid> = []
        var queue = descendants
        while let c = queue.popLast() {
            guard seen.insert(c).inserted else { continue }
            if targets.contains(c) {
                found.insert(c)
                if found.count == targets.count { break }
            }
            guard try generation(of: c, read: read) > floor else { continue }
            queue.append(contentsOf: try parents(of: c, read: read))
        }
        return found
    }

    /// Whether `target` is one of `descendants` or in the history of any of them. A commit whose
    /// generation is not above the target's cannot have it in its history, so the walk stops there.
    func isReachable(_ target: Oid, fromAny descendants: [Oid], read: (Oid) throws(GitError) -> [Oid]) throws(GitError) -> Bool {
        if descendants.contains(target) { return true }
        if parents.count > limit { forgetOlderHalf() }
        let floor = try generation(of: target, read: read)
        var seen: Set<Oid> = []
        var queue = descendants
        while let c = queue.popLast() {
            if c == target { return true }
            guard seen.insert(c).inserted, try generation(of: c, read: read) > floor else { continue }
            queue.append(contentsOf: try parents(of: c, read: read))
        }
        return false
    }
}
