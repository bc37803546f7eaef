internal import Git
internal import ObjectStorage

/// A version the store holds (a commit, a file's bytes), named by its id. The domain's own type:
/// nothing above SyncCore sees libgit2's.
public struct ObjectID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let oid: Oid

    init(_ oid: Oid) { self.oid = oid }

    /// Parses 40 hex digits; nil otherwise.
    public init?(hex: String) {
        guard let oid = Oid(hex: hex) else { return nil }
        self.oid = oid
    }

    /// The full id, 40 hex digits (what `git show` takes).
    public var hex: String { oid.hex }
    /// The first 12 digits, for messages.
    public var short: String { String(oid.hex.prefix(12)) }
    public var description: String { oid.hex }

    public static func < (a: ObjectID, b: ObjectID) -> Bool { a.oid < b.oid }
}

extension Oid {
    var id: ObjectID { ObjectID(self) }
}
