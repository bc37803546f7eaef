import FoundationEssentials
import Glibc
import Platform
internal import Git
internal import ObjectStorage
import SystemPackage
import FileSystem

/// A path two devices changed differently since their common version: SPEC.md's conflict record.
public struct ConflictRecord: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case bothModified = "both-modified"
        case bothAdded = "both-added"
        case modifiedDeleted = "modified-deleted"
        case typeChanged = "type-changed"
    }

    public enum Status: String, Codable, Sendable {
        case open, resolved
    }

    public struct Base: Codable, Sendable, Equatable {
        public var blob: String
    }

    public struct Version: Codable, Sendable, Equatable {
        public var device: String
        public var commit: String
        /// nil when this device deleted the path.
        public var blob: String?
        /// The git file mode of the version (regular, executable or link; 0o040000 for a directory);
        /// not in SPEC's required keys.
        public var mode: UInt32?
        public var time: String
        /// For a directory version (a file on one device, a directory on another): the directory's
        /// tree; its `blob` is null. Absent for files, links and deletions.
        public var tree: String?

        public init(device: String, commit: String, blob: String?, mode: UInt32?, time: String, tree: String? = nil) {
            self.device = device
            self.commit = commit
            self.blob = blob
            self.mode = mode
            self.time = time
            self.tree = tree
        }

        public var isDirectory: Bool { tree != nil }
        /// Whether this version deleted the path.
        public var isDeletion: Bool { blob == nil && tree == nil }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(device, forKey: .device)
            try c.encode(commit, forKey: .commit)
            try c.encode(blob, forKey: .blob)  // null for a deletion, as SPEC.md shows
            try c.encode(mode, forKey: .mode)
            try c.encode(time, forKey: .time)
            try c.encodeIfPresent(tree, forKey: .tree)
        }
    }

    public struct Resolution: Codable, Sendable, Equatable {
        public var strategy: String
        public var by: String
        public var at: String
    }

    public var id: String
    /// The path as UTF-8 text (lossy for names that are not valid UTF-8; `pathBytes` is exact).
    public var path: String
    /// The exact bytes of the path, hex-encoded.
    public var pathBytes: String
    public var kind: Kind
    public var status: Status
    public var detectedAt: String
    public var detectedBy: String
    public var base: Base?
    public var versions: [Version]
    public var current: String?
    public var resolution: Resolution?

    public var filePath: FilePath { FilePath(bytes: Self.bytes(fromHex: pathBytes)) }

    /// A record is input from a peer: its path must be a relative path inside the data directory
    /// (no '.', '..' or '.git' component, not empty, no NUL), or the record is ignored.
    var hasSafePath: Bool {
        let bytes = Self.bytes(fromHex: pathBytes)
        guard !bytes.isEmpty, bytes.count * 2 == pathBytes.utf8.count, !bytes.contains(0), bytes.first != UInt8(ascii: "/") else { return false }
        for part in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            let lower = part.map { $0 >= 0x41 && $0 <= 0x5a ? $0 + 0x20 : $0 }
            if part.isEmpty || lower == Array(".".utf8) || lower == Array("..".utf8) || lower == Array(".git".utf8) { return false }
        }
        return true
    }

    /// The id names a path's n-th conflict (`generation`: how many records of that path were already
    /// resolved), so every device that detects a conflict at the path, with any peer and in any
    /// order, names the same record, and the versions of all devices gather in it.
    /// The id of the record that carries on `id` with versions its resolution never saw.
    public static func followUpID(_ id: String) -> String {
        "c-" + String(Oid.hashing(Array("follow-up of \(id)\n".utf8)).hex.prefix(12))
    }

    /// Two copies of one record, one resolved and one open: the open copy's versions the
    /// resolution did not see (a device it lacks, or a later version of a device), as an open
    /// follow-up record; nil when the resolution saw them all.
    static func followUp(_ x: ConflictRecord, _ y: ConflictRecord) -> ConflictRecord? {
        let (done, open): (ConflictRecord, ConflictRecord)
        if x.status == .resolved, y.status == .open { (done, open) = (x, y) }
        else if y.status == .resolved, x.status == .open { (done, open) = (y, x) }
        else { return nil }
        let unseen = open.versions.filter { v in
            guard let seen = done.versions.first(where: { $0.device == v.device }) else { return true }
            // (the same bytes credited to a later commit are no new version). Other bytes are
            // unseen unless surely older: commit times have whole seconds, so two versions a device
            // made within one second cannot be ordered here, and a version is never dropped on a
            // tie (found by test_conflict_after_resolution: a coin toss on the commit ids lost one).
            return (seen.blob != v.blob || seen.tree != v.tree) && ISOTime.seconds(v.time) >= ISOTime.seconds(seen.time)
        }
        guard !unseen.isEmpty else { return nil }
        var next = ConflictRecord(id: followUpID(done.id), path: done.path, pathBytes: done.pathBytes, kind: open.kind,
                                  status: .open, detectedAt: open.detectedAt, detectedBy: open.detectedBy,
                                  base: done.base, versions: [], current: open.current, resolution: nil)
        for v in unseen { next.add(v) }
        return next
    }

    public static func id(path: FilePath, generation: Int) -> String {
        let text = "path " + hex(path.bytes) + "\ngeneration \(generation)\n"
        return "c-" + String(Oid.hashing(Array(text.utf8)).hex.prefix(12))
    }

    /// The device whose version the data directories hold while the record is open: with a
    /// directory among the versions, the directory keeps the path (the latest directory version);
    /// otherwise the winner.
    public var holdingDevice: String? {
        if let dir = versions.filter(\.isDirectory).max(by: { ($0.time, $0.device) < ($1.time, $1.device) }) {
            return dir.device
        }
        return winningVersion?.device
    }

    /// The version every device holds while the record is open (see `winner`).
    public var winningVersion: Version? {
        let name = Self.winner(versions.map { ($0.device, $0.isDeletion ? nil : Oid(hex: $0.blob ?? $0.tree ?? ""), ISOTime.seconds($0.time)) })
        return versions.first { $0.device == name }
    }

    /// Adds (or updates) one device's version: a device has one version per record, the later one.
    public mutating func add(_ version: Version) {
        if let i = versions.firstIndex(where: { $0.device == version.device }) {
            versions[i] = Self.later(versions[i], version)
        } else {
            versions.append(version)
            versions.sort { $0.device < $1.device }
        }
        current = winningVersion?.device
    }

    /// Of two versions from one device, the later one (ties: the larger commit id), so that the
    /// choice is the same whichever order two devices learn of them in.
    static func later(_ a: Version, _ b: Version) -> Version {
        let ta = ISOTime.seconds(a.time), tb = ISOTime.seconds(b.time)
        if ta != tb { return ta > tb ? a : b }
        return a.commit >= b.commit ? a : b
    }

    /// Which version every device holds while the record is open: a modification beats a deletion;
    /// otherwise the later author time; on a tie, the device whose name sorts last.
    static func winner(_ versions: [(device: String, blob: Oid?, time: Int64)]) -> String? {
        versions.max { a, b in
            if (a.blob == nil) != (b.blob == nil) { return a.blob == nil }
            if a.time != b.time { return a.time < b.time }
            return a.device < b.device
        }?.device
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    static func bytes(fromHex hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = hex.makeIterator()
        while let a = it.next(), let b = it.next(), let v = UInt8(String([a, b]), radix: 16) { out.append(v) }
        return out
    }

    /// Deterministic JSON: the same record gives the same bytes on every device.
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data()) + [UInt8(ascii: "\n")]
    }

    // Nulls are part of the contract: encode them.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(path, forKey: .path)
        try c.encode(pathBytes, forKey: .pathBytes)
        try c.encode(kind, forKey: .kind)
        try c.encode(status, forKey: .status)
        try c.encode(detectedAt, forKey: .detectedAt)
        try c.encode(detectedBy, forKey: .detectedBy)
        try c.encode(base, forKey: .base)
        try c.encode(versions, forKey: .versions)
        try c.encode(current, forKey: .current)
        try c.encode(resolution, forKey: .resolution)
    }

    mutating func markResolved(strategy: String, by device: String, at seconds: Int64 = Int64(Date().timeIntervalSince1970)) {
        status = .resolved
        resolution = Resolution(strategy: strategy, by: device, at: ISOTime.string(seconds))
        current = heldAfterResolution
    }

    /// Whose version the data directory holds at the path once the record is resolved: the kept
    /// device's (`keep:DEVICE`), the newest (`newest`, and `both`, which puts the others beside
    /// it), none for a file written by hand or a deletion; a merge keeps what the record said.
    var heldAfterResolution: String? {
        guard let strategy = resolution?.strategy else { return current }
        if strategy.hasPrefix("keep:") { return String(strategy.dropFirst("keep:".count)) }
        if strategy == "newest" || strategy == "both" { return (winningVersion ?? versions.first)?.device }
        if strategy == "with-file" || strategy == "delete" { return nil }
        return current
    }

    /// Two copies of one record (from two devices) settle to one, the same whichever comes first:
    /// a resolution wins over "open"; two resolutions settle by the later time, then the device name
    /// that sorts last; two open copies gather the versions of both.
    public static func settle(_ a: ConflictRecord, _ b: ConflictRecord) -> ConflictRecord {
        switch (a.resolution, b.resolution) {
        case (nil, nil):
            var first = (a.detectedAt, a.detectedBy) <= (b.detectedAt, b.detectedBy) ? a : b
            let second = first == a ? b : a
            for v in second.versions { first.add(v) }
            if first.kind != second.kind, second.kind == .typeChanged || first.kind == .typeChanged { first.kind = .typeChanged }
            first.current = first.holdingDevice
            return first
        case (_?, nil): return a
        case (nil, _?): return b
        case let (ra?, rb?):
            if ra.at != rb.at { return ra.at > rb.at ? a : b }
            if ra.by != rb.by { return ra.by > rb.by ? a : b }
            return a.encoded().lexicographicallyPrecedes(b.encoded()) ? b : a
        }
    }
}
