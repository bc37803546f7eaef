import FileSystem
import Foundation
import Git
import SystemPackage

/// What integrating a peer's `main` did.
public struct SyncOutcome: Sendable {
    public enum Action: Sendable, Equatable {
        case upToDate, fastForward, merged, adoptedEqualTree
    }
    public var action: Action
    public var head: Oid?
    /// Conflicts this merge found (each recorded, with the winner's bytes in the data directory).
    public var newConflicts: [ConflictRecord] = []
    /// Why automatic strategies declined, for the log.
    public var notes: [String] = []
}

/// A peer's history the agent refuses to apply, naming the paths and why.
public struct SyncRefusal: Error, Sendable, CustomStringConvertible {
    public let peer: String
    public let reasons: [String]
    public var description: String {
        "refused \(peer)'s history: " + reasons.joined(separator: "; ")
            + ". Nothing was written; fix or remove those paths on \(peer)."
    }
}

extension Store {
    public static func trackingRef(_ peer: String) -> String { "refs/remotes/\(peer)/main" }

    /// Fetches a peer's `main` and conflict records into tracking refs. Opens its own repository
    /// object, so it may run on any thread while the store's owner goes on.
    public static func fetch(gitDir: FilePath, data: FilePath, peer: String, url: String,
                             shouldCancel: @escaping () -> Bool = { false }) throws(GitError) {
        let repo = try Repository.open(gitDir: gitDir, workdir: data)
        try repo.fetch(url: url, refspecs: ["+refs/heads/main:\(trackingRef(peer))",
                                            "+\(ConflictBook.ref):\(ConflictBook.peerRef(peer))"],
                       shouldCancel: shouldCancel)
    }

    /// Merges the fetched `main` of `peer` into ours and updates the data directory. Local changes
    /// must be committed first; a file changed on disk since then makes it throw `UnseenChanges`
    /// and nothing is written (commit it and try again).
    public func integrate(peer: String) throws -> SyncOutcome {
        let outcome = try integrateMain(peer: peer)
        try mergeConflictBooks(peer: peer, new: outcome.newConflicts)
        return outcome
    }

    private func integrateMain(peer: String) throws -> SyncOutcome {
        guard let theirs = try repo.resolveReference(Self.trackingRef(peer)) else {
            return SyncOutcome(action: .upToDate, head: try head())
        }
        let ours = try head()
        if let ours, try ours == theirs || repo.isDescendant(ours, of: theirs) {
            return SyncOutcome(action: .upToDate, head: ours)
        }
        let theirTree = try repo.commit(theirs).tree
        try checkSafe(tree: theirTree, peer: peer)
        guard let ours else {
            try applyTree(theirTree, from: nil)
            try moveRef("refs/heads/main", to: theirs, expected: nil, message: "syncagent: from \(peer)")
            return SyncOutcome(action: .fastForward, head: theirs)
        }
        let ourTree = try repo.commit(ours).tree
        if try repo.isDescendant(theirs, of: ours) {
            try applyTree(theirTree, from: ourTree)
            try moveRef("refs/heads/main", to: theirs, expected: ours, message: "syncagent: fast-forward to \(peer)")
            return SyncOutcome(action: .fastForward, head: theirs)
        }
        if ourTree == theirTree {
            // Same content, different commits (e.g. both merged each other): both devices adopt the
            // larger id, so they converge without new commits.
            guard theirs > ours else { return SyncOutcome(action: .upToDate, head: ours) }
            try moveRef("refs/heads/main", to: theirs, expected: ours, message: "syncagent: adopt \(peer)'s equal commit")
            return SyncOutcome(action: .adoptedEqualTree, head: theirs)
        }
        let merge = try repo.mergeCommits(ours: ours, theirs: theirs)
        let base = try repo.mergeBase(ours, theirs)
        let ourInfo = try repo.commit(ours), theirInfo = try repo.commit(theirs)
        var records: [ConflictRecord] = []
        var notes: [String] = []
        for conflict in merge.conflicts {
            var record = makeRecord(conflict, base: base, ours: ourInfo, theirs: theirInfo, peer: peer)
            let sides = [device: conflict.ours, theirInfo.author.name: conflict.theirs]
            let winner = record.current == device ? conflict.ours : conflict.theirs
            if !merge.entries(under: conflict.path).isEmpty {
                // A file on one side, a directory on the other: the directory's files stay where
                // they are and the file version is kept beside it, so nothing is lost.
                record.kind = .typeChanged
                try merge.settle(conflict.path, with: nil)
                for v in record.versions {
                    guard let side = sides[v.device] ?? nil else { continue }
                    let copy = Self.conflictCopyPath(conflict.path, device: v.device, time: Self.seconds(v.time))
                    try merge.add(copy, blob: side.oid, mode: side.mode)
                    record.current = record.versions.first { $0.device != v.device }?.device
                }
                records.append(record)
                continue
            }
            if let (decision, strategy) = try autoResolve(record, conflict, notes: &notes) {
                switch decision {
                case .keep(let who): try merge.settle(conflict.path, with: sides[who] ?? winner)
                case .delete: try merge.settle(conflict.path, with: nil)
                case .bytes(let bytes):
                    let mode = (winner?.mode ?? 0o100644) == 0o120000 ? 0o100644 : (winner?.mode ?? 0o100644)
                    try merge.settle(conflict.path, with: ConflictSide(oid: try repo.createBlob(bytes), mode: mode))
                }
                record.markResolved(strategy: strategy, by: device)
            } else if StrategyResolver(rules: rules, commandTimeout: .seconds(30)).rule(for: record.path)?.strategy == .both {
                try merge.settle(conflict.path, with: winner)
                for v in record.versions where v.device != record.current {
                    guard let side = sides[v.device] ?? nil else { continue }
                    let copy = Self.conflictCopyPath(conflict.path, device: v.device, time: Self.seconds(v.time))
                    try merge.add(copy, blob: side.oid, mode: side.mode)
                }
                record.markResolved(strategy: "both", by: device)
            } else {
                try merge.settle(conflict.path, with: winner)
            }
            records.append(record)
        }
        let tree = try merge.writeTree()
        try checkSafe(tree: tree, peer: peer)
        let now = Int64(Date().timeIntervalSince1970)
        let sig = Signature(name: device, email: "\(device)@syncagent", time: now)
        var message = "\(device): merge \(peer)"
        if !records.isEmpty {
            message += ", \(records.count) conflict\(records.count == 1 ? "" : "s")\n\n"
                + records.map { "conflict \($0.id): \($0.kind.rawValue) \($0.filePath.display) (holding \($0.current ?? "-"))" }
                    .joined(separator: "\n")
        }
        let commit = try repo.createCommit(tree: tree, parents: [ours, theirs], author: sig, committer: sig,
                                           message: message + "\n", updateRef: nil)
        try applyTree(tree, from: ourTree)
        try moveRef("refs/heads/main", to: commit, expected: ours, message: "syncagent: merge \(peer)")
        return SyncOutcome(action: .merged, head: commit, newConflicts: records, notes: notes)
    }

    private func makeRecord(_ c: MergeConflict, base: Oid?, ours: CommitInfo, theirs: CommitInfo, peer: String) -> ConflictRecord {
        let kind: ConflictRecord.Kind
        if c.ours == nil || c.theirs == nil {
            kind = .modifiedDeleted
        } else if (c.ours!.mode == 0o120000) != (c.theirs!.mode == 0o120000) {
            kind = .typeChanged
        } else if c.ancestor == nil {
            kind = .bothAdded
        } else {
            kind = .bothModified
        }
        let theirDevice = theirs.author.name
        // Each version's time is that of the commit that made it, not of later unrelated commits.
        let ourChange = (try? repo.lastChange(of: c.path, from: ours.id, limit: base)) ?? ours
        let theirChange = (try? repo.lastChange(of: c.path, from: theirs.id, limit: base)) ?? theirs
        let sides: [(device: String, commit: CommitInfo, side: ConflictSide?)] = [
            (device, ourChange, c.ours), (theirDevice, theirChange, c.theirs),
        ]
        let id = ConflictRecord.id(path: c.path, base: c.ancestor?.oid,
                                   versions: sides.map { ($0.device, $0.side?.oid) })
        let current = ConflictRecord.winner(sides.map { ($0.device, $0.side?.oid, $0.commit.author.time) })
        return ConflictRecord(
            id: id, path: c.path.display, pathBytes: ConflictRecord.hex(c.path.bytes), kind: kind, status: .open,
            detectedAt: ISOTime.now(), detectedBy: device,
            base: c.ancestor.map { .init(blob: $0.oid.hex) },
            versions: sides.sorted { $0.device < $1.device }.map {
                .init(device: $0.device, commit: $0.commit.id.hex, blob: $0.side?.oid.hex, mode: $0.side?.mode,
                      time: ISOTime.string($0.commit.author.time))
            },
            current: current, resolution: nil)
    }

    /// Registered resolvers first, then the configured strategy: a decision and the strategy's name.
    private func autoResolve(_ record: ConflictRecord, _ conflict: MergeConflict,
                             notes: inout [String]) throws -> (ResolverDecision, String)? {
        let strategies = StrategyResolver(rules: rules, commandTimeout: .seconds(30))
        guard !resolvers.isEmpty || strategies.rule(for: record.path) != nil else { return nil }
        let base = try conflict.ancestor.map { a throws in try blob(a.oid) }
        var versions: [String: [UInt8]?] = [:]
        for v in record.versions {
            versions[v.device] = try v.blob.flatMap(Oid.init(hex:)).map { id throws in try blob(id) }
        }
        for resolver in resolvers {
            if let decision = resolver.resolve(record, base: base, versions: versions) { return (decision, resolver.name) }
        }
        let (decision, note) = strategies.decide(record, base: base, versions: versions)
        if let note { notes.append("\(record.id) \(record.path): \(note)") }
        guard let decision, let rule = strategies.rule(for: record.path) else { return nil }
        return (decision, rule.strategy.description)
    }

    private func mergeConflictBooks(peer: String, new: [ConflictRecord]) throws {
        let mine = try ConflictBook.load(repo)
        let theirsTip = try repo.resolveReference(ConflictBook.peerRef(peer))
        let theirs = try ConflictBook.load(repo, ref: ConflictBook.peerRef(peer))
        var merged = ConflictBook.union(mine, theirs)
        for record in new { merged[record.id] = merged[record.id].map { ConflictRecord.settle($0, record) } ?? record }
        try ConflictBook.save(repo, merged, device: device, message: "\(device): conflict records from \(peer)",
                              adopt: theirsTip.map { [$0] } ?? [])
    }

    /// Refuses trees that would write outside the data directory: entries named `.`, `..` or `.git`,
    /// and paths that pass through a symbolic link of the same tree.
    func checkSafe(tree: Oid, peer: String) throws {
        let files = try repo.treeFiles(tree)
        let links = Set(files.filter(\.isLink).map(\.path))
        var reasons: [String] = []
        for file in files {
            let names = file.path.components.map(\.string)
            if names.contains(where: { $0 == "." || $0 == ".." || $0.lowercased() == ".git" }) {
                reasons.append("\(file.path.display): a '.', '..' or '.git' entry")
                continue
            }
            var prefix = FilePath("")
            for component in file.path.components.dropLast() {
                prefix.append(component)
                if links.contains(prefix) {
                    reasons.append("\(file.path.display): would be written through the symbolic link \(prefix.display)")
                    break
                }
            }
        }
        if !reasons.isEmpty { throw SyncRefusal(peer: peer, reasons: reasons) }
    }

    /// Open (or all) conflict records, newest detection first.
    public func conflicts(includeResolved: Bool = false) throws -> [ConflictRecord] {
        try ConflictBook.load(repo).values
            .filter { includeResolved || $0.status == .open }
            .sorted { ($0.detectedAt, $0.id) > ($1.detectedAt, $1.id) }
    }

    public func aheadBehind(peer: String) throws -> (ahead: Int, behind: Int)? {
        guard let ours = try head(), let theirs = try repo.resolveReference(Self.trackingRef(peer)) else { return nil }
        return try repo.aheadBehind(local: ours, upstream: theirs)
    }
}
