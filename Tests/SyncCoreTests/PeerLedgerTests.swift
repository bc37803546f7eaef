import FoundationEssentials
import Testing

@testable import SyncCore

/// When `peers.json` is written: a poll that only moves a peer's times waits (an idle agent's
/// two-minute poll wrote and flushed it each time); anything else is written at once.
@Suite struct PeerLedgerTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func synced(at t: Date, reachable: Bool = true, error: String? = nil) -> PeerLedger.Entry {
        PeerLedger.Entry(lastSync: ISOTime.string(t), reachable: reachable, lastError: error)
    }

    @Test func aPollThatOnlyMovesTheTimesIsKeptInMemoryUntilHalfAnHourAfterTheLastWrite() {
        var ledger = PeerLedger()
        let w1 = ledger.note("watch", synced(at: t0), now: t0, lastSaved: nil)
        #expect(w1)  // a new peer
        let later = t0 + 120
        let w2 = ledger.note("watch", synced(at: later), now: later, lastSaved: t0)
        #expect(!w2)
        // In memory, the times are the new ones (what `status` shows while the agent runs).
        #expect(ledger.peers["watch"]?.lastSync == ISOTime.string(later))
        #expect(ledger.peers["watch"]?.lastChecked == ISOTime.string(later))
        let halfAnHour = t0 + PeerLedger.timesUnsavedFor
        let w3 = ledger.note("watch", synced(at: halfAnHour), now: halfAnHour, lastSaved: t0)
        #expect(w3)
    }

    @Test func anythingBesidesTheTimesIsWrittenAtOnce() {
        var ledger = PeerLedger()
        _ = ledger.note("watch", PeerLedger.Entry(), now: t0, lastSaved: nil)
        let t1 = t0 + 1
        // A first sync: lastSync was unknown.
        let w4 = ledger.note("watch", synced(at: t1), now: t1, lastSaved: t0)
        #expect(w4)
        let w5 = ledger.note("watch", synced(at: t1, reachable: false, error: "peer watch: gone"), now: t1, lastSaved: t1)
        #expect(w5)
        let w6 = ledger.note("watch", synced(at: t1, reachable: true), now: t1, lastSaved: t1)
        #expect(w6)
        // Another peer's times are its own.
        let w7 = ledger.note("tablet", synced(at: t1), now: t1, lastSaved: t1)
        #expect(w7)
        let w8 = ledger.note("watch", synced(at: t1 + 5), now: t1 + 5, lastSaved: t1)
        #expect(!w8)
    }
}
