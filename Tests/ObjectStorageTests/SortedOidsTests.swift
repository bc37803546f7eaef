@testable import ObjectStorage
import Testing

/// The sorted-array set a fetch plans with: every id it was given is found, no other is, and ids
/// that share their first 8 bytes (the order's fast key) are still told apart.
@Suite struct SortedOidsTests {
    func id(_ hex: String) -> Oid { Oid(hex: hex)! }

    @Test func findsExactlyTheIdsItWasGiven() {
        var generator = SystemRandomNumberGenerator()
        let given = (0..<2_000).map { _ in
            Oid(hex: (0..<40).map { _ in String(Int.random(in: 0..<16, using: &generator), radix: 16) }.joined())!
        }
        let set = SortedOids(given + given.prefix(500))  // repeats are kept once
        #expect(set.count == Set(given).count)
        for oid in given { #expect(set.contains(oid)) }
        let others = given.map { id(String($0.hex.reversed())) }.filter { !Set(given).contains($0) }
        for oid in others.prefix(200) { #expect(!set.contains(oid)) }
    }

    @Test func idsSharingTheirFirstEightBytesAreToldApart() {
        let prefix = "0123456789abcdef"
        let a = id(prefix + String(repeating: "0", count: 24))
        let b = id(prefix + String(repeating: "0", count: 23) + "2")
        let c = id(prefix + String(repeating: "f", count: 24))
        let between = id(prefix + String(repeating: "0", count: 23) + "1")
        let set = SortedOids([c, a, b, a])
        #expect(set.count == 3)
        #expect(set.contains(a) && set.contains(b) && set.contains(c))
        #expect(!set.contains(between))
        #expect(!SortedOids([]).contains(a))
    }

    /// A fetch marks the ids it took by position (a byte an id, not a second list): each id's
    /// position holds it, distinct ids have distinct positions, and an id not there has none.
    @Test func eachIdHasItsOwnPosition() {
        var generator = SystemRandomNumberGenerator()
        let given = (0..<1_000).map { _ in
            Oid(hex: (0..<40).map { _ in String(Int.random(in: 0..<16, using: &generator), radix: 16) }.joined())!
        }
        let set = SortedOids(sorting: given + given.prefix(100))
        var seen = Set<Int>()
        for oid in given {
            guard let at = set.position(of: oid) else { Issue.record("\(oid) has no position"); continue }
            #expect(set.ids[at] == oid)
            seen.insert(at)
        }
        #expect(seen.count == set.count && set.count == Set(given).count)
        #expect(set.position(of: id(String(repeating: "0", count: 40))) == nil || given.contains(id(String(repeating: "0", count: 40))))
    }
}
