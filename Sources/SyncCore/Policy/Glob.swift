import FoundationEssentials
import Glibc

/// The path globs of `[[rule]]` and `[[resolver]]`, matched against a path's own bytes (a name that
/// is not UTF-8 still matches `*.json`).
///
/// - A pattern without '/' matches the file name at any depth: `*.json` matches `settings/app.json`.
/// - A pattern with '/' matches the whole relative path, one component per '/': `logs/*.log`.
/// - `**` as a whole component matches any number of components (zero or more): `photos/**`
///   matches everything under `photos`, `**/cache/*` a `cache` directory anywhere.
/// - A trailing '/' means the directory and everything under it: `photos/` is `photos/**`.
/// - Within a component: `*`, `?` and `[...]` as fnmatch(3) has them.
/// - `./` in front anchors a pattern at the top: `./settings.json` is that file only, not one of
///   the same name deeper (what SyncAgentKit's policy for one key needs; not for config files).
public enum Glob {
    public static func matches(_ pattern: String, path: String) -> Bool {
        matches(pattern, pathBytes: Array(path.utf8))
    }

    public static func matches(_ pattern: String, pathBytes: [UInt8]) -> Bool {
        let names = pathBytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map(Array.init)
        if pattern.hasPrefix("./") {
            var parts = pattern.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            if parts.last == "" { parts[parts.count - 1] = "**" }
            return match(parts[...], names[...])
        }
        guard pattern.contains("/") else {
            guard let last = names.last else { return false }
            return component(pattern, last)
        }
        var parts = pattern.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.last == "" { parts[parts.count - 1] = "**" }
        return match(parts[...], names[...])
    }

    /// Why a pattern can never match a stored path, or nil when it can.
    public static func neverMatches(_ pattern: String) -> String? {
        if pattern.hasPrefix("/") { return "starts with '/', but paths are relative to the data directory (write \"\(pattern.drop { $0 == "/" })\")" }
        let parts = pattern.split(separator: "/", omittingEmptySubsequences: false)
        if parts.dropLast().contains("") { return "has an empty component ('//')" }
        if parts.contains(where: { $0 == "." || $0 == ".." }) { return "has a '.' or '..' component; paths are stored without them" }
        if parts.contains(".git") { return "names '.git', which is never stored" }
        return nil
    }

    private static func match(_ parts: ArraySlice<String>, _ names: ArraySlice<[UInt8]>) -> Bool {
        guard let first = parts.first else { return names.isEmpty }
        if first == "**" {
            let rest = parts.dropFirst()
            if rest.isEmpty { return !names.isEmpty }
            var tail = names
            while true {
                if match(rest, tail) { return true }
                guard !tail.isEmpty else { return false }
                tail = tail.dropFirst()
            }
        }
        guard let name = names.first, component(first, name) else { return false }
        return match(parts.dropFirst(), names.dropFirst())
    }

    private static func component(_ pattern: String, _ name: [UInt8]) -> Bool {
        (name + [0]).withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { fnmatch(pattern, $0.baseAddress!, 0) == 0 }
        }
    }
}
