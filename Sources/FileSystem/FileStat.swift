import Glibc
import SystemPackage

/// What `lstat` says about a path, as a plain value. Links are never followed.
public struct FileStat: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case regular, directory, symlink, fifo, socket, characterDevice, blockDevice, unknown
    }

    // (Widest first, nanoseconds in 32 bits: 64 bytes a stride instead of 88, and a big commit
    // keeps one for each file hashed ahead.)
    public let size: Int64
    public let mtimeSeconds: Int64
    public let ctimeSeconds: Int64
    public let inode: UInt64
    public let device: UInt64
    /// Bytes the file takes on disk (`st_blocks` × 512).
    public let allocated: Int64
    private let mtimeNs: UInt32
    private let ctimeNs: UInt32
    public let mode: UInt32
    public let kind: Kind

    public var mtimeNanoseconds: Int64 { Int64(mtimeNs) }
    public var ctimeNanoseconds: Int64 { Int64(ctimeNs) }

    /// What tells a file from another one at the same path, or from itself written again: device,
    /// inode, size, change and modification times. Not the blocks it takes, which some file
    /// systems (ZFS, btrfs with compression, XFS trimming preallocation) change later by themselves.
    public struct Identity: Hashable, Sendable {
        public let device: UInt64
        public let inode: UInt64
        public let size: Int64
        public let ctimeSeconds: Int64
        public let ctimeNanoseconds: Int64
        public let mtimeSeconds: Int64
        public let mtimeNanoseconds: Int64
    }

    public var identity: Identity {
        Identity(device: device, inode: inode, size: size, ctimeSeconds: ctimeSeconds, ctimeNanoseconds: ctimeNanoseconds,
                 mtimeSeconds: mtimeSeconds, mtimeNanoseconds: mtimeNanoseconds)
    }

    public var isExecutable: Bool { mode & 0o100 != 0 }
    /// Whether git can store it: regular files and symbolic links only.
    public var isStorable: Bool { kind == .regular || kind == .symlink }

    /// From what `lstat` or `fstat` filled in.
    public init(_ st: stat) {
        kind = Self.kind(of: st.st_mode)
        size = Int64(st.st_size)
        mtimeSeconds = Int64(st.st_mtim.tv_sec)
        mtimeNs = UInt32(truncatingIfNeeded: st.st_mtim.tv_nsec)
        inode = UInt64(st.st_ino)
        mode = UInt32(st.st_mode)
        ctimeSeconds = Int64(st.st_ctim.tv_sec)
        ctimeNs = UInt32(truncatingIfNeeded: st.st_ctim.tv_nsec)
        device = UInt64(st.st_dev)
        allocated = Int64(st.st_blocks) * 512
    }

    static func kind(of mode: mode_t) -> Kind {
        switch mode & S_IFMT {
        case S_IFREG: .regular
        case S_IFDIR: .directory
        case S_IFLNK: .symlink
        case S_IFIFO: .fifo
        case S_IFSOCK: .socket
        case S_IFCHR: .characterDevice
        case S_IFBLK: .blockDevice
        default: .unknown
        }
    }

    /// `lstat(2)`; nil when nothing is there (ENOENT, ENOTDIR). Other failures throw.
    public static func of(_ path: FilePath) throws(Errno) -> FileStat? {
        var st = stat()
        let rc = path.withPlatformString { lstat($0, &st) }
        if rc == 0 { return FileStat(st) }
        let err = Errno(rawValue: errno)
        if err == .noSuchFileOrDirectory || err == .notDirectory { return nil }
        throw err
    }

    /// Whether `lstat(2)` fails with ENOENT: nothing at the path, and each directory above it that
    /// exists is one (a file, FIFO or the like standing where a directory should be is ENOTDIR).
    public static func isFree(_ path: FilePath) -> Bool {
        var st = stat()
        return path.withPlatformString { lstat($0, &st) } != 0 && errno == ENOENT
    }
}

extension FileStat.Kind: CustomStringConvertible {
    public var description: String {
        switch self {
        case .regular: "regular file"
        case .directory: "directory"
        case .symlink: "symbolic link"
        case .fifo: "FIFO"
        case .socket: "socket"
        case .characterDevice: "character device"
        case .blockDevice: "block device"
        case .unknown: "special file"
        }
    }
}
