import Glibc
import SystemPackage

// Paths are bytes (Linux allows any but NUL and '/'): made from bytes, read as bytes, and ordered
// byte by byte as git orders tree entries. Between a tree entry and a syscall a path is never a
// String; display escapes (`display`, elsewhere).

extension FilePath {
    /// A path made of exactly these bytes (no NUL), as Linux allows.
    public init(bytes: [UInt8]) {
        self = bytes.withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { chars in
                FilePath(platformString: Array(chars) + [0])
            }
        }
    }

    /// Whether this path sorts before `other` byte by byte (git's order), without copying either.
    public func precedesInBytes(_ other: FilePath) -> Bool {
        withPlatformString { a in other.withPlatformString { b in strcmp(a, b) < 0 } }
    }

    /// The path's bytes, exactly, lent to `body` in place (no array made: for lookups).
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withPlatformString { ptr in try body(UnsafeRawBufferPointer(start: UnsafeRawPointer(ptr), count: strlen(ptr))) }
    }

    /// This path with `suffix` added to its last name, byte for byte (`pack-1` -> `pack-1.idx`);
    /// `FilePath(path.string + suffix)` would turn a directory name that is not UTF-8 into U+FFFD.
    public func addingToName(_ suffix: String) -> FilePath {
        FilePath(bytes: bytes + Array(suffix.utf8))
    }

    /// The path's bytes, exactly.
    public var bytes: [UInt8] {
        withPlatformString { ptr in
            Array(UnsafeBufferPointer(start: UnsafeRawPointer(ptr).assumingMemoryBound(to: UInt8.self), count: strlen(ptr)))
        }
    }
}

extension FilePath.Component {
    /// The component's bytes, exactly.
    public var bytes: [UInt8] { FilePath(root: nil, [self]).bytes }

    /// A component made of exactly these bytes (no '/', no NUL).
    public init(bytes: [UInt8]) {
        self = FilePath(bytes: bytes).lastComponent!
    }
}

extension Sequence {
    /// The elements in git's order of their paths (byte by byte, `precedesInBytes`), each path
    /// read once. Sorting with `precedesInBytes` itself reached both paths' bytes through
    /// swift-system's closures at every comparison: half of the engine's time in a 100k-file
    /// start-up commit, where one batch's paths were sorted five times. Here each path gives a
    /// key of its first 16 bytes (two integers) and only paths that share those are compared
    /// whole. Inlinable: made for each caller's own types (unspecialized, from other modules,
    /// every element cost a witness-table call to enumerate, map and copy).
    @inlinable
    public func sortedInBytes(by path: (Element) -> FilePath) -> [Element] {
        let items = Array(self)
        guard items.count > 1 else { return items }
        var keys: [PathSortKey] = []
        keys.reserveCapacity(items.count)
        for n in items.indices { keys.append(PathSortKey(path(items[n]), index: n)) }
        keys.sort { a, b in
            if a.high != b.high { return a.high < b.high }
            if a.low != b.low { return a.low < b.low }
            return path(items[a.index]).precedesInBytes(path(items[b.index]))
        }
        var sorted: [Element] = []
        sorted.reserveCapacity(items.count)
        for key in keys { sorted.append(items[key.index]) }
        return sorted
    }
}

extension Sequence<FilePath> {
    /// The paths in git's order (byte by byte); see `sortedInBytes(by:)`.
    @inlinable
    public func sortedInBytes() -> [FilePath] { sortedInBytes { $0 } }
}

/// A path's first 16 bytes as two big-endian integers (zeros past its end: a path holds no NUL,
/// so a shorter path sorts first, as `strcmp` has it), and where the path is in the list.
@usableFromInline
struct PathSortKey {
    @usableFromInline let high: UInt64
    @usableFromInline let low: UInt64
    @usableFromInline let index: Int

    @usableFromInline
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
