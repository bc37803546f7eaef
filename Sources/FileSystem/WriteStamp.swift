import Glibc
import Synchronization

/// A modification time no later write can give a file: set on a file this process writes, it says
/// "the bytes here are still the ones we wrote" for as long as `lstat` shows it.
///
/// Any write (or `touch`, or a copy that keeps times) sets the mtime to the kernel's clock at that
/// moment, which is never earlier than the coarse clock read here; a stamp is that reading minus
/// 10 ns to 1 ms, a different one for each file of this process (so one file stamped by us and
/// copied over another with its times kept still differs), its nanoseconds ending in 1: odd and
/// no multiple of 5, so no time a file system keeps more coarsely (every such step divides a
/// second) can ever equal it. What breaks the rule is a wall clock set back meanwhile and a later
/// write landing on the very nanosecond: `lstat`'s stat data then cannot tell, as they cannot for
/// any tool that trusts them. A file system that keeps coarser times (FAT, some network file
/// systems) stores another value than the stamp: the caller sees the mismatch and trusts nothing.
public enum WriteStamp {
    private static let counter = Atomic<UInt64>(0)

    /// The next stamp: CLOCK_REALTIME_COARSE minus 10 ns to 1 ms, ending in 1 ns.
    public static func next() -> timespec {
        let now = coarseNow()
        let back = 10 * Int(1 + counter.wrappingAdd(1, ordering: .relaxed).oldValue % 100_000)
        var total = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) - Int64(back)
        total = total - total % 10 + 1  // still before `now`: at least 9 ns
        return timespec(tv_sec: Int(total / 1_000_000_000), tv_nsec: Int(total % 1_000_000_000))
    }

    /// CLOCK_REALTIME_COARSE now: no file's modification time set by a write after this reading
    /// is earlier (the kernel stamps writes from the same clock, or a finer one).
    public static func coarseNow() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        return now
    }

    /// Whether `stat`'s modification time (and with `changeTime`, its change time too) is earlier
    /// than `clock`, with room for a file system that keeps times more coarsely than the kernel's
    /// clock. Such a system rounds a write's time down (FAT to 2 s, exFAT to 10 ms, ext4 with small
    /// inodes to 1 s), so a write after the reading can get a time before it, the very time an
    /// earlier write in that step got. Times that look rounded (whole microseconds or coarser) must
    /// therefore be 2 s older than the reading; a kernel timestamp kept to the nanosecond, only
    /// older. (A nanosecond time that happens to be a whole microsecond just waits longer.)
    public static func modified(_ stat: FileStat, before clock: timespec, changeTime: Bool = false) -> Bool {
        let rounded = stat.mtimeNanoseconds % 1000 == 0 || (changeTime && stat.ctimeNanoseconds % 1000 == 0)
        var limit = Int64(clock.tv_sec) * 1_000_000_000 + Int64(clock.tv_nsec)
        if rounded { limit -= 2_000_000_000 }
        func before(_ seconds: Int64, _ nanoseconds: Int64) -> Bool { seconds * 1_000_000_000 + nanoseconds < limit }
        return before(stat.mtimeSeconds, stat.mtimeNanoseconds) && (!changeTime || before(stat.ctimeSeconds, stat.ctimeNanoseconds))
    }

    /// Whether `stat` shows exactly this stamp as its modification time.
    public static func holds(_ stamp: timespec, _ stat: FileStat) -> Bool {
        stat.mtimeSeconds == Int64(stamp.tv_sec) && stat.mtimeNanoseconds == Int64(stamp.tv_nsec)
    }
}
