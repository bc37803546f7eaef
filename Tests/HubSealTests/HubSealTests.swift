import Testing

@testable import HubSeal

/// Issue 48: what an encrypted hub holds opens only with the key, only as what it was sealed as.
@Suite struct HubSealTests {
    let secret = HubKey.random()
    var key: HubKey { try! HubKey(secret: secret) }
    let raw = Array("blob 11\0hello world".utf8)

    @Test func anObjectOpensAsItWasSealed() throws {
        let name = key.objectName(String(repeating: "ab", count: 20))
        let sealed = try key.sealObject(raw, name: name)
        #expect(try key.openObject(sealed, name: name) == raw)
        #expect(sealed.count >= 4096 && sealed.count < 4096 + 64)  // its size class, not its size
        #expect(!sealed.containsSubsequence(Array("hello".utf8)))
    }

    @Test func anotherKeyOrAnotherNameDoesNotOpenIt() throws {
        let sealed = try key.sealObject(raw, name: "a")
        #expect(throws: HubSealError.self) { try HubKey(secret: HubKey.random()).openObject(sealed, name: "a") }
        #expect(throws: HubSealError.self) { try key.openObject(sealed, name: "b") }  // swapped on the hub
        var flipped = sealed
        flipped[100] ^= 1
        #expect(throws: HubSealError.self) { try key.openObject(flipped, name: "a") }
    }

    @Test func aManifestIsBoundToItsBranch() throws {
        let m = HubManifest(device: "phone", counter: 3, main: String(repeating: "1", count: 40), records: nil, objects: ["x"])
        let sealed = try key.sealManifest(m, branch: key.deviceBranch("phone"))
        #expect(try key.openManifest(sealed, branch: key.deviceBranch("phone")) == m)
        #expect(throws: HubSealError.self) { try key.openManifest(sealed, branch: key.deviceBranch("watch")) }
    }

    @Test func namesAreOpaqueAndStable() throws {
        #expect(key.deviceBranch("phone") == key.deviceBranch("phone"))
        #expect(key.deviceBranch("phone").count == 32 && !key.deviceBranch("phone").contains("phone"))
        #expect(try HubKey(secret: HubKey.random()).deviceBranch("phone") != key.deviceBranch("phone"))
        #expect(key.objectName("00").count == 40)
    }

    @Test func sizesAreRoundedToClasses() {
        #expect(HubKey.padded([UInt8](repeating: 1, count: 10)).count == 4096)
        #expect(HubKey.padded([UInt8](repeating: 1, count: 5000)).count == 8192)
        let big = HubKey.padded([UInt8](repeating: 1, count: 2_000_000)).count
        #expect(big >= 2_000_008 && big <= 2_000_008 + 2_000_008 / 8 + 4096)
        #expect(try! HubKey.unpadded(HubKey.padded([1, 2, 3])) == [1, 2, 3])
    }

    @Test func theKeyAsTextReadsBackAndCatchesATypo() throws {
        let text = HubKey.text(secret)
        #expect(text.hasPrefix("syncagent-hub-key-v1 "))
        #expect(try HubKey.parse(text) == secret)
        #expect(try HubKey.parse(String(text.uppercased().dropFirst("SYNCAGENT-HUB-KEY-V1 ".count))) == secret)
        var typo = Array(text)
        let i = typo.count - 10
        typo[i] = typo[i] == "0" ? "1" : "0"
        #expect(throws: HubSealError.self) { try HubKey.parse(String(typo)) }
    }

    @Test func aPassphraseGivesTheSameKeyEverywhere() throws {
        let a = try HubKey.fromPassphrase("correct horse battery staple")
        #expect(a == (try HubKey.fromPassphrase("correct horse battery staple")))
        #expect(a != (try HubKey.fromPassphrase("correct horse battery stapler")))
        #expect(throws: HubSealError.self) { try HubKey.fromPassphrase("short") }
    }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
