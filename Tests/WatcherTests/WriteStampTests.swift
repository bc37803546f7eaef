import FileSystem
import Glibc
import Testing

/// `WriteStamp`: a modification time before the coarse clock's reading, a different one per file,
/// ending in 1 ns (no coarser file system time can equal it).
@Suite struct WriteStampValueTests {
    @Test func stampsAreBeforeNowDistinctAndEndInOne() {
        var seen = Set<Int64>()
        for _ in 0..<10_000 {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME_COARSE, &now)
            let stamp = WriteStamp.next()
            let s = Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec)
            let n = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            #expect(s < n && n - s <= 1_000_010)
            #expect(stamp.tv_nsec >= 0 && stamp.tv_nsec < 1_000_000_000)
            #expect(stamp.tv_nsec % 10 == 1)
            seen.insert(s)
        }
        #expect(seen.count == 10_000)
    }
}
