import Foundation
import Synchronization
import SystemPackage
import Testing
import SyncCore
import Watcher

@testable import Agent

/// The small parts a peer's rounds stand on, with real threads and tasks: the doorbell that wakes
/// a round, and the runner that gives up on a fetch that stops moving (and only then).
@Suite struct PeerPartsTests {
    @Test func aRingWhileNobodyWaitsIsKeptForTheNextWait() async {
        let bell = Doorbell()
        bell.ring()
        bell.ring()  // remembered once
        #expect(await bell.wait(upTo: .seconds(3600)) == true)
        #expect(await bell.wait(upTo: .milliseconds(1)) == false)
    }

    @Test func aRingWakesTheWaitingTask() async {
        let bell = Doorbell()
        let waiting = Task { await bell.wait(upTo: .seconds(3600)) }
        // Rung until the waiter has taken it: the ring may come before the wait starts, and is
        // then remembered; either way the wait ends rung, long before its hour.
        bell.ring()
        #expect(await waiting.value == true)
    }

    @Test func aFetchThatStopsMovingIsAbandonedAndToldToStop() async throws {
        let release = DispatchSemaphore(value: 0)
        let toldToStop = Atomic<Bool>(false)
        let attempt = FetchRunner.Attempt()
        await #expect(throws: FetchRunner.Abandoned.self) {
            try await FetchRunner.perform(label: "test", url: "ssh://nowhere", timeout: .milliseconds(50), attempt: attempt) { shouldCancel in
                release.wait()  // no data ever arrives
                toldToStop.store(shouldCancel(), ordering: .relaxed)
            }
        }
        release.signal()
        while !attempt.finished.load(ordering: .acquiring) { await Task.yield() }
        let stopped = toldToStop.load(ordering: .relaxed)
        #expect(stopped)
    }

    /// A silence timeout, not a timeout of the whole transfer: a fetch that keeps receiving runs
    /// well past it and its result is taken.
    @Test func aFetchThatKeepsMovingRunsPastTheTimeout() async throws {
        let attempt = FetchRunner.Attempt()
        let value = try await FetchRunner.perform(label: "test", url: "ssh://slow", timeout: .seconds(1), attempt: attempt) { shouldCancel in
            for _ in 0..<150 {
                usleep(10_000)
                if shouldCancel() { return -1 }
            }
            return 150
        }
        #expect(value == 150)
    }

    /// The watchdog reads the silence while the fetch's thread notes progress: a progress noted
    /// between its clock read and its load once wrapped the difference and trapped (SIGILL in a
    /// one-shot `sync`, CI of 0d5e1b0). Both sides race here a few hundred thousand times.
    @Test func silenceReadWhileProgressIsNotedNeverTraps() async {
        let attempt = FetchRunner.Attempt()
        let stop = Atomic<Bool>(false)
        let writer = Thread { while !stop.load(ordering: .relaxed) { attempt.madeProgress() } }
        writer.start()
        var longest: Duration = .zero
        for _ in 0..<300_000 { longest = max(longest, attempt.silence()) }
        stop.store(true, ordering: .relaxed)
        #expect(longest < .seconds(5))
    }

    @Test(arguments: [
        ("ssh://git@example.org/srv/hub.git", "example.org", 22),
        ("ssh://example.org:2222/hub.git", "example.org", 2222),
        ("git://10.0.0.2/hub.git", "10.0.0.2", 9418),
        ("https://user:secret@example.org/hub.git", "example.org", 443),
        ("git@example.org:hub.git", "example.org", 22),
    ])
    func probeAddresses(_ url: String, _ host: String, _ port: Int) {
        let found = FetchRunner.hostAndPort(url)
        #expect(found?.0 == host)
        #expect(found?.1 == port)
    }

    @Test func aLocalPathIsNeverProbed() {
        #expect(FetchRunner.hostAndPort("/srv/hub.git") == nil)
        #expect(FetchRunner.hostAndPort("file:///srv/hub.git") == nil)
    }

    /// A hub's refs moved only by this device's own push (its branch, its records) ring no round;
    /// any other device's move does, and so does a batch that lost events. (Paths as the ref
    /// watcher gives them, relative to the hub's `refs`; `syncagent run --log-level debug` says
    /// "only this device's own refs moved" for each batch it lets pass.)
    @Test(arguments: [
        (["heads/devices/phone"], "phone", false),
        (["syncagent/devices/phone/conflicts"], "phone", false),
        (["heads/devices/phone", "syncagent/devices/phone", "syncagent/devices/phone/conflicts"], "phone", false),
        (["heads/devices/watch"], "phone", true),
        (["heads/devices/phone", "heads/devices/watch"], "phone", true),
        (["syncagent/devices/watch/conflicts"], "phone", true),
        (["heads/devices/phone2"], "phone", true),
        (["syncagent/devices/phone2/conflicts"], "phone", true),
        (["heads/devices"], "phone", true),  // the first push of all: the branch inside may come with it
        (["heads/devices/phone"], nil, true),  // a direct peer's refs: every move rings
    ] as [([String], String?, Bool)])
    func aHubMovedOnlyByThisDevicesPushRingsNoRound(_ paths: [String], _ device: String?, _ rings: Bool) {
        let batch = WatchBatch(paths: Set(paths.map { FilePath($0) }))
        #expect(PeerSyncer.rings(batch, ownHubDevice: device) == rings)
        #expect(PeerSyncer.rings(WatchBatch(paths: batch.paths, rescan: true), ownHubDevice: device))
    }

    /// The safety poll tells refs that moved without an event; this device's own on a hub moved by
    /// its pushes (no round rung, so possibly after the last look) and are no such thing.
    @Test func theSafetyPollLeavesThisDevicesOwnHubRefsOut() {
        func snapshot(_ refs: [String: Character]) -> RefSnapshot {
            RefSnapshot(refs: Dictionary(uniqueKeysWithValues: refs.map { (Array($0.key.utf8), Array(String(repeating: $0.value, count: 40).utf8)) }))
        }
        let seen = snapshot(["refs/heads/devices/phone": "a", "refs/heads/devices/watch": "b", "refs/syncagent/devices/phone/conflicts": "c"])
        let ownOnly = snapshot(["refs/heads/devices/phone": "d", "refs/heads/devices/watch": "b", "refs/syncagent/devices/phone/conflicts": "e"])
        #expect(PeerSyncer.moved(since: seen, now: ownOnly, ownHubDevice: "phone").isEmpty)
        #expect(PeerSyncer.moved(since: seen, now: ownOnly, ownHubDevice: nil).count == 2)  // a direct peer: every ref
        let other = snapshot(["refs/heads/devices/phone": "d", "refs/heads/devices/watch": "f", "refs/syncagent/devices/phone/conflicts": "c"])
        #expect(PeerSyncer.moved(since: seen, now: other, ownHubDevice: "phone") == [FilePath("refs/heads/devices/watch")])
    }
}
