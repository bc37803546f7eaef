import Crypto
import FoundationEssentials

/// What goes to an encrypted hub, and back: every git object of a device's history sealed on its
/// own (AES-256-GCM, a random nonce, its hub name as associated data, its size padded), named by
/// an HMAC of its id; and per push a manifest that says, sealed, whose push it is, its number in
/// that device's sequence, the commits it stands for and the objects it brings.
extension HubKey {
    /// The name an object of id `id` (40 hex digits) has on the hub: 40 hex digits of
    /// HMAC-SHA256(names key, "object " + id).
    public func objectName(_ id: String) -> String { mac("object " + id, hexDigits: 40) }

    /// The branch a device pushes to: `refs/heads/devices/` + 32 hex digits of an HMAC of its
    /// name (gitolite rules name it: `syncagent key ref --device NAME`).
    public func deviceBranch(_ device: String) -> String { mac("device " + device, hexDigits: 32) }

    func mac(_ text: String, hexDigits: Int) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: names)
        return code.prefix(hexDigits / 2).map { String($0, radix: 16).leftPadded(2) }.joined()
    }

    /// Seals a git object (`raw`: "<type> <size>\0<content>") to be stored as `name`. The size is
    /// rounded up (to 4 KiB, or an eighth of its power of two above 32 KiB): the hub sees a size
    /// class, not a size.
    public func sealObject(_ raw: [UInt8], name: String) throws(HubSealError) -> [UInt8] {
        try seal(Self.padded(raw), context: "object " + name)
    }

    /// Opens what `sealObject` made; throws when the key differs or a byte changed.
    public func openObject(_ sealed: [UInt8], name: String) throws(HubSealError) -> [UInt8] {
        try Self.unpadded(try open(sealed, context: "object " + name))
    }

    public func sealManifest(_ manifest: HubManifest, branch: String) throws(HubSealError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let json = try? encoder.encode(manifest) else { throw .malformed("cannot encode a manifest") }
        return try seal(Self.padded(Array(json)), context: "manifest " + branch)
    }

    public func openManifest(_ sealed: [UInt8], branch: String) throws(HubSealError) -> HubManifest {
        let json = try Self.unpadded(try open(sealed, context: "manifest " + branch))
        guard let manifest = try? JSONDecoder().decode(HubManifest.self, from: Data(json)) else {
            throw .malformed("a manifest that opens but is no manifest")
        }
        return manifest
    }

    func seal(_ bytes: [UInt8], context: String) throws(HubSealError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(bytes, using: seal, authenticating: Array(("syncagent v1 " + context).utf8))
            guard let combined = box.combined else { throw HubSealError.malformed("AES-GCM gave no combined form") }
            return Array(combined)
        } catch {
            throw .malformed("cannot seal: \(error)")
        }
    }

    func open(_ bytes: [UInt8], context: String) throws(HubSealError) -> [UInt8] {
        do {
            let box = try AES.GCM.SealedBox(combined: bytes)
            return Array(try AES.GCM.open(box, using: seal, authenticating: Array(("syncagent v1 " + context).utf8)))
        } catch {
            throw .unreadable("does not open with this key (\(context.split(separator: " ").first ?? ""))")
        }
    }

    /// 8 bytes of length, the bytes, zeros up to the size class.
    static func padded(_ bytes: [UInt8]) -> [UInt8] {
        let length = bytes.count + 8
        let unit = length <= 32768 ? 4096 : (1 << (Int.bitWidth - length.leadingZeroBitCount - 1)) / 8
        let size = (length + unit - 1) / unit * unit
        var out = [UInt8](repeating: 0, count: size)
        withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { out.replaceSubrange(0..<8, with: $0) }
        out.replaceSubrange(8..<(8 + bytes.count), with: bytes)
        return out
    }

    static func unpadded(_ bytes: [UInt8]) throws(HubSealError) -> [UInt8] {
        guard bytes.count >= 8 else { throw .malformed("a sealed object too short for its length") }
        let length = bytes[0..<8].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        guard length <= UInt64(bytes.count - 8) else { throw .malformed("a sealed object shorter than its length says") }
        return Array(bytes[8..<(8 + Int(length))])
    }
}

/// One push of one device, sealed on the hub beside the objects it brings.
public struct HubManifest: Codable, Sendable, Equatable {
    public var version = 1
    public var device: String
    /// 1 for a device's first push, then one more each push: a hub that puts an old push back,
    /// drops one from the middle or reorders them is caught by it.
    public var counter: Int
    /// The device's `main` and conflict records as of this push (40 hex digits).
    public var main: String?
    public var records: String?
    /// The ids of the objects this push brings (the hub names them by `objectName`).
    public var objects: [String]

    public init(device: String, counter: Int, main: String?, records: String?, objects: [String]) {
        (self.device, self.counter, self.main, self.records, self.objects) = (device, counter, main, records, objects)
    }
}
