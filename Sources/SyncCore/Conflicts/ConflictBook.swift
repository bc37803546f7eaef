import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// The conflict records of a store. They live in the store, never in the data directory: a commit
/// on `refs/syncagent/conflicts` whose tree holds one `<id>.json` per record. Peers fetch that ref
/// like `main`, so records travel with the sync.
struct ConflictBook {
    static let ref = "refs/syncagent/conflicts"
    static func peerRef(_ peer: String) -> String { "refs/remotes/\(peer)/conflicts" }

    /// The records on a ref (empty when the ref does not exist yet).
    static func load(_ repo: Repository, ref: String = ConflictBook.ref) throws(GitError) -> [String: ConflictRecord] {
        guard let tip = try repo.resolveReference(ref) else { return [:] }
        var records: [String: ConflictRecord] = [:]
        for file in try repo.treeFiles(try repo.commit(tip).tree) {
            guard let record = try? JSONDecoder().decode(ConflictRecord.self, from: Data(try repo.blobData(file.oid))),
                  record.hasSafePath else { continue }
            records[record.id] = record
        }
        return records
    }

    /// Writes `records` as the new state of the book if it differs from what is there. When the
    /// result equals a peer's book exactly, that peer's commit is adopted, so idle devices converge
    /// on one commit instead of writing new ones back and forth.
    @discardableResult
    static func save(_ repo: Repository, _ records: [String: ConflictRecord], device: String,
                     message: String, adopt candidates: [Oid] = []) throws(GitError) -> Bool {
        var entries: [(name: String, blob: Oid)] = []
        for id in records.keys.sorted() {
            entries.append((name: "\(id).json", blob: try repo.createBlob(records[id]!.encoded())))
        }
        let tree = try repo.writeFlatTree(entries)
        let current = try repo.resolveReference(ref)
        if let current, try repo.commit(current).tree == tree { return false }
        let objects = repo.gitDir.appending("objects")
        for candidate in candidates.sorted(by: >) where try repo.commit(candidate).tree == tree {
            // The peer's book came with a fetch, which made its objects durable; the tree and blobs
            // written above may be loose.
            if !Durability.flushExistingImmutable((entries.map(\.blob) + [tree]).map(repo.looseObjectPath), andDirectories: [objects]) {
                Durability.flushFileSystem(containing: repo.gitDir)
            }
            try repo.updateReference(ref, to: candidate, expected: current, message: "syncagent: adopt conflict records")
            if !Durability.flushReplaced(FilePath(ref), under: repo.gitDir) { Durability.flushFileSystem(containing: repo.gitDir) }
            return true
        }
        let now = Int64(Date().timeIntervalSince1970)
        let sig = Signature(name: device, email: "\(device)@syncagent", time: now)
        let parents = ([current] + candidates.map { Optional($0) }).compactMap { $0 }
        let commit = try repo.createCommit(tree: tree, parents: Array(Set(parents)).sorted(), author: sig,
                                           committer: sig, message: message, updateRef: nil)
        // Exactly what was written (a loose file each, unless it was packed already), then the ref.
        if !Durability.flushExistingImmutable((entries.map(\.blob) + [tree, commit]).map(repo.looseObjectPath), andDirectories: [objects]) {
            Durability.flushFileSystem(containing: repo.gitDir)
        }
        try repo.updateReference(ref, to: commit, expected: current, message: message)
        if !Durability.flushReplaced(FilePath(ref), under: repo.gitDir) { Durability.flushFileSystem(containing: repo.gitDir) }
        return true
    }

    /// Every record of both books, each id settled by `ConflictRecord.settle`. Where one copy of a
    /// record is resolved and the other is open with versions the resolution never saw (a device
    /// that had not heard of the resolution added a newer conflict's versions, or a third device's
    /// version of the same dispute), the resolution stands for what it saw and those versions go on
    /// in a follow-up record (`ConflictRecord.followUpID`: the same id on every device), open: a
    /// resolution never closes a version unseen.
    static func union(_ a: [String: ConflictRecord], _ b: [String: ConflictRecord]) -> [String: ConflictRecord] {
        var out = a.merging(b) { ConflictRecord.settle($0, $1) }
        for (id, x) in a {
            guard let y = b[id], let next = ConflictRecord.followUp(x, y) else { continue }
            out[next.id] = out[next.id].map { ConflictRecord.settle($0, next) } ?? next
        }
        return out
    }
}
