import SystemPackage

/// How the store keeps a directory with nothing synced in it (SPEC "Store": empty directories sync
/// like files): an empty file named `.syncagent-keep` inside it, in the tree only. The agent never
/// writes the marker into a data directory (a marker in the tree means "this directory exists");
/// plain `git` sees it as the familiar `.gitkeep` convention and a checkout makes the directory.
/// A directory has a marker exactly when it exists and the tree holds nothing else under it;
/// every device keeps that true for the directories its changes touch, so the cost is O(changes).
/// The name is reserved: a user's own file of that name is never synced.
public enum DirectoryMarker {
    public static let name = ".syncagent-keep"
    static let component = FilePath.Component(name)!

    public static func isMarker(_ path: FilePath) -> Bool { path.lastComponent == component }

    /// The marker of directory `dir` (relative to the data directory; never the root itself).
    public static func marker(of dir: FilePath) -> FilePath { dir.appending(component) }

    /// The directory a marker stands for.
    public static func directory(of marker: FilePath) -> FilePath { marker.removingLastComponent() }

    /// The directories whose marker may change when `path` changes: the path itself (it may be or
    /// have been a directory) and every directory above it (one may have been empty).
    static func candidates(for path: FilePath) -> [FilePath] {
        var result: [FilePath] = []
        var dir = isMarker(path) ? directory(of: path) : path
        while !dir.isEmpty {
            result.append(dir)
            dir.removeLastComponent()
        }
        return result
    }
}
