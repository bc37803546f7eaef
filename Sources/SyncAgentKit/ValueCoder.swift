import FoundationEssentials
import Glibc

/// How a value is stored at its key: bytes in, bytes out. JSON by default (sorted keys, so the
/// same value is the same bytes on every device and a no-op `set` commits nothing).
public struct ValueCoder<T: Sendable>: Sendable {
    /// The bytes written for a value.
    public let encode: @Sendable (T) throws -> [UInt8]
    /// The value read from bytes; throws when they are not a `T`.
    public let decode: @Sendable ([UInt8]) throws -> T

    /// A coder of your own (a property list, a compact binary form...).
    public init(encode: @escaping @Sendable (T) throws -> [UInt8], decode: @escaping @Sendable ([UInt8]) throws -> T) {
        self.encode = encode
        self.decode = decode
    }
}

extension ValueCoder where T: Codable {
    /// Pretty-printed JSON with sorted keys, ending in a newline.
    public static var json: ValueCoder<T> {
        ValueCoder(encode: { value in
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            return Array(try encoder.encode(value)) + [UInt8(ascii: "\n")]
        }, decode: { bytes in
            try JSONDecoder().decode(T.self, from: Data(bytes))
        })
    }
}
