import SystemPackage

/// Which names never reach a commit: editors' temporaries, git's own `.git`, and the name the store
/// uses for an empty directory's marker (`DirectoryMarker`).
public enum PathRules {
    /// True for a name that is never stored: `.git`, Vim swap files (`.name.swp`, `.swo`, `.swx`,
    /// `.swpx`), backups (`name~`), Emacs locks (`.#name`), Vim's write probe `4913`, and `*.tmp`
    /// files (editors write them and rename them over the real file).
    public static func isIgnored(_ name: FilePath.Component) -> Bool {
        let s = name.string
        if s == ".git" || s == "4913" || s == DirectoryMarker.name { return true }
        if s.hasSuffix("~") || s.hasPrefix(".#") || s.hasSuffix(".tmp") { return true }
        if s.hasPrefix("."), s.hasSuffix(".swp") || s.hasSuffix(".swo") || s.hasSuffix(".swx") || s.hasSuffix(".swpx") {
            return true
        }
        return false
    }

    /// True when any component of a relative path is ignored.
    public static func isIgnored(path: FilePath) -> Bool {
        path.components.contains(where: isIgnored)
    }
}
