import FoundationEssentials
import Glibc
import Platform
internal import Git
internal import ObjectStorage
import SystemPackage
import FileSystem

/// One side's version of a conflicted path, credited to the device whose commit made it.
struct SideVersion: Sendable, Equatable {
    public var device: String
    public var commit: Oid
    /// Author time of that commit (seconds since the epoch).
    public var time: Int64
    /// What the side holds at the path: a blob or link, a directory (mode 0o040000), or nil (deleted).
    public var entry: ConflictSide?

    public init(device: String, commit: Oid, time: Int64, entry: ConflictSide?) {
        self.device = device
        self.commit = commit
        self.time = time
        self.entry = entry
    }

    public var isDirectory: Bool { entry?.mode == EntryMode.tree }

    var recordVersion: ConflictRecord.Version {
        .init(device: device, commit: commit.hex, blob: isDirectory ? nil : entry?.oid.hex,
              mode: entry?.mode, time: ISOTime.string(time), tree: isDirectory ? entry?.oid.hex : nil)
    }
}

/// A path two sides of a merge changed differently.
struct PathConflict: Sendable, Equatable {
    public var path: FilePath
    public var base: ConflictSide?
    public var ours: SideVersion
    public var theirs: SideVersion

    public init(path: FilePath, base: ConflictSide?, ours: SideVersion, theirs: SideVersion) {
        self.path = path
        self.base = base
        self.ours = ours
        self.theirs = theirs
    }
}

/// What the merge does with one conflicted path: the pure decision, applied by the store.
struct PathPlan: Sendable, Equatable {
    public enum Take: Sendable, Equatable {
        /// This entry at the path (nil: the path is deleted).
        case entry(ConflictSide?)
        /// New bytes (a strategy's merge) as a regular file with this mode.
        case bytes([UInt8], mode: UInt32)
        /// The path stays a directory: the merged tree's files under it are kept.
        case directory
    }
    public struct Copy: Sendable, Equatable {
        public var path: FilePath
        public var entry: ConflictSide
    }
    public var take: Take
    /// Versions written beside the path (`NAME.conflict-DEVICE-STAMP.EXT`), so none is lost.
    public var copies: [Copy]
    /// The record, open or resolved by a strategy; the same id on every device.
    public var record: ConflictRecord
    /// Why a configured strategy declined, for the log.
    public var note: String?
    /// The `command` strategy's program to run before the plan is final: the plan itself never
    /// spawns. The store runs it (`ExternalMerge.run`) and hands the result to `completing`.
    public var external: ExternalMergeRequest?

    init(take: Take, copies: [Copy], record: ConflictRecord, note: String?, external: ExternalMergeRequest? = nil) {
        self.take = take
        self.copies = copies
        self.record = record
        self.note = note
        self.external = external
    }
}

/// What the `command` strategy needs run: the program and the versions it merges.
struct ExternalMergeRequest: Sendable, Equatable {
    public var command: [String]
    public var path: String
    public var base: [UInt8]?
    /// The version of the device whose name sorts first (`{ours}`), and the other (`{theirs}`).
    public var first: [UInt8]?
    public var second: [UInt8]?
    public var timeout: Duration
}

/// Conflict policy, in one place: given a conflicted path, the record already open for it, the
/// configured rules and the registered resolvers, what the merge writes and records. Pure: bytes
/// come through `content`, time through `now`; the same input gives the same plan on every device.
struct ConflictPolicy {
    public var device: String
    public var rules: [ResolverRule]
    public var resolvers: [any ConflictResolver]
    public var commandTimeout: Duration = .seconds(30)

    public init(device: String, rules: [ResolverRule], resolvers: [any ConflictResolver]) {
        self.device = device
        self.rules = rules
        self.resolvers = resolvers
    }

    /// - Parameters:
    ///   - existing: the open record of this path in the merged books, if any: the new versions join it.
    ///   - generation: how many records of this path are resolved already (names a new record).
    ///   - content: the bytes of a blob, nil when this device does not have it.
    public func plan(_ c: PathConflict, existing: ConflictRecord?, generation: Int, now: Int64,
                     content: (Oid) -> [UInt8]?) -> PathPlan {
        var record = existing ?? ConflictRecord(
            id: ConflictRecord.id(path: c.path, generation: generation), path: c.path.display,
            pathBytes: ConflictRecord.hex(c.path.bytes), kind: Self.kind(c), status: .open,
            detectedAt: ISOTime.string(now), detectedBy: device, base: c.base.map { .init(blob: $0.oid.hex) },
            versions: [], current: nil, resolution: nil)
        record.add(c.ours.recordVersion)
        record.add(c.theirs.recordVersion)
        if Self.kind(c) == .typeChanged { record.kind = .typeChanged }

        // A file on one device, a directory on another: the directory keeps the path (its files stay
        // where they are) and every file version is written beside it. Only a person settles this.
        if c.ours.isDirectory || c.theirs.isDirectory {
            record.kind = .typeChanged
            let copies = record.versions.compactMap { v -> PathPlan.Copy? in
                guard !v.isDirectory, let entry = Self.entry(of: v) else { return nil }
                return .init(path: Self.copyPath(c.path, device: v.device, time: ISOTime.seconds(v.time)), entry: entry)
            }
            record.current = record.holdingDevice
            return PathPlan(take: .directory, copies: copies, record: record, note: nil)
        }

        // Only versions whose bytes are here can take the path (a record from a third device may
        // name a version this device has not fetched yet).
        let available = record.versions.filter { $0.isDeletion || $0.blob.flatMap(Oid.init(hex:)).map { content($0) != nil } == true }
        var candidates = record
        candidates.versions = available.isEmpty ? record.versions : available
        let winner = candidates.winningVersion
        record.current = winner?.device
        let winnerTake = PathPlan.Take.entry(winner.flatMap(Self.entry(of:)))

        let bytes = decodeVersions(record, content: content)
        for resolver in resolvers {
            if let decision = resolver.resolve(record, base: bytes.base, versions: bytes.versions) {
                return resolved(record, decision, winner: winner, strategy: resolver.name, now: now, here: available)
            }
        }
        guard let rule = rule(forBytes: ConflictRecord.bytes(fromHex: record.pathBytes)) else {
            return PathPlan(take: winnerTake, copies: [], record: record, note: nil)
        }
        if rule.strategy == .both {
            var done = record
            done.markResolved(strategy: "both", by: device, at: now)
            return PathPlan(take: winnerTake, copies: Self.bothCopies(of: record, at: c.path, winner: winner, here: available),
                            record: done, note: nil)
        }
        if rule.strategy == .command, let command = rule.command {
            let devices = record.versions.map(\.device)
            guard devices.count == 2 else {
                return PathPlan(take: winnerTake, copies: [], record: record,
                                note: "\(record.id) \(record.path): the command strategy merges two versions; \(record.path) has \(devices.count); the conflict stays open")
            }
            let request = ExternalMergeRequest(command: command, path: record.path, base: bytes.base,
                                               first: bytes.versions[devices[0]] ?? nil, second: bytes.versions[devices[1]] ?? nil,
                                               timeout: commandTimeout)
            return PathPlan(take: winnerTake, copies: [], record: record, note: nil, external: request)
        }
        let (decision, note) = decide(rule, record, base: bytes.base, versions: bytes.versions)
        guard let decision else {
            return PathPlan(take: winnerTake, copies: [], record: record,
                            note: note.map { "\(record.id) \(record.path): \($0)" })
        }
        return resolved(record, decision, winner: winner, strategy: rule.strategy.description, now: now, here: available)
    }

    private func resolved(_ record: ConflictRecord, _ decision: ResolverDecision, winner: ConflictRecord.Version?,
                          strategy: String, now: Int64,
                          here: [ConflictRecord.Version]? = nil) -> PathPlan {
        var done = record
        done.markResolved(strategy: strategy, by: device, at: now)
        let take: PathPlan.Take
        var copies: [PathPlan.Copy] = []
        switch decision {
        case .keep(let who):
            let chosen = record.versions.first { $0.device == who } ?? winner
            take = .entry(chosen.flatMap(Self.entry(of:)))
            done.current = chosen?.device
        case .delete:
            take = .entry(nil)
        case .both:
            take = .entry(winner.flatMap(Self.entry(of:)))
            copies = Self.bothCopies(of: record, at: record.filePath, winner: winner, here: here)
        case .bytes(let bytes):
            let mode = winner?.mode.flatMap { $0 == EntryMode.executable ? $0 : nil } ?? EntryMode.file
            take = .bytes(bytes, mode: mode)
        }
        return PathPlan(take: take, copies: copies, record: done, note: nil)
    }

    /// The first `[[resolver]]` rule whose glob matches the path's bytes.
    func rule(forBytes path: [UInt8]) -> ResolverRule? {
        rules.first { Glob.matches($0.path, pathBytes: path) }
    }

    /// The configured strategy's decision, or nil with the reason it declined.
    func decide(_ rule: ResolverRule, _ record: ConflictRecord, base: [UInt8]?,
                versions: [String: [UInt8]?]) -> (decision: ResolverDecision?, note: String?) {
        let devices = record.versions.map(\.device)  // sorted by device name
        switch rule.strategy {
        case .manual, .both:
            return (nil, nil)
        case .newest:
            return (record.current.map { .keep(device: $0) }, nil)
        case .keep(let device):
            guard devices.contains(device) else { return (nil, "keep:\(device) does not apply: \(device) has no version of \(record.path)") }
            return (.keep(device: device), nil)
        case .union:
            let present = devices.compactMap { versions[$0] ?? nil }
            guard present.count == devices.count else { return (nil, "union needs every version; \(record.path) was deleted on one device") }
            return (.bytes(Merges.lineUnion(base: base, versions: present)), nil)
        case .json:
            let present = devices.compactMap { versions[$0] ?? nil }
            guard present.count == devices.count, var merged = present.first else {
                return (nil, "json merge left \(record.path) open: a version is deleted")
            }
            for next in present.dropFirst() {
                guard let m = Merges.json(base: base, merged, next) else {
                    return (nil, "json merge left \(record.path) open: a key changed differently on two devices, or a version is not a JSON object")
                }
                merged = m
            }
            return (.bytes(merged), nil)
        case .command:
            return (nil, nil)  // planned as an `ExternalMergeRequest` in `plan`
        }
    }

    /// The plan once the `command` strategy's program ran: its bytes resolve the record; a failure
    /// leaves the record open with the reason in `note`.
    public func completing(_ plan: PathPlan, with result: Result<ResolverDecision, ExternalMerge.Failure>, now: Int64) -> PathPlan {
        var open = plan
        open.external = nil
        switch result {
        case .success(let decision):
            let winner = plan.record.versions.first { $0.device == plan.record.current }
            return resolved(plan.record, decision, winner: winner, strategy: ResolverStrategy.command.description, now: now)
        case .failure(let failure):
            open.note = "\(plan.record.id) \(plan.record.path): \(failure); the conflict stays open"
            return open
        }
    }

    private func decodeVersions(_ record: ConflictRecord, content: (Oid) -> [UInt8]?) -> (base: [UInt8]?, versions: [String: [UInt8]?]) {
        let base = record.base.flatMap { Oid(hex: $0.blob) }.flatMap(content)
        var versions: [String: [UInt8]?] = [:]
        for v in record.versions {
            versions[v.device] = v.blob.flatMap(Oid.init(hex:)).flatMap(content)
        }
        return (base, versions)
    }

    static func kind(_ c: PathConflict) -> ConflictRecord.Kind {
        guard let o = c.ours.entry, let t = c.theirs.entry else { return .modifiedDeleted }
        func type(_ mode: UInt32) -> UInt32 { mode == EntryMode.executable ? EntryMode.file : mode }
        if type(o.mode) != type(t.mode) { return .typeChanged }
        return c.base == nil ? .bothAdded : .bothModified
    }

    /// `both`, from a strategy or from `syncagent resolve --keep both`: the winner keeps the path and
    /// every other version with bytes is written beside it.
    /// - Parameter here: the versions whose bytes this device has (nil: all of them); a copy is
    ///   written only of those, so a tree never names a blob the store lacks.
    static func bothCopies(of record: ConflictRecord, at path: FilePath, winner: ConflictRecord.Version?,
                           here: [ConflictRecord.Version]? = nil) -> [PathPlan.Copy] {
        record.versions.compactMap { v -> PathPlan.Copy? in
            guard v.device != winner?.device, here?.contains(v) ?? true, let entry = entry(of: v) else { return nil }
            return .init(path: copyPath(path, device: v.device, time: ISOTime.seconds(v.time)), entry: entry)
        }
    }

    static func entry(of v: ConflictRecord.Version) -> ConflictSide? {
        guard let hex = v.blob, let oid = Oid(hex: hex) else { return nil }
        return ConflictSide(oid: oid, mode: v.mode ?? EntryMode.file)
    }

    /// `notes/today.txt` -> `notes/today.conflict-watch-20261121-100000.txt`. The name's stem is
    /// shortened when needed, so that the copy's name stays within 255 bytes.
    public static func copyPath(_ path: FilePath, device: String, time: Int64) -> FilePath {
        let stamp = Self.stamp(time)
        let name = path.lastComponent?.bytes ?? Array("file".utf8)
        let tag = Array(".conflict-\(device)-\(stamp)".utf8)
        var stem = name, ext: [UInt8] = []
        if let dot = name.lastIndex(of: UInt8(ascii: ".")), dot > 0 {
            stem = Array(name[..<dot])
            ext = Array(name[dot...])
        }
        if ext.count > 32 { stem = name; ext = [] }
        let room = 255 - tag.count - ext.count
        if stem.count > room { stem = Array(stem.prefix(max(room, 1))) }
        var copy = path
        copy.removeLastComponent()
        return copy.appending(FilePath.Component(bytes: stem + tag + ext))
    }

    static func stamp(_ time: Int64) -> String {
        var t = time_t(time)
        var parts = tm()
        gmtime_r(&t, &parts)
        let date = [(Int(parts.tm_year) + 1900, 4), (Int(parts.tm_mon) + 1, 2), (Int(parts.tm_mday), 2)]
        let time = [Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec)].map { ($0, 2) }
        func digits(_ fields: [(Int, Int)]) -> String { fields.map { zeroPadded($0.0, width: $0.1) }.joined() }
        return digits(date) + "-" + digits(time)  // 20261120-100000
    }
}
