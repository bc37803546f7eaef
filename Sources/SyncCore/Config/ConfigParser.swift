import FoundationEssentials
import Glibc
import SystemPackage
internal import TOMLKit

/// What each key accepts, worded for "must be …" and "missing required key … (…)".
private enum Rule {
    static let device = "a string of letters, digits, '-' and '_', e.g. device = \"phone\""
    static let data = "a directory path (absolute, starting with ~/, or relative to this file), e.g. data = \"~/Sync\""
    static let state =
        "a directory path (absolute, starting with ~/, or relative to this file) outside data, e.g. state = \"~/.local/state/syncagent/phone\""
    static let peerName = "a string of letters, digits, '-' and '_', e.g. name = \"watch\""
    static let url =
        "a non-empty string: a path, file://, ssh://, git:// or http(s):// URL of the peer's store.git, e.g. url = \"ssh://watch.local/srv/watch/state/store.git\""
    static let glob =
        "a non-empty string: a glob matched against paths relative to the data directory, e.g. path = \"*.json\""
    static let strategy =
        "one of manual, newest, keep:<device>, both, union, json, command (a device name is letters, digits, '-' and '_'), e.g. strategy = \"newest\""
    static let command =
        "a non-empty array of strings, e.g. command = [\"merge-tool\", \"{base}\", \"{ours}\", \"{theirs}\", \"{out}\"]"
    static let sync = "one of auto, manual, never, e.g. sync = \"manual\""
    static let devices = "a non-empty array of device names (letters, digits, '-' and '_'), e.g. devices = [\"phone\", \"tablet\"]"
    static let mode = "one of send-receive, receive-only, e.g. mode = \"receive-only\""
    static let events = "a non-empty array of event types (\(EventTypes.all.joined(separator: ", "))), e.g. events = [\"received\"]"
    static let notify = "one of poll, ssh, e.g. notify = \"ssh\""
    static let notifyCommand =
        "a non-empty array of strings: a program that prints a line whenever the peer's refs move, e.g. notify_command = [\"ssh\", \"git@hub\", \"syncagent\", \"notify-changes\", \"family.git\"]"
    static let hookCommand = "a non-empty array of strings: the program and its arguments, e.g. command = [\"/usr/local/bin/reload-ui\"]"
}

/// A table of the document, where it sits, and the keys it may hold.
private struct Section {
    let table: TOMLTable
    /// `[]` for the top level, `["watch"]`, or `["peer", "#2"]` for the third `[[peer]]`.
    let path: [String]
    /// `[watch]`, `[[peer]]`, …; nil for the top level.
    let title: String?
    let keys: [String]

    var whereabouts: String { title.map { " in \($0)" } ?? "" }

    /// The dotted key users see, e.g. `peer.url`.
    func displayKey(_ key: String) -> String {
        (path.filter { !$0.hasPrefix("#") } + [key]).joined(separator: ".")
    }
}

/// Turns a TOML document into a `Config`, refusing anything SPEC.md does not allow.
/// Reads a config file's TOML into a `Config`, every error with its line and key.
struct ConfigParser {
    let file: FilePath
    let environment: [String: String]
    let root: TOMLTable
    let lines: KeyLines

    /// How the tables of the top level are written, for messages.
    private static let tableForms = ["watch": "[watch]", "peer": "[[peer]]", "resolver": "[[resolver]]", "safety": "[safety]", "store": "[store]",
                                     "rule": "[[rule]]", "hook": "[[hook]]"]

    init(text: String, file: FilePath, environment: [String: String]) throws {
        do {
            root = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigError(file: file, line: error.source.begin.line, message: "invalid TOML: \(error.description)")
        }
        self.file = file
        self.environment = environment
        lines = KeyLines(text)
    }

    func parse() throws -> Config {
        let top = Section(
            table: root, path: [], title: nil, keys: Config.keys[""]!)
        try checkKeys(top)
        let device = try required("device", in: top, rule: Rule.device) { Config.isValidName($0) ? $0 : nil }
        let data = try directory(required("data", in: top, rule: Rule.data) { $0.isEmpty ? nil : $0 }, key: "data")
        let state = try string("state", in: top, rule: Rule.state) { $0.isEmpty ? nil : $0 }
            .map { try directory($0, key: "state") }
        let watch = try watchSettings(in: top)
        let peers = try peers(in: top, device: device)
        let resolvers = try resolvers(in: top)
        var config = Config(
            file: file, device: device, data: data, state: try state ?? defaultState(device: device),
            watch: watch, peers: peers, resolvers: resolvers)
        config.safety = try safetySettings(in: top)
        config.memory = try storeSettings(in: top)
        config.mode = try string("mode", in: top, rule: Rule.mode) { DeviceMode(rawValue: $0) } ?? .sendReceive
        if let value = top.table["notify_conflicts"] {
            guard let flag = value.bool else { throw invalid("notify_conflicts", in: top, "true or false, e.g. notify_conflicts = false", value) }
            config.notifyConflicts = flag
        }
        var warnings: [ConfigError] = []
        config.rules = try syncRules(in: top, device: device, peers: peers, warnings: &warnings)
        config.hooks = try hooks(in: top)
        config.warnings = warnings
        try checkApart(data: config.data, state: config.state)
        for (i, peer) in config.peers.enumerated() {
            guard let local = peer.localPath(configFile: file) else { continue }
            if local == config.storePath.lexicallyNormalized() || local == config.state.lexicallyNormalized() {
                throw fail(["peer", "#\(i)", "url"], key: "peer.url",
                           "\(peer.url) is this device's own store; a peer's url is another device's <state>/store.git")
            }
            if local == config.data.lexicallyNormalized() || local.starts(with: config.data.lexicallyNormalized()) {
                throw fail(["peer", "#\(i)", "url"], key: "peer.url",
                           "\(peer.url) is in this device's data directory; a peer's url is another device's <state>/store.git")
            }
        }
        return config
    }

    // MARK: Sections

    private func watchSettings(in top: Section) throws -> WatchSettings {
        var settings = WatchSettings()
        guard let watch = try table("watch", in: top, keys: Config.keys["watch"]!) else { return settings }
        settings.debounceMs = try int("debounce_ms", in: watch, unit: "milliseconds", 0...600_000) ?? settings.debounceMs
        let lower = "debounce_ms (\(settings.debounceMs))"
        if let maxDelay = try int("max_delay_ms", in: watch, unit: "milliseconds", settings.debounceMs...3_600_000,
                                  lowerName: lower) {
            settings.maxDelayMs = maxDelay
        } else if settings.maxDelayMs < settings.debounceMs {
            throw fail(watch.path + ["max_delay_ms"], key: watch.displayKey("max_delay_ms"),
                       "must be between \(lower) and 3600000 milliseconds, but defaults to \(settings.maxDelayMs); "
                           + "set it, e.g. max_delay_ms = \(settings.debounceMs)")
        }
        return settings
    }

    private func safetySettings(in top: Section) throws -> SafetySettings {
        var settings = SafetySettings()
        guard let safety = try table("safety", in: top, keys: Config.keys["safety"]!) else { return settings }
        settings.maxDeletePercent = try int("max_delete_percent", in: safety, unit: "percent", 0...100) ?? settings.maxDeletePercent
        settings.minDeleteFiles = try int("min_delete_files", in: safety, unit: "files", 0...100_000_000) ?? settings.minDeleteFiles
        return settings
    }

    private func storeSettings(in top: Section) throws -> StoreMemorySettings {
        var settings = StoreMemorySettings()
        guard let store = try table("store", in: top, keys: Config.keys["store"]!) else { return settings }
        settings.cacheMB = try int("cache_mb", in: store, unit: "MiB", 0...4096) ?? settings.cacheMB
        settings.packWindowMB = try int("pack_window_mb", in: store, unit: "MiB", 4...65536) ?? settings.packWindowMB
        return settings
    }

    private func peers(in top: Section, device: String) throws -> [PeerConfig] {
        var peers: [PeerConfig] = []
        for peer in try tables("peer", in: top, keys: Config.keys["peer"]!) {
            let name = try required("name", in: peer, rule: Rule.peerName) { Config.isValidName($0) ? $0 : nil }
            if name == device {
                throw fail(peer.path + ["name"], key: "peer.name",
                           "'\(name)' is this device's own name (device = \"\(device)\"); give each peer its own device name")
            }
            if let other = peers.firstIndex(where: { $0.name == name }) {
                let at = lines.line(for: ["peer", "#\(other)", "name"]).map { " on line \($0)" } ?? ""
                throw fail(peer.path + ["name"], key: "peer.name",
                           "'\(name)' is already the name of the peer\(at); each peer needs its own name")
            }
            var config = PeerConfig(name: name, url: try required("url", in: peer, rule: Rule.url) { $0.isEmpty ? nil : $0 })
            config.pollSeconds = try int("poll_seconds", in: peer, unit: "seconds", 1...86_400) ?? config.pollSeconds
            config.timeoutSeconds = try int("timeout_seconds", in: peer, unit: "seconds", 1...3_600) ?? config.timeoutSeconds
            if let value = peer.table["hub"] {
                guard let flag = value.bool else { throw invalid("hub", in: peer, "true or false, e.g. hub = true", value) }
                config.hub = flag
            }
            for (key, keyPath) in [("identity", \PeerConfig.identity), ("known_hosts", \PeerConfig.knownHosts),
                                   ("credentials", \PeerConfig.credentials), ("key_file", \PeerConfig.keyFile)] {
                if let text = try string(key, in: peer, rule: "a file path (absolute, starting with ~/, or relative to this file)",
                                         { $0.isEmpty ? nil : $0 }) {
                    config[keyPath: keyPath] = try directory(text, key: "peer.\(key)")
                }
            }
            try notifySettings(in: peer, into: &config)
            if config.keyFile != nil, !config.hub {
                throw fail(peer.path + ["key_file"], key: "peer.key_file",
                           "encrypts a hub's data: it needs hub = true in this [[peer]] (a direct peer is another device of yours and sees plain data)")
            }
            if config.hub, peers.contains(where: \.hub) {
                throw fail(peer.path + ["hub"], key: "peer.hub", "only one [[peer]] may be a hub; keep one and remove hub = true from the others")
            }
            peers.append(config)
        }
        return peers
    }

    private func notifySettings(in peer: Section, into config: inout PeerConfig) throws {
        let notify = try string("notify", in: peer, rule: Rule.notify) { PeerNotify(rawValue: $0) }
        let command = try stringArray("notify_command", in: peer, rule: Rule.notifyCommand)
        if let command {
            if notify == .ssh {
                throw fail(peer.path + ["notify_command"], key: "peer.notify_command",
                           "and notify = \"ssh\" both say how to hear of changes; keep one of them")
            }
            config.notify = .command
            config.notifyCommand = command
            return
        }
        if notify == .ssh, SSHTarget(url: config.url) == nil {
            throw fail(peer.path + ["notify"], key: "peer.notify",
                       "= \"ssh\" needs an ssh url (ssh://user@host/path or user@host:path), but url = \"\(config.url)\"; "
                           + "remove it, or say how to reach the peer with notify_command = [...]")
        }
        config.notify = notify ?? .poll
    }

    private func resolvers(in top: Section) throws -> [ResolverRule] {
        try tables("resolver", in: top, keys: Config.keys["resolver"]!).map { resolver in
            let path = try required("path", in: resolver, rule: Rule.glob) { $0.isEmpty ? nil : $0 }
            let strategy = try required("strategy", in: resolver, rule: Rule.strategy, ResolverStrategy.init)
            let command = try stringArray("command", in: resolver, rule: Rule.command)
            if strategy == .command, command == nil {
                throw fail(resolver.path, key: nil,
                           "missing required key 'command' in [[resolver]] (strategy = \"command\" needs \(Rule.command))")
            }
            if strategy != .command, command != nil {
                throw fail(resolver.path + ["command"], key: "resolver.command",
                           "is only used with strategy = \"command\"; remove it or set strategy = \"command\"")
            }
            return ResolverRule(path: path, strategy: strategy, command: command)
        }
    }

    private func syncRules(in top: Section, device: String, peers: [PeerConfig],
                           warnings: inout [ConfigError]) throws -> [SyncRule] {
        let known = Set([device] + peers.map(\.name))
        return try tables("rule", in: top, keys: Config.keys["rule"]!).map { rule in
            let path = try required("path", in: rule, rule: Rule.glob) { $0.isEmpty ? nil : $0 }
            if let why = Glob.neverMatches(path) {
                warnings.append(fail(rule.path + ["path"], key: "rule.path", "'\(path)' can never match: it \(why)"))
            }
            let sync = try string("sync", in: rule, rule: Rule.sync) { SyncMode(rawValue: $0) } ?? .auto
            let maxBytes = try int("max_bytes", in: rule, unit: "bytes", 0...Int.max)
            if maxBytes != nil, sync != .auto {
                throw fail(rule.path + ["max_bytes"], key: "rule.max_bytes",
                           "is only used with sync = \"auto\" (this rule has sync = \"\(sync.rawValue)\"); remove it or set sync = \"auto\"")
            }
            let devices = try stringArray("devices", in: rule, rule: Rule.devices)
            if let devices {
                if let bad = devices.first(where: { !Config.isValidName($0) }) {
                    throw fail(rule.path + ["devices"], key: "rule.devices", "'\(bad)' is not a device name; must be \(Rule.devices)")
                }
                if !peers.isEmpty {
                    for name in devices where !known.contains(name) {
                        warnings.append(fail(rule.path + ["devices"], key: "rule.devices",
                                             "'\(name)' is neither this device (\(device)) nor one of its peers (\(peers.map(\.name).joined(separator: ", "))); check the spelling"))
                    }
                }
            }
            return SyncRule(path: path, sync: sync, maxBytes: maxBytes.map(Int64.init), devices: devices)
        }
    }

    private func hooks(in top: Section) throws -> [HookConfig] {
        try tables("hook", in: top, keys: Config.keys["hook"]!).map { hook in
            guard let events = try stringArray("events", in: hook, rule: Rule.events) else {
                throw fail(hook.path, key: nil, "missing required key 'events' in [[hook]] (\(Rule.events))")
            }
            if let bad = events.first(where: { !EventTypes.all.contains($0) }) {
                throw fail(hook.path + ["events"], key: "hook.events", "'\(bad)' is not an event type; must be \(Rule.events)")
            }
            guard let command = try stringArray("command", in: hook, rule: Rule.hookCommand) else {
                throw fail(hook.path, key: nil, "missing required key 'command' in [[hook]] (\(Rule.hookCommand))")
            }
            var config = HookConfig(events: events, command: command)
            config.timeoutSeconds = try int("timeout_seconds", in: hook, unit: "seconds", 1...3600) ?? config.timeoutSeconds
            return config
        }
    }

    // MARK: Paths

    private func directory(_ text: String, key: String) throws -> FilePath {
        guard let path = ConfigLocator.resolve(text, relativeTo: file.removingLastComponent(), home: environment["HOME"])
        else {
            throw fail([key], key: key, "cannot expand '~' because HOME is not set; write the full path")
        }
        return path
    }

    private func defaultState(device: String) throws -> FilePath {
        guard let base = ConfigLocator.xdgDirectory("XDG_STATE_HOME", fallback: ".local/state", environment: environment)
        else {
            throw fail(["state"], key: "state",
                       "has no default because neither XDG_STATE_HOME nor HOME is set; set it, e.g. state = \"/var/lib/syncagent/\(device)\"")
        }
        return base.appending("syncagent").appending(device).lexicallyNormalized()
    }

    private func checkApart(data: FilePath, state: FilePath) throws {
        let overlap: String? =
            state == data ? "is the data directory itself"
            : state.starts(with: data) ? "is inside the data directory \(data)"
            : data.starts(with: state) ? "contains the data directory \(data)"
            : nil
        if let overlap {
            throw fail(["state"], key: "state",
                       "\(state) \(overlap); the data directory is watched; put state outside it")
        }
    }

    // MARK: Keys and values

    private func fail(_ path: [String], key: String?, _ message: String) -> ConfigError {
        ConfigError(file: file, line: lines.line(for: path), key: key, message: message)
    }

    /// Refuses keys `section` does not define, suggesting the nearest valid one.
    private func checkKeys(_ section: Section) throws {
        let unknown = section.table.keys.filter { !section.keys.contains($0) }
        let position = { (key: String) in lines.line(for: section.path + [key]) ?? .max }
        guard let key = unknown.min(by: { position($0) < position($1) }) else { return }
        let value = section.table[key]!
        let what =
            section.title != nil ? "key '\(key)'"
            : value.type == .table ? "table [\(key)]"
            : value.array?.first?.type == .table ? "table [[\(key)]]"
            : "key '\(key)'"
        let shown = { (key: String) in Self.tableForms[key] ?? "'\(key)'" }
        let advice = nearest(key, in: section.keys).map { "did you mean \(shown($0))?" }
            ?? "valid keys are " + section.keys.map(shown).joined(separator: ", ")
        throw fail(section.path + [key], key: nil, "unknown \(what)\(section.whereabouts); \(advice)")
    }

    private func table(_ key: String, in top: Section, keys: [String]) throws -> Section? {
        guard let value = top.table[key] else { return nil }
        guard let table = value.table else {
            throw fail([key], key: key, "must be a table: a line [\(key)] followed by its keys")
        }
        let section = Section(table: table, path: [key], title: "[\(key)]", keys: keys)
        try checkKeys(section)
        return section
    }

    /// The header (`[watch]`, `[[peer]]`) of a table that holds `key`, if any.
    private func tableHolding(_ key: String) -> (header: String, path: [String])? {
        for name in root.keys.sorted() {
            guard let value = root[name] else { continue }
            if let table = value.table, table[key] != nil { return ("[\(name)]", [name]) }
            if let i = value.array?.firstIndex(where: { $0.table?[key] != nil }) { return ("[[\(name)]]", [name, "#\(i)"]) }
        }
        return nil
    }

    /// The `[[key]]` tables, in file order.
    private func tables(_ key: String, in top: Section, keys: [String]) throws -> [Section] {
        guard let value = top.table[key] else { return [] }
        guard let array = value.array, array.allSatisfy({ $0.type == .table }) else {
            throw fail([key], key: key, "must be written as [[\(key)]] tables, one for each \(key)")
        }
        return try array.enumerated().map { index, element in
            let section = Section(table: element.table!, path: [key, "#\(index)"], title: "[[\(key)]]", keys: keys)
            try checkKeys(section)
            return section
        }
    }

    /// The string at `key` made into a `T` by `convert`, which returns nil for values `rule` does not allow.
    private func string<T>(
        _ key: String, in section: Section, rule: String, _ convert: (String) -> T?
    ) throws -> T? {
        guard let value = section.table[key] else { return nil }
        guard let converted = value.string.flatMap(convert) else { throw invalid(key, in: section, rule, value) }
        return converted
    }

    private func required<T>(
        _ key: String, in section: Section, rule: String, _ convert: (String) -> T?
    ) throws -> T {
        guard let value = try string(key, in: section, rule: rule, convert) else {
            // A top-level key written below a table header belongs to that table (TOML): say so.
            if section.path.isEmpty, let (header, path) = tableHolding(key) {
                throw fail(path, key: key, "missing required key '\(key)' (\(rule)): this `\(key) =` line sits below "
                           + "the \(header) header, so TOML reads it as part of that table. Move it above the first [table] or [[table]] line")
            }
            throw fail(section.path, key: nil, "missing required key '\(key)'\(section.whereabouts) (\(rule))")
        }
        return value
    }

    private func int(
        _ key: String, in section: Section, unit: String, _ range: ClosedRange<Int>, lowerName: String? = nil
    ) throws -> Int? {
        guard let value = section.table[key] else { return nil }
        guard let number = value.int, range.contains(number) else {
            let rule = "a whole number of \(unit) between \(lowerName ?? String(range.lowerBound)) and \(range.upperBound)"
            throw invalid(key, in: section, rule, value)
        }
        return number
    }

    private func stringArray(_ key: String, in section: Section, rule: String) throws -> [String]? {
        guard let value = section.table[key] else { return nil }
        let strings = value.array?.compactMap(\.string)
        guard let strings, !strings.isEmpty, strings.count == value.array?.count else {
            throw invalid(key, in: section, rule, value)
        }
        return strings
    }

    private func invalid(_ key: String, in section: Section, _ rule: String, _ value: TOMLValueConvertible) -> ConfigError {
        let got = value.type == .table ? "a table" : value.tomlValue.debugDescription
        return fail(section.path + [key], key: section.displayKey(key), "must be \(rule), got \(got)")
    }

    private func nearest(_ key: String, in candidates: [String]) -> String? { Spelling.nearest(key, in: candidates) }
}
