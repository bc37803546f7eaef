import CLibgit2

/// A git object id (SHA-1), copied out of libgit2 into a plain value.
public struct Oid: Hashable, Sendable, CustomStringConvertible, Comparable {
    let raw: git_oid

    init(_ raw: git_oid) { self.raw = raw }
    init(_ ptr: UnsafePointer<git_oid>) { self.raw = ptr.pointee }

    /// Parses 40 hex digits; nil otherwise.
    public init?(hex: String) {
        guard hex.utf8.count == 40 else { return nil }
        var oid = git_oid()
        guard git_oid_fromstr(&oid, hex) == 0 else { return nil }
        self.raw = oid
    }

    public var hex: String {
        var buf = [CChar](repeating: 0, count: 41)
        var copy = raw
        git_oid_tostr(&buf, 41, &copy)
        return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }  // 40 hex digits and a NUL
    }

    public var description: String { hex }

    /// The all-zero id, which names no object.
    public static let zero = Oid(git_oid())

    public static func == (a: Oid, b: Oid) -> Bool {
        var x = a.raw, y = b.raw
        return git_oid_equal(&x, &y) == 1
    }
    public static func < (a: Oid, b: Oid) -> Bool {
        var x = a.raw, y = b.raw
        return git_oid_cmp(&x, &y) < 0
    }
    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: raw.id) { hasher.combine(bytes: $0) }
    }
}
