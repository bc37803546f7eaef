import Crypto
import CryptoExtras
import FoundationEssentials

/// The key of an encrypted hub (issue 48): 32 random bytes every device of the hub shares, moved
/// between devices out of band, or derived from a passphrase with scrypt. Two keys are derived
/// from it with HKDF-SHA256: one seals (AES-256-GCM), one names (HMAC-SHA256), so an object's name
/// on the hub says nothing of its id and no name can be guessed without the key.
public struct HubKey: Sendable {
    let seal: SymmetricKey
    let names: SymmetricKey

    public init(secret: [UInt8]) throws(HubSealError) {
        guard secret.count == 32 else { throw .badKey("a hub key is 32 bytes, this one is \(secret.count)") }
        let master = SymmetricKey(data: secret)
        seal = HKDF<SHA256>.deriveKey(inputKeyMaterial: master, info: Array("syncagent hub seal v1".utf8), outputByteCount: 32)
        names = HKDF<SHA256>.deriveKey(inputKeyMaterial: master, info: Array("syncagent hub names v1".utf8), outputByteCount: 32)
    }

    /// A new random key.
    public static func random() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// The key from a passphrase: scrypt (N = 2^15, r = 8, p = 1: about 0.1 s and 32 MB), salted
    /// with a constant (every device must find the same key from the same words).
    public static func fromPassphrase(_ passphrase: String) throws(HubSealError) -> [UInt8] {
        guard passphrase.count >= 12 else { throw .badKey("a hub passphrase must be 12 characters or more") }
        do {
            let key = try KDF.Scrypt.deriveKey(from: Array(passphrase.utf8), salt: Array("syncagent hub passphrase v1".utf8),
                                               outputByteCount: 32, rounds: 1 << 15, blockSize: 8, parallelism: 1)
            return key.withUnsafeBytes { Array($0) }
        } catch {
            throw .badKey("cannot derive a key from the passphrase: \(error)")
        }
    }

    // MARK: the key as text

    /// "syncagent-hub-key-v1 a1b2-c3d4-...-" : 16 groups of 4 hex digits, and a check group.
    public static func text(_ secret: [UInt8]) -> String {
        let hex = secret.map { String($0, radix: 16).leftPadded(2) }.joined()
        var groups: [String] = []
        var i = hex.startIndex
        while i < hex.endIndex { let j = hex.index(i, offsetBy: 4); groups.append(String(hex[i..<j])); i = j }
        let check = SHA256.hash(data: secret).prefix(2).map { String($0, radix: 16).leftPadded(2) }.joined()
        return "syncagent-hub-key-v1 " + groups.joined(separator: "-") + "-" + check
    }

    /// Reads what `text` wrote (spaces, case and dashes are forgiven); says what is wrong otherwise.
    public static func parse(_ text: String) throws(HubSealError) -> [UInt8] {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" })
        guard let body = words.last, words.count <= 2, words.count == 1 || words.first == "syncagent-hub-key-v1" else {
            throw .badKey("not a hub key (it starts with syncagent-hub-key-v1, made by `syncagent key new`)")
        }
        let hex = body.lowercased().filter { $0 != "-" }
        guard hex.count == 68, hex.allSatisfy({ $0.isASCII && $0.isHexDigit }) else { throw .badKey("a hub key has 17 groups of 4 hex digits") }
        var bytes: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex { let j = hex.index(i, offsetBy: 2); bytes.append(UInt8(hex[i..<j], radix: 16)!); i = j }
        let secret = Array(bytes.prefix(32)), check = Array(bytes.suffix(2))
        guard Array(SHA256.hash(data: secret).prefix(2)) == check else {
            throw .badKey("the key's last group does not match: a digit was mistyped")
        }
        return secret
    }
}

public enum HubSealError: Error, Sendable, Equatable, CustomStringConvertible {
    case badKey(String)
    /// AES-GCM refused: another key, or bytes changed on the way.
    case unreadable(String)
    case malformed(String)

    public var description: String {
        switch self {
        case .badKey(let s), .unreadable(let s), .malformed(let s): s
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
