import CLibgit2
import FileSystem
import Glibc
import ObjectStorage
import SystemPackage

/// Which objects a short piece of work wrote, so the store can make exactly those durable (an
/// `fsync` per file) instead of flushing the whole file system: with other programs' dirty pages
/// waiting, one `syncfs` cost a one-file commit 0.8-0.9 s.
extension Repository {
    /// Past this many objects the log gives up: a batch that big pays one `syncfs` anyway.
    public static let writeLogLimit = 256

    /// Starts a fresh log of the objects this handle writes (blobs, trees, commits).
    public func recordWrites() { writeLog = [] }

    /// The objects written since `recordWrites()`, and stops the log; nil when it was not
    /// recording or the work wrote more than `writeLogLimit` objects.
    public func takeWrites() -> [Oid]? {
        defer { writeLog = nil }
        guard let log = writeLog, log.count <= Self.writeLogLimit else { return nil }
        return log
    }

    /// Notes one object written (or found already there: its file is flushed all the same).
    func noteWritten(_ id: Oid) -> Oid {
        if writeLog != nil, writeLog!.count <= Self.writeLogLimit { writeLog!.append(id) }
        return id
    }

    /// Whether `id` is a loose file here written in the last `ObjectCopyReport.recentSeconds`: its
    /// writer (another path of this store) may not have made it durable yet, so whatever relies
    /// on it flushes it too.
    public func isYoungLoose(_ id: Oid) -> Bool {
        guard let stat = (try? FileStat.of(looseObjectPath(id))) ?? nil else { return false }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) - stat.ctimeSeconds <= ObjectCopyReport.recentSeconds
    }

    /// Where the loose file of `id` is (`objects/xx/yyyy...`); it may not exist (packed, absent).
    public func looseObjectPath(_ id: Oid) -> FilePath {
        let hex = id.hex
        return gitDir.appending("objects").appending(String(hex.prefix(2))).appending(String(hex.dropFirst(2)))
    }
}
