import SyncCore

/// How a key syncs, set from code (an embedded agent; a client's agent follows its config's
/// `[[rule]]`s). Mapped onto the same rules: the first match wins, code before the config.
public struct KeyPolicy: Sendable, Equatable {
    /// Whether and when the key's changes leave this device.
    public enum Sync: Sendable, Equatable {
        /// Never leaves this device, never written by a merge.
        case never
        /// Kept safe in the store, shared only by ``SyncAgent/send(_:)`` (`syncagent send`).
        case manual
        /// Shared as soon as committed; with `maxBytes`, a bigger value is held as if `manual`.
        case automatic(maxBytes: Int64? = nil)
    }

    /// The keys it is for.
    public let match: KeyMatch
    /// How they sync.
    public let sync: Sync

    /// A policy for the keys `match` names.
    public init(_ match: KeyMatch, _ sync: Sync) {
        self.match = match
        self.sync = sync
    }

    var rule: SyncRule {
        let glob: String
        switch match {
        case .key(let key): glob = "./" + Self.escaped(key)  // that key only, not the same name deeper
        case .prefix(let prefix): glob = Self.escaped(prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix) + "/**"
        }
        switch sync {
        case .never: return SyncRule(path: glob, sync: .never)
        case .manual: return SyncRule(path: glob, sync: .manual)
        case .automatic(let maxBytes): return SyncRule(path: glob, sync: .auto, maxBytes: maxBytes)
        }
    }

    /// A key as a glob that matches only itself.
    static func escaped(_ key: String) -> String {
        var out = ""
        for c in key {
            if "*?[]\\".contains(c) { out.append("\\") }
            out.append(c)
        }
        return out
    }
}
