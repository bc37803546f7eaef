import CCompression
import Glibc
import SystemPackage
import FileSystem

/// Checks of files in a git directory that a power cut may have damaged (`StoreRepair` in SyncCore
/// decides what to do about them).
public enum Integrity {
    /// Whether the loose object file at `path` is damaged: it does not inflate whole, or not to the
    /// size its header names (zlib's own check catches zeros and a cut). A file that cannot be
    /// opened is not said to be damaged.
    public static func looseObjectIsDamaged(_ path: FilePath) -> Bool {
        do { _ = try LooseObject.stream(file: path, chunk: 256 << 10, into: { _ in }); return false } catch { return true }
    }

    /// Why these bytes are no index the agent can read (nil: they are): too short, no `DIRC`, a
    /// trailing SHA-1 that does not match, or anything else `IndexFile` refuses (it would refuse
    /// it at every start, and nothing could be committed).
    public static func indexDamage(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 32, bytes.starts(with: Array("DIRC".utf8)) else {
            return bytes.isEmpty ? "it is empty" : "it is cut short or overwritten (\(bytes.count) bytes)"
        }
        // What the agent's reader refuses (`IndexFile`), as it would refuse it at every start.
        return bytes.withUnsafeBytes { IndexFile.damage($0) }
    }

    /// Why the pack `pack-X.idx` and its `pack-X.pack` are not a pair libgit2 can read (nil: they
    /// are): an index cut short, zero-filled or whose trailing SHA-1 does not match its content, or a
    /// pack whose header is not `PACK` or whose trailing checksum is not the one its index records.
    /// Costs the index's bytes and 32 bytes of the pack (a big pack is not read through).
    public static func packDamage(idx: FilePath) -> String? {
        guard let bytes = try? Files.read(idx) else { return nil }
        let magic: [UInt8] = [0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2]
        guard bytes.count >= 8 + 1024 + 40, bytes.starts(with: magic) else {
            return bytes.allSatisfy({ $0 == 0 }) ? "its index holds only zeros" : "its index is cut short or overwritten (\(bytes.count) bytes)"
        }
        guard let sha = try? StreamSHA1() else { return nil }
        bytes.withUnsafeBytes { sha.update(UnsafeRawBufferPointer(rebasing: $0[..<(bytes.count - 20)])) }
        guard let sum = try? sha.finish() else { return nil }
        guard sum[...] == bytes[(bytes.count - 20)...] else { return "its index's checksum does not match its content" }
        let recorded = Array(bytes[(bytes.count - 40)..<(bytes.count - 20)])
        guard let stem = idx.lastComponent?.stem else { return nil }
        let pack = idx.removingLastComponent().appending(stem + ".pack")
        guard let stat = try? FileStat.of(pack), stat.size >= 32 else { return "its pack is missing or cut short" }
        let fd = pack.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 4)
        var tail = [UInt8](repeating: 0, count: 20)
        guard pread(fd, &head, 4, 0) == 4, pread(fd, &tail, 20, off_t(stat.size - 20)) == 20 else { return nil }
        guard head == Array("PACK".utf8) else { return "its pack's header is not PACK (zeros or other bytes)" }
        return tail == recorded ? nil : "its pack's checksum is not the one its index records"
    }
}
