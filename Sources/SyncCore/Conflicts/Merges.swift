import FoundationEssentials
import Glibc

/// Content merges used by the `union` and `json` strategies. Deterministic: the same inputs give
/// the same bytes on every device (versions come in device-name order).
enum Merges {
    /// The base's lines, then every version's lines not seen yet, in order.
    static func lineUnion(base: [UInt8]?, versions: [[UInt8]]) -> [UInt8] {
        var seen = Set<ArraySlice<UInt8>>()
        var out: [UInt8] = []
        for text in [base ?? []] + versions {
            for line in lines(text) where seen.insert(line).inserted {
                out.append(contentsOf: line)
                out.append(UInt8(ascii: "\n"))
            }
        }
        return out
    }

    private static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
    }

    /// Key-level three-way merge of JSON objects; nil when a key changed differently on both sides
    /// (or a version is not a JSON object). Written with sorted keys, pretty-printed.
    static func json(base: [UInt8]?, _ a: [UInt8], _ b: [UInt8]) -> [UInt8]? {
        func object(_ bytes: [UInt8]?) -> [String: JSONValue]? {
            guard let bytes else { return [:] }
            guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else { return nil }
            return fields
        }
        guard let o = object(base), let x = object(a), let y = object(b),
              let merged = mergeObjects(o, x, y) else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(JSONValue.object(merged)) else { return nil }
        return Array(data) + [UInt8(ascii: "\n")]
    }

    private static func mergeObjects(_ base: [String: JSONValue], _ a: [String: JSONValue],
                                     _ b: [String: JSONValue]) -> [String: JSONValue]? {
        var out: [String: JSONValue] = [:]
        for key in Set(base.keys).union(a.keys).union(b.keys) {
            let o = base[key], x = a[key], y = b[key]
            if x == y {
                if let x { out[key] = x }
            } else if x == o {
                if let y { out[key] = y }
            } else if y == o {
                if let x { out[key] = x }
            } else if case .object(let xo)? = x, case .object(let yo)? = y {
                var oo: [String: JSONValue] = [:]
                if case .object(let inner)? = o { oo = inner }
                guard let inner = mergeObjects(oo, xo, yo) else { return nil }
                out[key] = .object(inner)
            } else {
                return nil
            }
        }
        return out
    }
}

/// A JSON value as the `json` strategy reads and writes it. Numbers stay integers when they are
/// (so 3 is written back as 3); an integer and a fraction of the same value are equal.
enum JSONValue: Codable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)  // above Int64's range (a 64-bit id): kept exact, not turned into a fraction
    case fraction(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer()
        if value.decodeNil() { self = .null }
        else if let b = try? value.decode(Bool.self) { self = .bool(b) }
        else if let i = try? value.decode(Int64.self) { self = .integer(i) }
        else if let u = try? value.decode(UInt64.self) { self = .unsigned(u) }
        else if let d = try? value.decode(Double.self) { self = .fraction(d) }
        else if let s = try? value.decode(String.self) { self = .string(s) }
        else if let a = try? value.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try value.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var value = encoder.singleValueContainer()
        switch self {
        case .null: try value.encodeNil()
        case .bool(let b): try value.encode(b)
        case .integer(let i): try value.encode(i)
        case .unsigned(let u): try value.encode(u)
        case .fraction(let d): try value.encode(d)
        case .string(let s): try value.encode(s)
        case .array(let a): try value.encode(a)
        case .object(let o): try value.encode(o)
        }
    }

    static func == (l: JSONValue, r: JSONValue) -> Bool {
        switch (l, r) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.integer(x), .integer(y)): x == y
        case let (.fraction(x), .fraction(y)): x == y
        case let (.unsigned(x), .unsigned(y)): x == y
        case let (.integer(x), .fraction(y)), let (.fraction(y), .integer(x)): Double(x) == y
        case let (.unsigned(x), .fraction(y)), let (.fraction(y), .unsigned(x)): Double(x) == y
        case let (.string(x), .string(y)): x == y
        case let (.array(x), .array(y)): x == y
        case let (.object(x), .object(y)): x == y
        default: false
        }
    }
}
