import Foundation
import Testing
import TestSupport
@testable import SyncCore

/// Hooks and the command strategy run through `ChildProcess`: its exit status and stderr come back,
/// stdin reaches it, and at the timeout the whole process group is stopped (nothing it started
/// lives on).
@Suite struct ChildProcessTests {
    @Test func statusStderrAndStdin() {
        let outcome = ChildProcess.run(["sh", "-c", "read line; echo \"got $line\" >&2; exit 3"], stdin: Array("event\n".utf8), timeoutSeconds: 600)
        #expect(outcome == .exited(status: 3, stderr: "got event\n"))
    }

    @Test func aProgramThatClosesStderrEarlyIsStillWaitedFor() {
        let outcome = ChildProcess.run(["sh", "-c", "exec 2>&-; sleep 0.3; exit 7"], timeoutSeconds: 600)
        #expect(outcome == .exited(status: 7, stderr: ""))
    }

    @Test func theTimeoutStopsTheWholeGroup() throws {
        let dir = try TempDirectory("child")
        let pidFile = dir.path("grandchild.pid")
        // The program starts a grandchild that would outlive it, then never ends by itself.
        let started = ContinuousClock.now
        let outcome = ChildProcess.run(["sh", "-c", "sleep 1000 & echo $! > \(pidFile); wait"], timeoutSeconds: 3)
        let took = ContinuousClock.now - started
        #expect(outcome == .timedOut)
        let grandchild = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Killed: gone, or a zombie, once the kernel has finished its exit (which under load takes
        // a moment after the signal). A grandchild that lived on would still run its `sleep 1000`.
        func running() -> Bool {
            guard kill(grandchild, 0) == 0, let state = try? String(contentsOfFile: "/proc/\(grandchild)/stat", encoding: .utf8) else { return false }
            return !state.contains(") Z ")
        }
        let waitingSince = ContinuousClock.now
        while running() && ContinuousClock.now - waitingSince < .seconds(120) { usleep(10_000) }
        #expect(!running(), "grandchild \(grandchild) still runs after the group was stopped (\(took))")
    }

    @Test func aProgramThatCannotStartSaysWhy() {
        guard case .cannotStart(let why) = ChildProcess.run(["/nonexistent/merge-tool"], timeoutSeconds: 5) else {
            Issue.record("a missing program must not look like an exit")
            return
        }
        #expect(!why.isEmpty)
    }
}
