import CFileSystemType
import SystemPackage

/// Whether inotify on a path sees every change made there: true on the disk file systems of this
/// machine, false on network and FUSE file systems (NFS, SMB, sshfs...), where another machine's
/// writes raise no event. Decides whether a peer on a path still needs polling, and whether a
/// file's `lstat` tells that it changed (`RememberedReads`: on NFS, `lstat` may answer from a
/// cache where `open` asks the server).
public enum LocalFileSystem {
    /// ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS, overlayfs, bcachefs, JFS, ReiserFS.
    static let watchable: Set<UInt> = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0xF2F5_2010,
                                       0x2FC1_2FC1, 0x794C_7630, 0xCA45_1A4E, 0x3153_464A, 0x5265_4973]

    /// Whether every change under `path` raises an inotify event here (false when unknown).
    public static func seesEveryChange(at path: FilePath) -> Bool {
        let type = path.withPlatformString { cfs_type($0) }
        return type >= 0 && watchable.contains(UInt(truncatingIfNeeded: type))
    }
}
