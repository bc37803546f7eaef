import Foundation
import Glibc
import Platform
import Synchronization
import Testing
@testable import SyncCore

/// What replaced Foundation in the agent (threads, a condition variable, child processes' pipes,
/// JSON values, times, numbers in text) keeps Foundation's behaviour where users see it.
@Suite struct WithoutFoundationTests {
    @Test func ownThreadsRunDetachedUnderTheirName() async {
        let name = await withCheckedContinuation { (c: CheckedContinuation<String, Never>) in
            OwnThread.start(name: "syncagent-a-long-thread-name") {
                let fd = open("/proc/thread-self/comm", O_RDONLY)
                var buffer = [UInt8](repeating: 0, count: 64)
                let n = read(fd, &buffer, buffer.count)
                close(fd)
                c.resume(returning: String(decoding: buffer[0..<max(0, n)], as: UTF8.self).trimmed(newlines: true))
            }
        }
        #expect(name == "syncagent-a-lon")  // the kernel keeps 15 bytes
    }

    @Test func conditionWakesAWaiterAndTimesOut() async {
        let condition = Condition()
        let ready = Atomic<Bool>(false)
        let woken = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            OwnThread.start(name: "waiter") {
                condition.lock()
                var signalled = true
                while !ready.load(ordering: .acquiring) {
                    if !condition.wait(until: Deadline(in: 30)) { signalled = false; break }
                }
                condition.unlock()
                c.resume(returning: signalled)
            }
            OwnThread.start(name: "signaller") {
                condition.withLock {
                    ready.store(true, ordering: .releasing)
                    condition.signal()
                }
            }
        }
        #expect(woken)
        condition.lock()
        let start = ContinuousClock.now
        let signalled = condition.wait(until: Deadline(in: 0.05))
        condition.unlock()
        #expect(!signalled)
        #expect(ContinuousClock.now - start >= .milliseconds(40))
    }

    @Test func aStartedProgramGetsItsInputAndGivesItsOutputAndStatus() throws {
        let started = try ChildProcess.start(["sh", "-c", "cat; echo oops >&2; exit 3"], ownGroup: false, output: true).get()
        _ = Array("hello\n".utf8).withUnsafeBytes { write(started.input, $0.baseAddress, $0.count) }
        close(started.input)
        func readAll(_ fd: Int32) -> String {
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                out += buffer[0..<n]
            }
            close(fd)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(readAll(started.output) == "hello\n")
        #expect(readAll(started.errors) == "oops\n")
        let end = ProcessEnd(started.pid)
        defer { end.close() }
        #expect((end.reap() >> 8) & 0xff == 3)
        // A descriptor of the agent's without close-on-exec (another child's pipe end, a socket)
        // does not go along.
        var stray: [Int32] = [0, 0]
        #expect(pipe(&stray) == 0)
        defer { close(stray[0]); close(stray[1]) }
        let look = try ChildProcess.start(["sh", "-c", "[ -e /proc/$$/fd/\(stray[1]) ] && echo open || echo closed"],
                                          ownGroup: true, output: true).get()
        close(look.input)
        #expect(readAll(look.output) == "closed\n")
        close(look.errors)
        let lookEnd = ProcessEnd(look.pid)
        defer { lookEnd.close() }
        _ = lookEnd.reap()
        guard case .failure(let why) = ChildProcess.start(["/nonexistent/program"], ownGroup: false, output: true) else {
            Issue.record("a missing program started")
            return
        }
        #expect(why.reason.contains("No such file"))
    }

    @Test func jsonStrategyKeepsNumbersAsWritten() throws {
        let base = Array(#"{"volume":3,"ratio":0.5,"on":true,"list":[1,2],"path":"a/b"}"#.utf8)
        // 3 rewritten as 3.0 is no change; true is not 1.
        let phone = Array(#"{"volume":3.0,"ratio":0.5,"on":1,"list":[1,2],"path":"a/b"}"#.utf8)
        let watch = Array(#"{"volume":3,"ratio":0.75,"on":true,"list":[1,2,3],"path":"a/b"}"#.utf8)
        let merged = try #require(Merges.json(base: base, phone, watch))
        let text = String(decoding: merged, as: UTF8.self)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(merged)) as? [String: Any])
        #expect(object["ratio"] as? Double == 0.75)
        #expect(object["list"] as? [Int] == [1, 2, 3])
        #expect(object["on"] as? Int == 1)
        #expect(text.contains("\"volume\" : 3,") || text.contains("\"volume\" : 3\n"))  // an integer stays one
        #expect(text.contains("\"a/b\""))  // slashes not escaped
        #expect(text.firstRange(of: "\"list\"")!.lowerBound < text.firstRange(of: "\"volume\"")!.lowerBound)  // keys sorted
        #expect(merged.last == UInt8(ascii: "\n"))
        // A 64-bit id above Int64's range stays exact.
        let id = Array(#"{"id":18446744073709551615,"a":1}"#.utf8)
        let withId = try #require(Merges.json(base: id, id, Array(#"{"id":18446744073709551615,"a":2}"#.utf8)))
        #expect(String(decoding: withId, as: UTF8.self).contains("18446744073709551615"))
        // Both sides changed a key differently: left open.
        #expect(Merges.json(base: base, Array(#"{"volume":4}"#.utf8), Array(#"{"volume":5}"#.utf8)) == nil)
    }

    @Test func timesParseWithOffsetsAndFractions() {
        #expect(ISOTime.seconds("2026-11-20T10:00:00Z") == 1_795_168_800)
        #expect(ISOTime.seconds("2026-11-20T12:00:00+02:00") == 1_795_168_800)
        #expect(ISOTime.seconds("2026-11-20T10:00:00.250Z") == 1_795_168_800)
        #expect(ISOTime.date("yesterday") == nil)
        #expect(ISOTime.string(1_795_168_800) == "2026-11-20T10:00:00Z")
        #expect(ConflictPolicy.stamp(1_795_168_800) == "20261120-100000")
        #expect(ConflictPolicy.stamp(0) == "19700101-000000")
    }

    @Test func numbersAndTextAsFoundationPrintedThem() {
        #expect(zeroPadded(7, width: 2) == "07")
        #expect(zeroPadded(2026, width: 2) == "2026")
        #expect(zeroPadded(-5, width: 3) == "-005")
        #expect(oneDecimal(0) == "0.0")
        #expect(oneDecimal(0.04) == "0.0")
        #expect(oneDecimal(2.449) == "2.4")
        #expect(oneDecimal(12.96) == "13.0")
        #expect(oneDecimal(3600) == "3600.0")
        #expect(ConflictRecord.hex([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect("  a b \t".trimmed() == "a b")
        #expect("\n a \n".trimmed(newlines: true) == "a")
        #expect(" \n".trimmed(newlines: true).isEmpty)
        #expect("ssh: Permission denied (publickey)".includes("Permission denied"))
    }
}
