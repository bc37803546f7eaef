import FileSystem
import SystemPackage

/// `.syncignore` at the top of the data directory: paths this device keeps to itself, one pattern
/// a line, as in a `.gitignore`. Each line is a `[[rule]] sync = "never"` of this device's, read
/// again whenever the file changes (no restart). The file itself is never synced: what one device
/// ignores (a cache, a build output) is its own business, as Syncthing's `.stignore` is, and a
/// synced one would let one device silently stop the others from syncing what they share.
///
/// - Blank lines and lines starting with `#` are skipped; `\#` and `\!` start a pattern with
///   those characters; trailing spaces are dropped (`\ ` keeps one).
/// - A pattern without `/` (or with a `/` only at its end) matches a name at any depth: `*.log`,
///   `node_modules/`; with a `/` in front or in the middle it is anchored at the top: `/todo.txt`,
///   `logs/*.log`. `**`, `*`, `?` and `[...]` as in `[[rule]]` globs (`Glob`).
/// - A trailing `/` means the directory and everything under it.
/// - A pattern that names a directory also keeps everything under it (`build`, `docs/build`).
/// - `!pattern` takes a path back: the last line that matches a path decides, as in git (unlike
///   git, a path under an ignored directory can be taken back), and a path taken back is left to
///   the config's `[[rule]]`s.
public enum IgnoreFile {
    /// The file's name, at the top of the data directory.
    public static let name = ".syncignore"
    public static var path: FilePath { FilePath(name) }

    /// The rules the file's `bytes` say, in the order `PathPolicy` reads them (first match wins:
    /// the file's last line comes first), the file's own rule first.
    public static func rules(_ bytes: [UInt8]) -> [SyncRule] {
        var out: [SyncRule] = []
        for raw in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            var line = String(decoding: raw, as: UTF8.self)
            if line.hasSuffix("\r") { line.removeLast() }
            guard let (pattern, negated) = parse(line) else { continue }
            // A name is also a directory's: `build` keeps what is under a directory `build` too.
            let contents = pattern.contains("/") ? pattern + "/" : "**/" + pattern + "/"
            for p in pattern.hasSuffix("/") ? [pattern] : [pattern, contents] {
                var rule = SyncRule(path: p, sync: negated ? .auto : .never)
                rule.fromIgnoreFile = true
                out.append(rule)
            }
        }
        var own = SyncRule(path: "./" + name, sync: .never)
        own.fromIgnoreFile = false  // never taken back by a `!` line
        return [own] + out.reversed()
    }

    /// The rules of the file in `data`, or none when there is no such file.
    public static func rules(in data: FilePath) -> [SyncRule] {
        guard let bytes = try? Files.read(data.pushing(path)) else { return [] }
        return rules(bytes)
    }

    /// One line as a `Glob` pattern, and whether it takes paths back (`!`); nil for a blank line
    /// or a comment.
    static func parse(_ line: String) -> (String, Bool)? {
        var s = Substring(line)
        // Trailing spaces go, unless escaped.
        while s.hasSuffix(" "), !s.hasSuffix("\\ ") { s.removeLast() }
        if s.hasSuffix("\\ ") { s = s.dropLast(2) + " " }
        guard !s.isEmpty, !s.hasPrefix("#") else { return nil }
        var negated = false
        if s.hasPrefix("!") {
            negated = true
            s = s.dropFirst()
        } else if s.hasPrefix("\\#") || s.hasPrefix("\\!") {
            s = s.dropFirst()
        }
        let directory = s.hasSuffix("/")
        var body = directory ? s.dropLast() : s
        guard !body.isEmpty else { return nil }
        let anchored = body.hasPrefix("/") || body.contains("/")
        while body.hasPrefix("/") { body = body.dropFirst() }
        guard !body.isEmpty else { return nil }
        // Unanchored with a `/` at its end: a directory of that name at any depth.
        var pattern = anchored ? "./" + body : (directory ? "**/" + body : String(body))
        if directory { pattern += "/" }
        return (pattern, negated)
    }
}
