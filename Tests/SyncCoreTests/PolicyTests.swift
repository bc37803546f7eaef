import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

@Suite struct GlobTests {
    @Test func doubleStarMatchesAnyDepth() {
        #expect(Glob.matches("photos/**", path: "photos/a.jpg"))
        #expect(Glob.matches("photos/**", path: "photos/2026/11/a.jpg"))
        #expect(!Glob.matches("photos/**", path: "photos"))
        #expect(!Glob.matches("photos/**", path: "other/photos/a.jpg"))
        #expect(Glob.matches("**/cache/*", path: "cache/x"))
        #expect(Glob.matches("**/cache/*", path: "a/b/cache/x"))
        #expect(!Glob.matches("**/cache/*", path: "a/b/cache/x/y"))
        #expect(Glob.matches("drafts/", path: "drafts/deep/d.txt"))
        #expect(Glob.matches("a/**/z.txt", path: "a/z.txt"))
        #expect(Glob.matches("a/**/z.txt", path: "a/b/c/z.txt"))
    }

    @Test func patternsThatCanNeverMatchAreNamed() {
        #expect(Glob.neverMatches("/photos/**") != nil)
        #expect(Glob.neverMatches("a//b") != nil)
        #expect(Glob.neverMatches("../x") != nil)
        #expect(Glob.neverMatches(".git/**") != nil)
        #expect(Glob.neverMatches("photos/**") == nil)
        #expect(Glob.neverMatches("drafts/") == nil)
    }
}

@Suite struct PathPolicyTests {
    let rules = [
        SyncRule(path: "cache/**", sync: .never),
        SyncRule(path: "drafts/**", sync: .manual),
        SyncRule(path: "media/**", sync: .auto, maxBytes: 1000),
        SyncRule(path: "photos/**", devices: ["phone", "tablet"]),
        SyncRule(path: "*", sync: .auto),
    ]

    @Test func firstMatchWinsAndNoMatchIsAuto() {
        let policy = PathPolicy(device: "watch", rules: [SyncRule(path: "*.tmp2", sync: .never), SyncRule(path: "*", sync: .manual)])
        #expect(!policy.materializes(FilePath("x.tmp2")))
        #expect(policy.holdReason(FilePath("x.txt"), size: 1) == .manual)
        #expect(PathPolicy(device: "watch").holdReason(FilePath("x.txt"), size: 1) == nil)
    }

    @Test func eachRuleKind() {
        let watch = PathPolicy(device: "watch", rules: rules)
        #expect(!watch.materializes(FilePath("cache/x")))
        #expect(watch.holdReason(FilePath("drafts/d.txt"), size: 5) == .manual)
        #expect(watch.holdReason(FilePath("drafts/d.txt"), size: nil) == .manual)
        #expect(watch.holdReason(FilePath("media/big.bin"), size: 1001) == .maxBytes)
        #expect(watch.holdReason(FilePath("media/big.bin"), size: 1000) == nil)
        #expect(watch.holdReason(FilePath("media/big.bin"), size: nil) == nil)
        #expect(!watch.materializes(FilePath("photos/a.jpg")))
        #expect(PathPolicy(device: "tablet", rules: rules).materializes(FilePath("photos/a.jpg")))
        #expect(watch.materializes(FilePath("notes.txt")))
    }

    @Test func receiveOnlyHoldsEveryLocalChange() {
        let policy = PathPolicy(device: "watch", rules: [], mode: .receiveOnly)
        #expect(policy.holdReason(FilePath("a.txt"), size: 1) == .localChange)
        #expect(policy.holdReason(FilePath("a.txt"), size: nil) == .localChange)
    }

    @Test func materializeKeyChangesOnlyWithWhatTheDiskHolds() {
        let a = PathPolicy(device: "watch", rules: [SyncRule(path: "p/**", maxBytes: 5, devices: ["phone", "watch"])])
        let b = PathPolicy(device: "watch", rules: [SyncRule(path: "p/**", maxBytes: 9, devices: ["watch", "tablet"])])
        let c = PathPolicy(device: "watch", rules: [SyncRule(path: "p/**", devices: ["phone"])])
        #expect(a.materializeKey == b.materializeKey)
        #expect(a.materializeKey != c.materializeKey)
    }
}

@Suite struct RuleConfigTests {
    let file = FilePath("/home/u/syncagent.toml")

    @Test func rulesHooksAndModeParse() throws {
        let config = try Config.parse(
            """
            device = "watch"
            data = "/d"
            state = "/s"
            mode = "receive-only"

            [[peer]]
            name = "phone"
            url = "/p"

            [[rule]]
            path = "photos/**"
            devices = ["phone", "watch"]

            [[rule]]
            path = "big/**"
            max_bytes = 1048576

            [[hook]]
            events = ["received", "conflict-opened"]
            command = ["/usr/local/bin/reload-ui"]
            timeout_seconds = 3
            """, file: file, environment: [:])
        #expect(config.mode == .receiveOnly)
        #expect(config.rules == [SyncRule(path: "photos/**", devices: ["phone", "watch"]), SyncRule(path: "big/**", maxBytes: 1_048_576)])
        #expect(config.hooks == [HookConfig(events: ["received", "conflict-opened"], command: ["/usr/local/bin/reload-ui"], timeoutSeconds: 3)])
        #expect(config.warnings.isEmpty)
    }

    @Test func unknownDeviceIsAWarningWithItsLine() throws {
        let config = try Config.parse(
            """
            device = "watch"
            data = "/d"
            state = "/s"
            [[peer]]
            name = "phone"
            url = "/p"
            [[rule]]
            path = "photos/**"
            devices = ["phone", "tablte"]
            """, file: file, environment: [:])
        #expect(config.warnings.count == 1)
        #expect(config.warnings.first?.line == 9)
        #expect(config.warnings.first?.key == "rule.devices")
    }
}

@Suite struct EventLogTests {
    @Test func sequenceSurvivesReopeningAndOldEventsBecomeAGap() throws {
        let temp = try TempDirectory("events")
        let dir = temp.root
        let log = EventLog(state: dir)
        for _ in 0..<5 { log.append(AgentEvent(.started(message: nil))) }
        #expect(EventLog(state: dir).lastSeq == 5)
        #expect(EventLog.read(state: dir, since: 3).map(\.seq) == [4, 5])
        #expect(EventLog.read(state: dir, since: 0).first?.type == .started)

        let again = EventLog(state: dir)
        for _ in 0..<(EventLog.keep + EventLog.keep / 5) { again.append(.problem("p")) }
        let kept = EventLog.read(state: dir, since: nil)
        #expect(kept.count <= EventLog.keep + EventLog.keep / 5 && kept.count >= EventLog.keep)
        #expect(kept.last?.seq == 5 + EventLog.keep + EventLog.keep / 5)
        let fromStart = EventLog.read(state: dir, since: 2)
        guard case .gap(let since, let oldest, _)? = fromStart.first?.kind else {
            Issue.record("no gap first: \(String(describing: fromStart.first))")
            return
        }
        #expect(since == 2)
        #expect(fromStart.dropFirst().first?.seq == oldest)
        // Numbers grow by one, none repeated.
        let seqs = kept.compactMap(\.seq)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 })
    }
}
