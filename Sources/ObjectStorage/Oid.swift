/// A git object id (SHA-1): its 20 bytes, held as five 32-bit words in the bytes' own memory order
/// (libgit2's `git_oid` is the same 20 bytes; `Git` converts at no cost). Aligned to 4, so an array
/// of ids takes 20 bytes each: with three integers (8, 8, 4) it took 24, and a first sync holds
/// several lists of 100k ids at once.
public struct Oid: Hashable, Sendable, CustomStringConvertible, Comparable {
    private var w: (UInt32, UInt32, UInt32, UInt32, UInt32)

    /// Bytes 0-7, 8-15 and 16-19, each loaded as it lies in memory.
    var a: UInt64 { withUnsafeBytes(of: w) { $0.loadUnaligned(as: UInt64.self) } }
    var b: UInt64 { withUnsafeBytes(of: w) { $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self) } }
    var c: UInt32 { w.4 }

    /// The 20 bytes of an id (more are ignored; fewer read as zeros after them).
    public init(bytes: some Collection<UInt8>) {
        w = (0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &w) { out in
            for (i, byte) in bytes.prefix(20).enumerated() { out[i] = byte }
        }
    }

    /// The id whose 20 bytes are at `raw` (a `git_oid`, a pack index's entry).
    public init(raw: UnsafeRawPointer) {
        w = (0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &w) { $0.baseAddress!.copyMemory(from: raw, byteCount: 20) }
    }

    /// Writes the 20 bytes to `raw`.
    public func store(to raw: UnsafeMutableRawPointer) {
        withUnsafeBytes(of: w) { raw.copyMemory(from: $0.baseAddress!, byteCount: 20) }
    }

    public static func == (x: Oid, y: Oid) -> Bool {
        x.a == y.a && x.b == y.b && x.c == y.c
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(a)
        hasher.combine(b)
        hasher.combine(c)
    }

    /// The 20 bytes, in order.
    public var bytes: [UInt8] { withBytes { Array($0) } }

    /// Hands the 20 bytes to `body` with no copy to the heap.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: w) { try body($0) }
    }

    /// The first byte (a pack index's fan-out slot).
    public var firstByte: UInt8 { UInt8(truncatingIfNeeded: a.littleEndian) }

    /// Parses 40 hex digits (either case); nil otherwise.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 40 else { return nil }
        func value(_ d: UInt8) -> UInt8? {
            switch d {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var raw: [UInt8] = []
        raw.reserveCapacity(20)
        for i in stride(from: 0, to: 40, by: 2) {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            raw.append(high << 4 | low)
        }
        self.init(bytes: raw)
    }

    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 40) { out in
            for (i, byte) in bytes.enumerated() {
                out[2 * i] = digits[Int(byte >> 4)]
                out[2 * i + 1] = digits[Int(byte & 0x0f)]
            }
            return 40
        }
    }

    public var description: String { hex }

    /// The all-zero id, which names no object.
    public static let zero = Oid(bytes: [])

    /// The first 8 bytes as a number (a cheap key for sorting and bucketing ids).
    public var prefix64: UInt64 { a }

    /// Byte order, as `memcmp` (and `git_oid_cmp`) sort: big-endian, the integers compare the same.
    public static func < (x: Oid, y: Oid) -> Bool {
        (x.a.bigEndian, x.b.bigEndian, x.c.bigEndian) < (y.a.bigEndian, y.b.bigEndian, y.c.bigEndian)
    }
}
