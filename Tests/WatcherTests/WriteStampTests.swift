import FileSystem
import Glibc
import Testing

/// `WriteStamp`: a modification time before the coarse clock's reading, a different one per file,
/// ending in 1 ns (no coarser file system time can equal it).
@Suite struct WriteStampValueTests {
    @Test func stampsAreBeforeNowDistinctAndEndInOne() {
        var seen = Set<Int64>()
        func coarse() -> Int64 {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME_COARSE, &now)
            return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
        }
        for _ in 0..<10_000 {
            // (The clock is read on both sides: on a loaded machine it may tick between a reading
            // and the stamp's own.)
            let before = coarse()
            let stamp = WriteStamp.next()
            let after = coarse()
            let s = Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec)
            #expect(s < after && s >= before - 1_000_020)
            #expect(stamp.tv_nsec >= 0 && stamp.tv_nsec < 1_000_000_000)
            #expect(stamp.tv_nsec % 10 == 1)
            seen.insert(s)
        }
        #expect(seen.count == 10_000)
    }
}
