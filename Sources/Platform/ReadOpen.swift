import CPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Opens `path` to read its bytes without touching its access time (`O_NOATIME`), where the
/// kernel allows it (the file's owner, or root), else as usual. A file just written, read for a
/// commit, had its access time set (relatime does it once after each write): a journal entry per
/// file, 5% of the CPU of a 100k-file start-up commit. -1 and `errno` as open(2).
public func openToRead(_ path: UnsafePointer<CChar>, flags: Int32) -> Int32 {
    let fd = open(path, flags | cplatform_o_noatime())
    guard fd < 0, errno == EPERM else { return fd }
    return open(path, flags)
}
