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
}
