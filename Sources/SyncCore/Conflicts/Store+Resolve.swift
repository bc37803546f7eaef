import FileSystem
import FoundationEssentials
internal import Git
internal import ObjectStorage
import Glibc
import SystemPackage

/// How a user (or a strategy) settles a conflict record.
public enum ResolutionChoice: Sendable, Equatable {
    case keep(device: String)
    case newest
    /// The newer version keeps the path; the other is written beside it as a conflict copy.
    case both
    case with(bytes: [UInt8])
    case delete

    var strategyName: String {
        switch self {
        case .keep(let device): "keep:\(device)"
        case .newest: "newest"
        case .both: "both"
        case .with: "with-file"
        case .delete: "delete"
        }
    }
}

/// A record that could not be found or settled, with what to do.
public struct ResolveError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// For programs (`SyncError(_:)`): `no-such-conflict` unless a write failed (`io`, `disk-full`)
    /// or an argument is wrong.
    public var code: SyncError.Code
    public init(message: String, code: SyncError.Code = .noSuchConflict) {
        self.message = message
        self.code = code
    }
    public var description: String { message }
}

/// How a user names a record on the command line: its id, or its path. `pathBytes` carries the
/// path exactly as given (the argument's own bytes), so a name that is not UTF-8 still matches.
public struct RecordTarget: Codable, Sendable, Equatable {
    public var text: String
    public var pathBytes: [UInt8]?
    public init(text: String, pathBytes: [UInt8]? = nil) {
        self.text = text
        self.pathBytes = pathBytes
    }

    func matches(_ record: ConflictRecord) -> Bool {
        if record.id == text { return true }
        let hex = ConflictRecord.hex(pathBytes ?? Array(text.utf8))
        return record.pathBytes == hex || record.path == text
    }
}

extension Store {
    /// The open record with this id, or the open record at this path.
    public func openRecord(_ target: RecordTarget) throws -> ConflictRecord {
        let open = try conflicts()
        if let byId = open.first(where: { $0.id == target.text }) { return byId }
        let byPath = open.filter { target.matches($0) }
        if byPath.count == 1 { return byPath[0] }
        if byPath.count > 1 {
            throw ResolveError(message: "\(byPath.count) open conflicts at \(target.text): \(byPath.map(\.id).joined(separator: ", ")); name one by id")
        }
        if let resolved = try conflicts(includeResolved: true).first(where: { target.matches($0) }) {
            throw ResolveError(message: "conflict \(resolved.id) (\(resolved.path)) is already resolved (\(resolved.resolution?.strategy ?? "?") by \(resolved.resolution?.by ?? "?")); see `syncagent conflicts --all`")
        }
        throw ResolveError(message: "no open conflict with id or path '\(target.text)'; `syncagent conflicts` lists them")
    }

    /// Any record (open or resolved) with this id or path; the open one first.
    public func anyRecord(_ target: RecordTarget) throws -> ConflictRecord? {
        let all = try conflicts(includeResolved: true)
        return all.first { $0.id == target.text } ?? all.filter { target.matches($0) }.sorted { a, _ in a.status == .open }.first
    }

    /// The bytes of one version of a record: "base" or a device name. nil when that version is a
    /// deletion (or a directory).
    public func versionBytes(_ record: ConflictRecord, version: String) throws -> [UInt8]? {
        let hex: String?
        if version == "base" {
            guard let base = record.base else {
                throw ResolveError(message: "conflict \(record.id) has no base version (\(record.path) was added on more than one device)")
            }
            hex = base.blob
        } else if let v = record.versions.first(where: { $0.device == version }) {
            if v.isDirectory {
                throw ResolveError(message: "\(version)'s version of \(record.path) is a directory; its files are in the data directory (or: git --git-dir=\(gitDir) ls-tree -r \(v.tree ?? ""))")
            }
            hex = v.blob
        } else {
            let names = (["base"] + record.versions.map(\.device)).joined(separator: ", ")
            throw ResolveError(message: "conflict \(record.id) has no version '\(version)'; choose one of: \(names)")
        }
        guard let hex else { return nil }
        guard let oid = Oid(hex: hex) else { throw ResolveError(message: "record \(record.id) holds a bad blob id \(hex)") }
        guard repo.hasObject(oid) else {
            throw ResolveError(message: "this device does not have \(version)'s version of \(record.path) yet; sync with \(version) first (syncagent sync)")
        }
        return try blob(oid)
    }

    /// Settles an open record: puts the chosen version in the data directory (atomically, names
    /// byte-exact), commits it, and marks the record resolved so that every peer learns of it.
    /// A record of a file on one device and a directory on another settles the same way: keeping
    /// the file replaces the directory (its files stay in the history), keeping the directory
    /// removes the file copy written beside it, `both` keeps the two as they are.
    @discardableResult
    public func resolve(_ record: ConflictRecord, _ choice: ResolutionChoice, now: Date = Date()) throws -> ConflictRecord {
        let path = record.filePath
        var touched: Set<FilePath> = [path]
        var counter: UInt64 = 0
        // The file versions a merge wrote beside a directory (or `both` beside the path).
        let copies = record.versions.compactMap { v -> (path: FilePath, side: ConflictSide)? in
            guard let entry = ConflictPolicy.entry(of: v) else { return nil }
            return (ConflictPolicy.copyPath(path, device: v.device, time: ISOTime.seconds(v.time)), entry)
        }
        // A path the rules keep off this device's disk (`never`, `devices`) is settled in the
        // index alone: the store holds it, the data directory never does.
        func indexOnly(_ target: FilePath) -> Bool { !policy.materializes(target) }
        func removeVersion(_ target: FilePath) throws {
            guard indexOnly(target) else { return try removeFromData(target) }
            let index = try liveIndex()
            try index.remove(target)
            if !index.entries(under: target).isEmpty { try index.removeDirectory(target) }
            try saveIndex(index)
        }
        func removeCopies() throws {
            // Only a copy that still holds that version's bytes: one the user edited stays.
            for copy in copies {
                if indexOnly(copy.path) {
                    guard try liveIndex().entry(copy.path)?.oid == copy.side.oid else { continue }
                } else if !diskMatches(copy.path, copy.side, entry: nil) {
                    continue
                }
                try removeVersion(copy.path)
                touched.insert(copy.path)
            }
        }
        func put(_ bytes: [UInt8], mode: UInt32, at target: FilePath) throws {
            if indexOnly(target) {
                let index = try liveIndex()
                if !index.entries(under: target).isEmpty { try index.removeDirectory(target) }
                try index.add(target, blob: try repo.createBlob(bytes), mode: mode)
                try saveIndex(index)
                touched.insert(target)
                return
            }
            do {
                let abs = data.pushing(target)
                try Files.makeDirectories(abs.removingLastComponent())
                // The new bytes are complete on disk before anything is taken away.
                let temp = AgentTemporary.path(in: abs.removingLastComponent(), counter: &counter)
                if mode == EntryMode.link {
                    try Files.createLink(temp, target: bytes)
                } else {
                    try Files.create(temp, bytes: bytes, executable: mode == EntryMode.executable)
                    // Its bytes on the disk before its name replaces the old file: a power cut
                    // leaves one version or the other, never an empty or zero-filled file.
                    _ = Durability.flushFiles([temp])
                }
                do {
                    if let stat = try FileStat.of(abs), stat.kind == .directory {
                        try Files.removeTree(abs)  // a directory version gives way; its files are in the history
                    }
                    try Files.rename(temp, to: abs)
                    // The resolution is answered once the new name is durable too.
                    _ = Durability.flushFiles([], andDirectories: [abs.removingLastComponent()])
                } catch {
                    try? Files.remove(temp)
                    throw error
                }
            } catch {
                let errno = (error as? Errno) ?? .ioError
                throw ResolveError(message: "\(ApplyFailure(path: target, errno: errno)); \(record.id) stays open",
                                   code: errno == .noSpace ? .diskFull : .io)
            }
            touched.insert(target)
        }
        func place(_ v: ConflictRecord.Version, keepCopies: Bool = false) throws {
            if v.isDirectory {
                if !keepCopies { try removeCopies() }  // the directory already holds the path
                return
            }
            guard let hex = v.blob, let oid = Oid(hex: hex) else {
                try removeVersion(path)
                if !keepCopies { try removeCopies() }
                return
            }
            guard repo.hasObject(oid) else {
                throw ResolveError(message: "this device does not have \(v.device)'s version of \(record.path) yet; sync with \(v.device) first (syncagent sync), or resolve on a device that has it")
            }
            if !diskMatches(path, ConflictSide(oid: oid, mode: v.mode ?? EntryMode.file), entry: nil) {
                try put(try blob(oid), mode: v.mode ?? EntryMode.file, at: path)
            }
            if !keepCopies { try removeCopies() }
        }
        // Look, ask `ResolvePlan`, carry it out. A later change that made a directory above the
        // path a file (or link) supersedes the conflict: the record closes as it is, every version
        // stays in the history (`syncagent show`).
        let plan = try ResolvePlan.decide(record, choice, supersededBy: blockingParent(of: path),
                                          editedSince: try editedSince(record))
        if !plan.touchesPath { touched.remove(path) }
        for step in plan.steps {
            switch step {
            case .place(let v, let keepCopies):
                try place(v, keepCopies: keepCopies)
            case .writeCopies(let list):
                for copy in list where repo.hasObject(copy.entry.oid) {
                    try put(try blob(copy.entry.oid), mode: copy.entry.mode, at: copy.path)
                }
            case .put(let bytes):
                try put(bytes, mode: EntryMode.file, at: path)
            case .remove:
                try removeVersion(path)
            case .removeCopies:
                try removeCopies()
            }
        }
        if !touched.isEmpty {
            _ = try commit(paths: touched, now: now, reason: "resolve \(record.id) (\(record.path)) with \(choice.strategyName)")
        }
        var resolved = record
        resolved.status = .resolved
        resolved.resolution = .init(strategy: plan.strategy, by: device,
                                    at: ISOTime.string(Int64(now.timeIntervalSince1970)))
        resolved.current = resolved.heldAfterResolution
        var book = try ConflictBook.load(repo)
        book[record.id] = resolved
        try ConflictBook.save(repo, book, device: device,
                              message: "\(device): resolve \(record.id) (\(record.path)) with \(choice.strategyName)")
        return resolved
    }

    /// Whether `main` holds at the record's path a file or link that is none of the record's
    /// versions: an edit committed after the conflict (the user wrote the path again).
    func editedSince(_ record: ConflictRecord) throws -> Bool {
        guard let head = try head(), let now = try repo.entry(at: record.filePath, inTree: try repo.commit(head).tree),
              now.mode != EntryMode.tree else { return false }
        return !record.versions.contains { $0.blob == now.oid.hex } && record.base?.blob != now.oid.hex
    }

    /// The nearest directory above `path` that is now a file or link in the data directory, if any.
    func blockingParent(of path: FilePath) -> FilePath? {
        var prefix = FilePath("")
        for component in path.components.dropLast() {
            prefix.append(component)
            if let stat = try? FileStat.of(data.pushing(prefix)), stat.kind != .directory { return prefix }
        }
        return nil
    }

    /// Removes a file, link or directory tree from the data directory (byte-exact names).
    func removeFromData(_ path: FilePath) throws {
        do { try Files.removeTree(data.pushing(path)) } catch {
            throw ResolveError(message: "cannot delete \(data.pushing(path).display): \(error)", code: error == .noSpace ? .diskFull : .io)
        }
        pruneEmptyParents(of: path)
    }
}
