import Testing

@testable import Agent

/// The engine's timed work on a fake clock: no sleeps, the instants are given.
@Suite struct IdleCareTests {
    let t0 = ContinuousClock.now

    @Test func aQuietStoreWaitsForNothing() {
        var care = IdleCare(now: t0)
        care.packPending = false
        #expect(care.next() == nil)
        #expect(care.due(at: t0 + .seconds(3600)).isEmpty)
    }

    @Test func theIndexIsSavedOnceTheStoreIsQuietAndAtLeastEvery30Seconds() {
        var care = IdleCare(now: t0)
        care.packPending = false
        care.indexDirty = true
        care.lastActivity = t0 + .seconds(10)
        #expect(care.next() == t0 + .seconds(11))
        #expect(care.due(at: t0 + .milliseconds(10_999)).isEmpty)
        #expect(care.due(at: t0 + .seconds(11)) == [.saveIndex])
        // Changes that never pause: saved 30 s after the last save all the same.
        care.lastActivity = t0 + .seconds(40)
        #expect(care.next() == t0 + .seconds(30))
    }

    @Test func packingWaitsForTwoQuietSecondsOrFiveHundredCommits() {
        var care = IdleCare(now: t0)
        care.lastActivity = t0 + .seconds(5)
        #expect(care.next() == t0 + .seconds(7))
        care.commitsSincePack = 500
        #expect(care.due(at: t0 + .seconds(5)) == [.pack])
        care.packing = true
        #expect(care.next() == nil)  // one slice at a time
    }

    @Test func aFailedCommitIsRetriedASecondLaterBeforeTheIndexIsSaved() {
        var care = IdleCare(now: t0)
        care.packPending = false
        care.indexDirty = true
        care.commitFailedAt = t0
        #expect(care.due(at: t0 + .seconds(1)) == [.retryCommit, .saveIndex])
    }

    @Test func unwrittenPathsAreTriedEveryFiveSeconds() {
        var care = IdleCare(now: t0)
        care.packPending = false
        care.unappliedWaiting = true
        care.lastUnappliedTry = t0 + .seconds(2)
        #expect(care.next() == t0 + .seconds(7))
    }

    @Test func whileTheDirectoryIsGoneOnlyTheLookForItIsDue() {
        var care = IdleCare(now: t0)
        care.rootMissing = true
        care.indexDirty = true
        care.commitFailedAt = t0
        #expect(care.due(at: t0 + .seconds(60)) == [.checkRoot])
        #expect(care.next() == t0 + .seconds(1))
    }
}
