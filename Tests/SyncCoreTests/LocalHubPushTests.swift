import Foundation
import Git
@testable import ObjectStorage
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// A push to a hub on this machine copies the objects and moves the hub's refs itself
/// (`Store.pushToLocalHub`): fast-forwards only, never over a tip it does not hold, the objects
/// whole in the hub before a ref names them.
@Suite struct LocalHubPushTests {
    @Test func onlyFastForwardsMoveTheHubsRefs() throws {
        let t = try TwoDevices()
        let hub = t.root.appending("hub.git")
        #expect(try runProgram("/usr/bin/git", ["init", "-q", "--bare", hub.string]).status == 0)
        let repo = t.phone.store.repo
        let ref = "refs/heads/devices/phone"
        func push(_ id: Oid) throws -> [PushRefusal] {
            try Store.pushToLocalHub(repo, hubGitDir: hub, updates: [(ref, id)], wereOnHub: [], shouldCancel: { false }, transfer: nil)
        }
        func onHub() throws -> Oid? { try Repository.openForReading(gitDir: hub).resolveReference(ref) }
        try t.phone.write("a.txt", "one\n")
        try t.phone.commit("a.txt")
        let first = try #require(try t.phone.store.head())
        #expect(try push(first).isEmpty)
        #expect(try onHub() == first)
        try t.phone.write("b/c.txt", "two\n")
        try t.phone.commit("b/c.txt")
        let second = try #require(try t.phone.store.head())
        #expect(try push(second).isEmpty)
        #expect(try onHub() == second)
        #expect(try gitFsck(hub) == 0)
        // Back to the first: no fast-forward, refused, the hub keeps the second.
        let refused = try push(first)
        #expect(refused.map(\.ref) == [ref])
        #expect(try onHub() == second)
        // A tip this store does not hold (another device under this name): refused too.
        try t.watch.write("w.txt", "watch\n")
        try t.watch.commit("w.txt")
        let theirs = try #require(try t.watch.store.head())
        #expect(try Store.pushToLocalHub(t.watch.store.repo, hubGitDir: hub, updates: [("refs/heads/devices/w", theirs)], wereOnHub: [],
                                         shouldCancel: { false }, transfer: nil).isEmpty)
        #expect(try git(hub, ["update-ref", ref, theirs.hex]).status == 0)
        #expect(try push(second).map(\.ref) == [ref])
        #expect(try onHub() == theirs)
        #expect(try gitFsck(hub) == 0)
    }
    /// After a burst, the other devices' branches move to the join this device made too: the
    /// round copies nothing for them (the hub's packs are not even opened) and has nothing to
    /// merge, and a branch that moves to new work is still copied and merged whole.
    @Test func aBranchMovedToWhatThisStoreHoldsNeedsNoCopyAndNoMerge() throws {
        let t = try TwoDevices()
        let hub = t.root.appending("hub.git")
        #expect(try runProgram("/usr/bin/git", ["init", "-q", "--bare", hub.string]).status == 0)
        func push(_ d: TwoDevices.Device, _ name: String) throws {
            _ = try Store.hubPush(gitDir: d.gitDir, data: d.data, hub: "hub", url: "file://\(hub)", device: name, localGitDir: hub)
        }
        func fetch(_ d: TwoDevices.Device, _ name: String) throws -> [HubDevice] {
            try Store.hubFetch(gitDir: d.gitDir, data: d.data, hub: "hub", url: "file://\(hub)", device: name, localGitDir: hub)
        }
        try t.phone.write("a.txt", "from the phone\n")
        try t.phone.commit("a.txt")
        try push(t.phone, "phone")
        _ = try fetch(t.watch, "watch")
        #expect(try t.watch.store.integrate(peer: Store.hubPeer("hub", device: "phone")).action == .fastForward)
        try push(t.watch, "watch")
        let phoneHead = try #require(try t.phone.store.head())
        // The watch's branch now names the phone's own commit.
        let seen = try fetch(t.phone, "phone")
        #expect(seen.map(\.name) == ["watch"])
        #expect(seen.first?.main?.oid == phoneHead)
        #expect(try t.phone.store.repo.resolveReference(Store.trackingRef(Store.hubPeer("hub", device: "watch"))) == phoneHead)
        // Its records are new here: one merge takes them, then there is nothing left to do.
        #expect(try t.phone.store.integrate(peer: Store.hubPeer("hub", device: "watch")).action == .upToDate)
        let same = try #require(try t.phone.store.upToDateWith(peer: Store.hubPeer("hub", device: "watch")))
        #expect(same.action == .upToDate)
        #expect(same.peerMain?.oid == phoneHead)
        // New work on the watch: not held here, so no shortcut; copied and merged.
        try t.watch.write("b/c.txt", "from the watch\n")
        try t.watch.commit("b/c.txt")
        try push(t.watch, "watch")
        _ = try fetch(t.phone, "phone")
        #expect(try t.phone.store.upToDateWith(peer: Store.hubPeer("hub", device: "watch")) == nil)
        #expect(try t.phone.store.integrate(peer: Store.hubPeer("hub", device: "watch")).action == .fastForward)
        #expect(t.phone.read("b/c.txt") == "from the watch\n")
        #expect(try gitFsck(t.phone.gitDir) == 0)
        #expect(try gitFsck(hub) == 0)
    }
    /// A power cut kept a commit a hub branch names but not its parent (its file reached the disk,
    /// the parent's did not): the round's look at what this store holds cannot read through it,
    /// so everything is copied as before, and the history comes back whole.
    @Test func aTipHeldWithoutItsHistoryIsCopiedAgain() throws {
        let t = try TwoDevices()
        let hub = t.root.appending("hub.git")
        #expect(try runProgram("/usr/bin/git", ["init", "-q", "--bare", hub.string]).status == 0)
        func text(_ r: (status: Int32, out: Data)) -> String { String(decoding: r.out, as: UTF8.self) }
        func push() throws {
            _ = try Store.hubPush(gitDir: t.phone.gitDir, data: t.phone.data, hub: "hub", url: "file://\(hub)", device: "phone", localGitDir: hub)
        }
        func fetch() throws -> [HubDevice] {
            try Store.hubFetch(gitDir: t.watch.gitDir, data: t.watch.data, hub: "hub", url: "file://\(hub)", device: "watch", localGitDir: hub)
        }
        try t.phone.write("a.txt", "one\n")
        try t.phone.commit("a.txt")
        try push()
        _ = try fetch()
        #expect(try t.watch.store.integrate(peer: Store.hubPeer("hub", device: "phone")).action == .fastForward)
        try t.phone.write("b.txt", "two\n")
        try t.phone.commit("b.txt")
        try t.phone.write("c.txt", "three\n")
        try t.phone.commit("c.txt")
        try push()
        let tip = try #require(try t.phone.store.head())
        // The watch holds the tip's commit alone: not its parent, tree or blobs.
        let bytes = try git(t.phone.gitDir, ["cat-file", "commit", tip.hex]).out
        let planted = text(try git(t.watch.gitDir, ["hash-object", "-t", "commit", "-w", "--stdin"], input: Array(bytes)))
        #expect(planted.trimmingCharacters(in: .whitespacesAndNewlines) == tip.hex)
        let seen = try fetch()
        #expect(seen.first?.main?.oid == tip)
        #expect(try t.watch.store.integrate(peer: Store.hubPeer("hub", device: "phone")).action == .fastForward)
        for (rel, body) in [("a.txt", "one\n"), ("b.txt", "two\n"), ("c.txt", "three\n")] { #expect(t.watch.read(rel) == body) }
        #expect(try gitFsck(t.watch.gitDir) == 0)
    }
}
