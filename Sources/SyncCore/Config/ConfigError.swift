import SystemPackage

/// Why a config file cannot be used: which file, where in it, which key, and what to do about it.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: FilePath
    /// 1-based line of the offending key, or of its table header when the key is missing.
    public var line: Int?
    /// The dotted key, e.g. `watch.debounce_ms` or `peer.url`.
    public var key: String?
    public var message: String

    public init(file: FilePath, line: Int? = nil, key: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    /// `<file>:<line>: <key>: <message>`, leaving out the parts that are nil.
    public var description: String {
        let location = file.string + (line.map { ":\($0)" } ?? "")
        return location + ": " + (key.map { "\($0): " } ?? "") + message
    }
}
