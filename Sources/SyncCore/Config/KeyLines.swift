import FoundationEssentials
import Glibc

/// The 1-based line of each key and table header, found by scanning the text, since TOMLKit does not
/// report where values are. Keys are paths like `["watch", "debounce_ms"]`; the n-th `[[peer]]` is
/// `["peer", "#n"]` (0-based), and `["peer"]` is the first of them.
struct KeyLines {
    private var lines: [[String]: Int] = [:]

    init(_ text: String) {
        var section: [String] = []
        var arrayCounts: [[String]: Int] = [:]
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.drop { $0.isWhitespace }
            if line.hasPrefix("[["), let name = Self.keyPath(line.dropFirst(2), until: "]") {
                let count = arrayCounts[name, default: 0]
                arrayCounts[name] = count + 1
                section = name + ["#\(count)"]
                record(name, index + 1)
                record(section, index + 1)
            } else if line.hasPrefix("["), let name = Self.keyPath(line.dropFirst(), until: "]") {
                section = name
                record(section, index + 1)
            } else if !line.hasPrefix("#"), let key = Self.keyPath(line, until: "=") {
                record(section + key, index + 1)
            }
        }
    }

    /// The line of `path`, else of the nearest enclosing key or header that is in the text.
    func line(for path: [String]) -> Int? {
        var path = path
        while !path.isEmpty {
            if let line = lines[path] { return line }
            path.removeLast()
        }
        return nil
    }

    private mutating func record(_ path: [String], _ line: Int) {
        if lines[path] == nil { lines[path] = line }
    }

    /// The dotted, possibly quoted key at the start of `text`, ending at `end`; nil when `end` never comes.
    private static func keyPath(_ text: Substring, until end: Character) -> [String]? {
        var parts = [""]
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { parts[parts.count - 1].append(character) }
            } else if character == end {
                return parts
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == "." {
                parts.append("")
            } else if !character.isWhitespace {
                parts[parts.count - 1].append(character)
            }
        }
        return nil
    }
}
