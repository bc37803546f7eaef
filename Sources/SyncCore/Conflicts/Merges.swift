import Foundation

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
    /// (or a version is not a JSON object).
    static func json(base: [UInt8]?, _ a: [UInt8], _ b: [UInt8]) -> [UInt8]? {
        func object(_ bytes: [UInt8]?) -> [String: Any]? {
            guard let bytes else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
        }
        guard let o = object(base), let x = object(a), let y = object(b),
              let merged = mergeObjects(o, x, y) else { return nil }
        guard let data = try? JSONSerialization.data(withJSONObject: merged,
                                                     options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else { return nil }
        return Array(data) + [UInt8(ascii: "\n")]
    }

    private static func mergeObjects(_ base: [String: Any], _ a: [String: Any], _ b: [String: Any]) -> [String: Any]? {
        var out: [String: Any] = [:]
        for key in Set(base.keys).union(a.keys).union(b.keys) {
            let o = base[key], x = a[key], y = b[key]
            if same(x, y) {
                if let x { out[key] = x }
            } else if same(x, o) {
                if let y { out[key] = y }
            } else if same(y, o) {
                if let x { out[key] = x }
            } else if let xo = x as? [String: Any], let yo = y as? [String: Any] {
                guard let inner = mergeObjects(o as? [String: Any] ?? [:], xo, yo) else { return nil }
                out[key] = inner
            } else {
                return nil
            }
        }
        return out
    }

    private static func same(_ a: Any?, _ b: Any?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?): return NSDictionary(dictionary: ["v": x]).isEqual(to: ["v": y])
        default: return false
        }
    }
}
