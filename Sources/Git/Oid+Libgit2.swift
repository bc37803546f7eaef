import CLibgit2
import ObjectStorage

/// An id crosses to and from libgit2 as the same 20 bytes.
extension Oid {
    init(_ raw: git_oid) {
        self = withUnsafeBytes(of: raw.id) { Oid(raw: $0.baseAddress!) }
    }
    init(_ ptr: UnsafePointer<git_oid>) { self.init(raw: UnsafeRawPointer(ptr)) }

    var raw: git_oid {
        var out = git_oid()
        withUnsafeMutableBytes(of: &out.id) { store(to: $0.baseAddress!) }
        return out
    }
}

extension ObjectType {
    init(_ type: git_object_t) { self.init(rawValue: type.rawValue)! }
    var libgit2: git_object_t { git_object_t(rawValue: rawValue) }
}
