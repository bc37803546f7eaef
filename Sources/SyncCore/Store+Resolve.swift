import FileSystem
import Foundation
import Git
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
    public init(message: String) { self.message = message }
    public var description: String { message }
}

extension Store {
    /// The open record with this id, or the open record at this path.
    public func openRecord(_ idOrPath: String) throws -> ConflictRecord {
        let open = try conflicts()
        if let byId = open.first(where: { $0.id == idOrPath }) { return byId }
        let byPath = open.filter { $0.path == idOrPath || $0.filePath == FilePath(idOrPath) }
        if byPath.count == 1 { return byPath[0] }
        if byPath.count > 1 {
            throw ResolveError(message: "\(byPath.count) open conflicts at \(idOrPath): \(byPath.map(\.id).joined(separator: ", ")); name one by id")
        }
        if let resolved = try conflicts(includeResolved: true).first(where: { $0.id == idOrPath || $0.path == idOrPath }) {
            throw ResolveError(message: "conflict \(resolved.id) (\(resolved.path)) is already resolved (\(resolved.resolution?.strategy ?? "?") by \(resolved.resolution?.by ?? "?")); see `syncagent conflicts --all`")
        }
        throw ResolveError(message: "no open conflict with id or path '\(idOrPath)'; `syncagent conflicts` lists them")
    }

    /// The bytes of one version of a record: "base" or a device name. nil when that version is a deletion.
    public func versionBytes(_ record: ConflictRecord, version: String) throws -> [UInt8]? {
        let hex: String?
        if version == "base" {
            guard let base = record.base else {
                throw ResolveError(message: "conflict \(record.id) has no base version (both sides added \(record.path))")
            }
            hex = base.blob
        } else if let v = record.versions.first(where: { $0.device == version }) {
            hex = v.blob
        } else {
            let names = (["base"] + record.versions.map(\.device)).joined(separator: ", ")
            throw ResolveError(message: "conflict \(record.id) has no version '\(version)'; choose one of: \(names)")
        }
        guard let hex else { return nil }
        guard let oid = Oid(hex: hex) else { throw ResolveError(message: "record \(record.id) holds a bad blob id \(hex)") }
        return try blob(oid)
    }

    /// Settles an open record: writes the chosen bytes into the data directory (atomically), commits
    /// them, and marks the record resolved so that every peer learns of it.
    @discardableResult
    public func resolve(_ record: ConflictRecord, _ choice: ResolutionChoice, now: Date = Date()) throws -> ConflictRecord {
        let path = record.filePath
        var touched: Set<FilePath> = [path]
        func version(of device: String) throws -> ConflictRecord.Version {
            guard let v = record.versions.first(where: { $0.device == device }) else {
                let names = record.versions.map(\.device).joined(separator: ", ")
                throw ResolveError(message: "conflict \(record.id) has no version from '\(device)'; choose one of: \(names)")
            }
            return v
        }
        func place(_ v: ConflictRecord.Version, at target: FilePath) throws {
            guard let hex = v.blob, let oid = Oid(hex: hex) else {
                try removeFromData(target)
                return
            }
            try writeIntoData(target, bytes: try blob(oid), mode: v.mode ?? 0o100644)
        }
        switch choice {
        case .keep(let device):
            try place(try version(of: device), at: path)
        case .newest:
            let winner = ConflictRecord.winner(record.versions.map { ($0.device, $0.blob.flatMap(Oid.init(hex:)), Self.seconds($0.time)) })
            try place(try version(of: winner ?? record.versions[0].device), at: path)
        case .both:
            let winner = ConflictRecord.winner(record.versions.map { ($0.device, $0.blob.flatMap(Oid.init(hex:)), Self.seconds($0.time)) })
            for v in record.versions {
                if v.device == winner {
                    try place(v, at: path)
                } else if v.blob != nil {
                    let copy = Self.conflictCopyPath(path, device: v.device, time: Self.seconds(v.time))
                    try place(v, at: copy)
                    touched.insert(copy)
                }
            }
        case .with(let bytes):
            try writeIntoData(path, bytes: bytes, mode: 0o100644)
        case .delete:
            try removeFromData(path)
        }
        _ = try commit(paths: touched, now: now, reason: "resolve \(record.id) (\(record.path)) with \(choice.strategyName)")
        var resolved = record
        resolved.status = .resolved
        resolved.resolution = .init(strategy: choice.strategyName, by: device,
                                    at: ISOTime.string(Int64(now.timeIntervalSince1970)))
        var book = try ConflictBook.load(repo)
        book[record.id] = resolved
        try ConflictBook.save(repo, book, device: device,
                              message: "\(device): resolve \(record.id) (\(record.path)) with \(choice.strategyName)")
        return resolved
    }

    /// `notes/today.txt` -> `notes/today.conflict-watch-20261121-100000.txt`.
    public static func conflictCopyPath(_ path: FilePath, device: String, time: Int64) -> FilePath {
        let f = DateFormatter()
        f.dateFormat = "yyyyMMdd-HHmmss"
        f.timeZone = TimeZone(identifier: "UTC")
        f.locale = Locale(identifier: "en_US_POSIX")
        let stamp = f.string(from: Date(timeIntervalSince1970: TimeInterval(time)))
        var copy = path
        let stem = path.stem ?? path.lastComponent?.string ?? "file"
        let newName = path.extension.map { "\(stem).conflict-\(device)-\(stamp).\($0)" } ?? "\(stem).conflict-\(device)-\(stamp)"
        copy.removeLastComponent()
        return copy.appending(newName)
    }

    static func seconds(_ iso: String) -> Int64 {
        let f = ISO8601DateFormatter()
        return Int64(f.date(from: iso)?.timeIntervalSince1970 ?? 0)
    }

    /// Replaces a data file atomically: a temporary beside it (ignored by the watcher), then rename.
    func writeIntoData(_ path: FilePath, bytes: [UInt8], mode: UInt32) throws {
        let target = data.pushing(path)
        let dir = target.removingLastComponent()
        try FileManager.default.createDirectory(atPath: dir.string, withIntermediateDirectories: true)
        let temp = dir.appending(".\(target.lastComponent?.string ?? "file").syncagent.tmp")
        unlink(temp.string)
        if mode == 0o120000 {
            let link = String(decoding: bytes, as: UTF8.self)
            guard symlink(link, temp.string) == 0 else {
                throw ResolveError(message: "cannot write \(target.display): \(Errno(rawValue: errno))")
            }
        } else {
            let fd = Glibc.open(temp.string, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode == 0o100755 ? 0o755 : 0o644)
            guard fd >= 0 else { throw ResolveError(message: "cannot write \(target.display): \(Errno(rawValue: errno))") }
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            fsync(fd)
            close(fd)
            guard written == bytes.count else {
                unlink(temp.string)
                throw ResolveError(message: "cannot write \(target.display): short write (disk full?)")
            }
        }
        guard rename(temp.string, target.string) == 0 else {
            let err = Errno(rawValue: errno)
            unlink(temp.string)
            throw ResolveError(message: "cannot replace \(target.display): \(err)")
        }
    }

    func removeFromData(_ path: FilePath) throws {
        let target = data.pushing(path)
        if unlink(target.string) != 0 && errno != ENOENT {
            throw ResolveError(message: "cannot delete \(target.display): \(Errno(rawValue: errno))")
        }
    }
}
