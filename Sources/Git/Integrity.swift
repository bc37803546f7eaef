import CLibgit2
import Glibc
import SystemPackage

/// Checks of files in a git directory that a power cut may have damaged (`StoreRepair` in SyncCore
/// decides what to do about them).
public enum Integrity {
    /// Whether the loose object file at `path` is damaged: it does not inflate whole, or not to the
    /// size its header names (zlib's own check catches zeros and a cut). A file that cannot be
    /// opened is not said to be damaged.
    public static func looseObjectIsDamaged(_ path: FilePath) -> Bool {
        do { _ = try LooseObject.stream(file: path, chunk: 256 << 10, into: { _ in }); return false } catch { return true }
    }

    /// Why these bytes are no index libgit2 can read (nil: they are): too short, no `DIRC`, or a
    /// trailing SHA-1 that does not match (libgit2 then refuses it, and nothing can be committed).
    public static func indexDamage(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 32, bytes.starts(with: Array("DIRC".utf8)) else {
            return bytes.isEmpty ? "it is empty" : "it is cut short or overwritten (\(bytes.count) bytes)"
        }
        guard let sha = try? StreamSHA1() else { return nil }
        bytes.withUnsafeBytes { sha.update(UnsafeRawBufferPointer(rebasing: $0[..<(bytes.count - 20)])) }
        guard let sum = try? sha.finish() else { return nil }
        return sum[...] == bytes[(bytes.count - 20)...] ? nil : "its checksum does not match its content"
    }
}
