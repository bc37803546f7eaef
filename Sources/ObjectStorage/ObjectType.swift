/// A git object's type, numbered as in a pack's entry headers (and libgit2's `git_object_t`).
public enum ObjectType: Int32, Sendable {
    case commit = 1, tree = 2, blob = 3, tag = 4

    /// The name in a loose object's header and in the text an id is computed over.
    public var name: String {
        switch self {
        case .commit: "commit"
        case .tree: "tree"
        case .blob: "blob"
        case .tag: "tag"
        }
    }
}
