import Glibc
import SystemPackage

/// Which names never reach a commit: editors' temporaries, git's own `.git`, and the name the store
/// uses for an empty directory's marker (`DirectoryMarker`).
public enum PathRules {
    /// True for a name that is never stored: `.git`, Vim swap files (`.name.swp`, `.swo`, `.swx`,
    /// `.swpx`), backups (`name~`), Emacs locks (`.#name`), Vim's write probe `4913`, and `*.tmp`
    /// files (editors write them and rename them over the real file).
    public static func isIgnored(_ name: FilePath.Component) -> Bool {
        // Most names are none of these, told from their bytes without making a string (a scan
        // and a commit ask for every path's every component): every rule needs a name that
        // begins with '.' or '4', or ends with '~' or ".tmp".
        let mayBe = name.withPlatformString { c -> Bool in
            let n = strlen(c)
            guard n > 0 else { return false }
            let first = UInt8(bitPattern: c[0]), last = UInt8(bitPattern: c[n - 1])
            return first == UInt8(ascii: ".") || first == UInt8(ascii: "4") || last == UInt8(ascii: "~") || last == UInt8(ascii: "p")
        }
        guard mayBe else { return false }
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
