import Synchronization
import SystemPackage

/// Files that never change once written (git's loose objects and packs, named by their content)
/// that this process has made durable, each remembered with the inode, size and times it had
/// before the flush (and still had after it).
/// A fetch relies on the young objects a store holds, and used to flush every one of them again
/// at each fetch for two minutes (25 files and their directories for a one-file change). A file
/// found here with the same inode and change time is the very file that was flushed: it is
/// skipped. One removed and written again (a loose object packed, then unpacked) has another
/// inode or times, and is flushed again.
public enum DurableFiles {
    /// A regular file's identity (nil for anything else).
    static func stamp(_ stat: FileStat?) -> FileStat.Identity? {
        guard let stat, stat.kind == .regular else { return nil }
        return stat.identity
    }

    /// Remembered at most this many files; past it the memo starts again (files then get one more
    /// flush each, which costs time and never durability). A fetch relies only on objects of the
    /// last two minutes: a few hundred at a change every second (half a megabyte at the limit).
    static let limit = 4_096
    private static let known = Mutex<[FilePath: FileStat.Identity]>([:])

    /// Of `files`, those not made durable by this process as they are now, each with its stamp
    /// (nil: not a regular file). With `skippingMissing`, a path `lstat` cannot find is left out
    /// (anything else there, a link or a directory, stays: its flush fails, as it should). Each
    /// file is looked at once, outside the lock.
    static func pending(_ files: [FilePath], skippingMissing: Bool = false) -> (files: [FilePath], stamps: [FileStat.Identity?]) {
        let now = files.map { (try? FileStat.of($0)) ?? nil }
        return known.withLock { known in
            var out: (files: [FilePath], stamps: [FileStat.Identity?]) = ([], [])
            for (file, stat) in zip(files, now) {
                if stat == nil, skippingMissing { continue }
                let stamp = stamp(stat)
                if let stamp, known[file] == stamp { continue }
                out.files.append(file)
                out.stamps.append(stamp)
            }
            return out
        }
    }

    /// Notes that these files were flushed (with their directories): each whose stamp is still
    /// `before`, the one taken before the flush. A file renamed over the path meanwhile (another
    /// writer of the same object, whose bytes this flush may not have reached) is not noted.
    static func remember(_ files: [FilePath], before: [FileStat.Identity?]) {
        let stamps: [(FilePath, FileStat.Identity)] = zip(files, before).compactMap { file, before in
            guard let before, stamp((try? FileStat.of(file)) ?? nil) == before else { return nil }
            return (file, before)
        }
        known.withLock { known in
            if known.count + stamps.count > limit { known.removeAll(keepingCapacity: true) }
            for (file, stamp) in stamps { known[file] = stamp }
        }
    }

    /// Drops removed files from the memo (the loose objects a roll-up packed, the packs it
    /// combined): it then holds about the store's live young files, a few hundred, instead of
    /// filling up to `limit` with files long gone (about 0.7 MB of paths at 4,096).
    public static func forget(_ files: some Sequence<FilePath>) {
        known.withLock { known in
            for file in files { known.removeValue(forKey: file) }
        }
    }

    /// Whether `file` is remembered as flushed (for tests).
    static func remembers(_ file: FilePath) -> Bool { known.withLock { $0[file] != nil } }
}

extension Durability {
    /// `flushFiles` for files that never change once written (loose objects, packs and their
    /// indexes): those this process made durable already, as they are now, are skipped (and when
    /// all are, nothing is flushed, the directories neither: they were flushed with the files).
    /// The rest are flushed with their directories and `extra`, and remembered.
    public static func flushImmutable(_ files: [FilePath], andDirectories extra: [FilePath] = []) -> Bool {
        flushImmutable(files, andDirectories: extra, skippingMissing: false)
    }

    /// `flushImmutable` for files that may not exist (objects a write found already packed).
    public static func flushExistingImmutable(_ files: [FilePath], andDirectories extra: [FilePath] = []) -> Bool {
        flushImmutable(files, andDirectories: extra, skippingMissing: true)
    }

    private static func flushImmutable(_ files: [FilePath], andDirectories extra: [FilePath], skippingMissing: Bool) -> Bool {
        guard !disabled else { return true }
        let pending = DurableFiles.pending(files, skippingMissing: skippingMissing)
        guard !pending.files.isEmpty else { return true }
        guard flushFiles(pending.files, andDirectories: extra) else { return false }
        DurableFiles.remember(pending.files, before: pending.stamps)
        return true
    }
}
