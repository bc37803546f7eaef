/// A set of object ids held as one sorted array, looked up by binary search: 20 bytes an id where
/// a `Set<Oid>` takes 40-80 (a table kept under 3/4 full, and both tables at once while it grows).
/// A 100k-object first fetch held three such sets at once: 15 MB of the agent's peak.
package struct SortedOids {
    package private(set) var ids: [Oid]

    /// The distinct ids of `ids`.
    package init(_ ids: some Sequence<Oid>) {
        self.init(sorting: Array(ids))
    }

    /// The distinct ids of `ids`, sorted in the array's own storage (no second copy of 100k ids
    /// while it sorts, when the caller hands over the only reference).
    package init(sorting ids: consuming [Oid]) {
        var sorted = consume ids
        sorted.sort(by: Self.precedes)
        var kept = 0
        for i in sorted.indices where i == 0 || sorted[i] != sorted[kept - 1] {
            sorted[kept] = sorted[i]
            kept += 1
        }
        sorted.removeLast(sorted.count - kept)
        self.ids = sorted
    }

    package var count: Int { ids.count }
    package var isEmpty: Bool { ids.isEmpty }

    package func contains(_ id: Oid) -> Bool { position(of: id) != nil }

    /// Where `id` is in `ids`, if it is there: a caller marks ids in a `[Bool]` of `count`
    /// (a byte an id) rather than gathering them in a second list (20 bytes an id, and more while
    /// it grows).
    package func position(of id: Oid) -> Int? {
        var low = 0, high = ids.count
        while low < high {
            let mid = (low + high) / 2
            if Self.precedes(ids[mid], id) { low = mid + 1 } else { high = mid }
        }
        return low < ids.count && ids[low] == id ? low : nil
    }

    /// The order kept: by the ids' first 8 bytes as a number, then by all 20 (any order will do
    /// that is the same for every lookup; this one mostly costs a compare of two integers).
    private static func precedes(_ a: Oid, _ b: Oid) -> Bool {
        let x = a.prefix64, y = b.prefix64
        return x != y ? x < y : a < b
    }
}
