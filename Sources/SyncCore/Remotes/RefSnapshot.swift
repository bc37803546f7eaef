import FileSystem
internal import Git
internal import ObjectStorage
import SystemPackage

/// A bare repository's references as they are on disk (loose files under `refs/` over
/// `packed-refs`), read byte for byte: names are never decoded. What `notify-changes` compares
/// before and after a burst of ref moves. Pure reading: no libgit2, no locks, no writes. A file
/// that is the one read before is not read again (`RememberedReads`).
public struct RefSnapshot: Equatable, Sendable {
    /// Ref name (e.g. `refs/heads/devices/phone`) -> the 40 hex digits it points at.
    public private(set) var refs: [[UInt8]: [UInt8]] = [:]

    public init(refs: [[UInt8]: [UInt8]] = [:]) { self.refs = refs }

    /// Reads `gitDir`'s references now. A ref git is rewriting is read whole, old or new: git and
    /// libgit2 write a `.lock` file and rename it into place (lock files are skipped).
    public static func read(gitDir: FilePath) -> RefSnapshot {
        read(gitDir: gitDir, under: ["refs/"]).snapshot
    }

    /// Only the refs under `prefixes` (each a directory of refs ending in "/", e.g.
    /// `refs/heads/devices/`): the other directories are not walked. `whole` is false when
    /// `packed-refs`, a directory or a ref under them could not be read for another reason than
    /// not being there (gone in a rename is fine): the snapshot may then lack refs that exist.
    /// `packedUnder`: prefixes whose refs are taken from `packed-refs` only (their loose files
    /// are read by name, `readLoose`, and their directories never listed).
    public static func read(gitDir: FilePath, under prefixes: [String], packedUnder: [String] = []) -> (snapshot: RefSnapshot, whole: Bool) {
        var snapshot = RefSnapshot()
        var whole = true
        let wanted = prefixes.map { Array($0.utf8) }
        let packedWanted = wanted + packedUnder.map { Array($0.utf8) }
        func readIfThere(_ path: FilePath) -> [UInt8]? {
            do { return try RememberedReads.read(path, root: gitDir) } catch {
                if error != .noSuchFileOrDirectory { whole = false }
                return nil
            }
        }
        if let packed = readIfThere(gitDir.appending("packed-refs")) {
            for line in packed.split(separator: UInt8(ascii: "\n")) {
                // "<id> <name>"; comments start with '#', peeled tags with '^'.
                guard let first = line.first, first != UInt8(ascii: "#"), first != UInt8(ascii: "^"),
                      let space = line.firstIndex(of: UInt8(ascii: " ")) else { continue }
                let id = Array(line[line.startIndex..<space])
                let name = line[(space + 1)...]
                guard isObjectId(id), packedWanted.contains(where: { name.starts(with: $0) }) else { continue }
                snapshot.refs[Array(name)] = id
            }
        }
        for prefix in wanted {
            let root = gitDir.pushing(FilePath(bytes: prefix))
            Directory.walk(root, unreadable: { rel, errno in
                if !(rel.isEmpty && errno == .noSuchFileOrDirectory) { whole = false }
            }) { rel, kind in
                guard kind == .regular, rel.lastComponent?.extension != "lock",
                      let bytes = readIfThere(root.pushing(rel)), bytes.count >= 40 else { return }
                let id = Array(bytes[0..<40])
                guard isObjectId(id) else { return }  // a symbolic ref ("ref: ...") moves with its target
                var name = prefix
                if name.last != UInt8(ascii: "/") { name.append(UInt8(ascii: "/")) }
                snapshot.refs[name + rel.bytes] = id
            }
        }
        return (snapshot, whole)
    }

    /// Where a hub keeps the devices' branches and their records.
    static let hubPrefixes = ["refs/heads/devices/", "refs/syncagent/devices/"]

    /// A hub's refs that its devices move: the branches under `refs/heads/devices/`, listed, and
    /// each branch's records (`refs/syncagent/devices/<device>/conflicts`, what a merge reads),
    /// read by name: the directories that hold them are not listed. `whole`: as for `read`.
    public static func readHub(gitDir: FilePath) -> (snapshot: RefSnapshot, whole: Bool) {
        var read = read(gitDir: gitDir, under: [hubPrefixes[0]], packedUnder: [hubPrefixes[1]])
        let heads = Array(hubPrefixes[0].utf8)
        let records = read.snapshot.refs.keys.filter { $0.starts(with: heads) && !$0[heads.count...].contains(UInt8(ascii: "/")) }
            .map { Array(hubPrefixes[1].utf8) + $0[heads.count...] + Array("/conflicts".utf8) }
        read.whole = read.snapshot.readLoose(gitDir: gitDir, names: records) && read.whole
        return read
    }

    /// A peer's own refs, as the agent's watch of them covers them: every ref under `refs/` but
    /// `refs/remotes/` (moved when the peer fetches from us) and `refs/tags/`; a hub's, as
    /// `readHub` reads them. `whole`: as for `read`.
    public static func readPeer(gitDir: FilePath, hub: Bool) -> (snapshot: RefSnapshot, whole: Bool) {
        if hub { return readHub(gitDir: gitDir) }
        let read = read(gitDir: gitDir, under: ["refs/"])
        return (read.snapshot.filtered { name in
            !name.starts(with: Array("refs/remotes/".utf8)) && !name.starts(with: Array("refs/tags/".utf8))
        }, read.whole)
    }

    /// Reads the loose files of these refs by name, each over what `packed-refs` said of it (a
    /// loose ref hides a packed one); a name with no loose file keeps its packed value, if any.
    /// False when a file is there and cannot be read (another reason than not being there).
    /// With many devices, listing each device's directory of records on a hub cost more than
    /// reading the one file in it: closing a directory makes the kernel look through every
    /// inotify watch on it, one per agent watching the hub.
    public mutating func readLoose(gitDir: FilePath, names: [[UInt8]]) -> Bool {
        var whole = true
        for name in names {
            let bytes: [UInt8]
            do { bytes = try RememberedReads.read(gitDir.pushing(FilePath(bytes: name)), root: gitDir) } catch {
                if error != .noSuchFileOrDirectory && error != .notDirectory { whole = false }
                continue
            }
            guard bytes.count >= 40 else { continue }
            let id = Array(bytes[0..<40])
            if Self.isObjectId(id) { refs[name] = id }
        }
        return whole
    }

    /// What moved from `before` to this snapshot, sorted by name: a deleted ref has 40 zeros.
    public func changes(since before: RefSnapshot) -> [(name: [UInt8], id: [UInt8])] {
        var out: [(name: [UInt8], id: [UInt8])] = []
        for (name, id) in refs where before.refs[name] != id { out.append((name, id)) }
        for name in before.refs.keys where refs[name] == nil { out.append((name, Self.zero)) }
        return out.sorted { $0.name.lexicographicallyPrecedes($1.name) }
    }

    /// Only the refs whose names `keep` takes.
    public func filtered(_ keep: ([UInt8]) -> Bool) -> RefSnapshot {
        RefSnapshot(refs: refs.filter { keep($0.key) })
    }

    static let zero = [UInt8](repeating: UInt8(ascii: "0"), count: 40)

    private static func isObjectId(_ bytes: [UInt8]) -> Bool {
        bytes.count == 40 && bytes.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
