@testable import Git
@testable import ObjectStorage
import PropertyBased
import SystemPackage
import Testing

/// `sortedInBytes` (a 16-byte key per path, whole paths compared only on a tie) is held to the
/// sort it replaced, `sorted { $0.precedesInBytes($1) }` (strcmp on every comparison), on random
/// paths built to tie: shared prefixes of 15, 16 and 17 bytes, paths that are prefixes of others,
/// bytes above 0x7f (not UTF-8) and repeats.
@Suite struct PathOrderTests {
    /// Pieces whose joins cross the key's 16-byte edge in every way.
    static let pieces: [[UInt8]] = [
        Array("d0001/".utf8), Array("f000122.txt".utf8), Array("0123456789abcde".utf8),
        Array("0123456789abcdef".utf8), Array("0123456789abcdefg".utf8), [0xff], [0x80, 0x41],
        [0xc3, 0xa9], Array("a".utf8), Array("A".utf8), Array("/".utf8), Array(".".utf8),
    ]

    @Test func ordersPathsAsStrcmpDoes() async {
        await propertyCheck(count: 200, input: Gen.int(in: 0...(Self.pieces.count - 1)).array(of: 0...5).array(of: 0...60)) { lists in
            let paths = lists.compactMap { picks -> FilePath? in
                let bytes = picks.flatMap { Self.pieces[$0] }
                return bytes.isEmpty ? nil : FilePath(bytes: bytes)
            }
            let want = paths.sorted { $0.precedesInBytes($1) }.map(\.bytes)
            #expect(paths.sortedInBytes().map(\.bytes) == want)
            // By a key of each element, as the engine sorts changes by their paths.
            let tagged = paths.enumerated().map { (tag: $0.offset, path: $0.element) }
            #expect(tagged.sortedInBytes { $0.path }.map(\.path.bytes) == want)
            // A set's own sort and a sequence's (each made for its type), and the index's order.
            let unique = Set(paths)
            #expect(unique.sortedInBytes().map(\.bytes) == unique.sorted { $0.precedesInBytes($1) }.map(\.bytes))
            #expect(paths[...].sortedInBytes().map(\.bytes) == want)
            for (a, b) in zip(paths, paths.reversed()) {
                let strcmpOrder: Int32 = a.precedesInBytes(b) ? -1 : (b.precedesInBytes(a) ? 1 : 0)
                #expect(IndexEntries.compare(a.bytes, b.bytes) == strcmpOrder)
            }
        }
    }

    @Test func aShorterPathComesBeforeTheLongerOneItStarts() {
        let paths = ["0123456789abcdef/x", "0123456789abcdef", "0123456789abcde", "0123456789abcdef0"].map { FilePath($0) }
        #expect(paths.sortedInBytes().map(\.string) == ["0123456789abcde", "0123456789abcdef", "0123456789abcdef/x", "0123456789abcdef0"])
        #expect([FilePath]().sortedInBytes().isEmpty)
    }
}
