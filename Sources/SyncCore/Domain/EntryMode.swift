/// The modes of the entries the store's trees hold (git's own numbers), and the store's branch.
public enum EntryMode {
    /// A regular file.
    public static let file: UInt32 = 0o100644
    /// A regular file with the executable bit.
    public static let executable: UInt32 = 0o100755
    /// A symbolic link (the blob is its target).
    public static let link: UInt32 = 0o120000
    /// A directory (a tree).
    public static let tree: UInt32 = 0o040000
}

extension Store {
    /// The branch that holds this device's history (every device has its own, with this name).
    public static let mainRef = "refs/heads/main"
}
