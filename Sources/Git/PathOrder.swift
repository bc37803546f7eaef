import Glibc
import SystemPackage

extension Sequence {
    /// The elements in git's order of their paths (byte by byte, `precedesInBytes`), each path
    /// read once. Sorting with `precedesInBytes` itself reached both paths' bytes through
    /// swift-system's closures at every comparison: half of the engine's time in a 100k-file
    /// start-up commit, where one batch's paths were sorted five times. Here each path gives a
    /// key of its first 16 bytes (two integers) and only paths that share those are compared
    /// whole.
    public func sortedInBytes(by path: (Element) -> FilePath) -> [Element] {
        let items = Array(self)
        guard items.count > 1 else { return items }
        var keys: [PathSortKey] = []
        keys.reserveCapacity(items.count)
        for (n, item) in items.enumerated() { keys.append(PathSortKey(path(item), index: n)) }
        keys.sort { a, b in
            if a.high != b.high { return a.high < b.high }
            if a.low != b.low { return a.low < b.low }
            return path(items[a.index]).precedesInBytes(path(items[b.index]))
        }
        return keys.map { items[$0.index] }
    }
}

extension Sequence<FilePath> {
    /// The paths in git's order (byte by byte); see `sortedInBytes(by:)`.
    public func sortedInBytes() -> [FilePath] { sortedInBytes { $0 } }
}

/// A path's first 16 bytes as two big-endian integers (zeros past its end: a path holds no NUL,
/// so a shorter path sorts first, as `strcmp` has it), and where the path is in the list.
struct PathSortKey {
    let high: UInt64
    let low: UInt64
    let index: Int

    init(_ path: FilePath, index: Int) {
        var high: UInt64 = 0, low: UInt64 = 0
        path.withPlatformString { chars in
            let count = strnlen(chars, 16)
            for k in 0..<16 {
                let byte = k < count ? UInt64(UInt8(bitPattern: chars[k])) : 0
                if k < 8 { high = high << 8 | byte } else { low = low << 8 | byte }
            }
        }
        self.high = high
        self.low = low
        self.index = index
    }
}
