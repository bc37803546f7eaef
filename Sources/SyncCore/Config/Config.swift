import FoundationEssentials
import Glibc
import SystemPackage
internal import TOMLKit

/// One device's configuration, read from its TOML file (SPEC.md, "Config file").
public struct Config: Sendable, Equatable {
    /// The absolute path of the file this came from.
    public var file: FilePath
    /// This device's name: letters, digits, '-' and '_'.
    public var device: String
    /// The watched directory; absolute and lexically normalized.
    public var data: FilePath
    /// Holds the store, the lock, the socket and caches; absolute, never inside `data`.
    public var state: FilePath
    public var watch: WatchSettings
    public var peers: [PeerConfig]
    /// First match wins; no match means `.manual`.
    public var resolvers: [ResolverRule]
    /// When a batch of deletions is held for confirmation.
    public var safety: SafetySettings = SafetySettings()
    public var memory: StoreMemorySettings = StoreMemorySettings()
    /// `[[rule]]`: per-path policy, first match wins.
    public var rules: [SyncRule] = []
    /// `[[hook]]`: commands run for chosen events.
    public var hooks: [HookConfig] = []
    /// `mode`: send-receive (default) or receive-only.
    public var mode: DeviceMode = .sendReceive
    /// `notify_conflicts`: a desktop notification (`notify-send`) for each conflict opened here,
    /// when the agent runs in a desktop session (default true).
    public var notifyConflicts = true
    /// What is legal but most likely a mistake (a glob that can never match, an unknown device):
    /// shown at every start, never silent.
    public var warnings: [ConfigError] = []

    /// The rules as the store applies them: the data directory's `.syncignore` (`IgnoreFile`, read
    /// now; its lines are `never` rules, before the config's), then the `[[rule]]` tables.
    public var policy: PathPolicy { PathPolicy(device: device, rules: IgnoreFile.rules(in: data) + rules, mode: mode) }

    public init(
        file: FilePath, device: String, data: FilePath, state: FilePath,
        watch: WatchSettings = WatchSettings(), peers: [PeerConfig] = [], resolvers: [ResolverRule] = []
    ) {
        self.file = file
        self.device = device
        self.data = data
        self.state = state
        self.watch = watch
        self.peers = peers
        self.resolvers = resolvers
    }

    public var storePath: FilePath { state.appending("store.git") }
    public var lockPath: FilePath { state.appending("agent.lock") }
    public var socketPath: FilePath { state.appending("agent.sock") }

    /// Reads and validates the config file; throws `ConfigError`.
    public static func load(
        file: FilePath, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> Config {
        let file = absolute(file)
        let bytes: [UInt8]
        do {
            bytes = try readAll(file)
        } catch {
            throw ConfigError(file: file, message: "cannot read the config file: \(error)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError(file: file, message: "the config file is not UTF-8 text")
        }
        return try parse(text, file: file, environment: environment)
    }

    /// Validates `text` as the contents of `file` (which relative paths in it are taken from); throws `ConfigError`.
    public static func parse(_ text: String, file: FilePath, environment: [String: String]) throws -> Config {
        try ConfigParser(text: text, file: absolute(file), environment: environment).parse()
    }

    /// Letters, digits, '-' and '_': the names of devices and peers.
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }

    private static func absolute(_ file: FilePath) -> FilePath {
        FilePath(FileManager.default.currentDirectoryPath).pushing(file).lexicallyNormalized()
    }

    private static func readAll(_ file: FilePath) throws -> [UInt8] {
        let fd = try FileDescriptor.open(file, .readOnly)
        defer { try? fd.close() }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try fd.read(into: $0) }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }
}

/// How much memory libgit2 may keep for the store (`[store]`). Its own defaults let one repository
/// cache up to 256 MiB of objects and map up to 8 GiB of packs; a watch has far less.
public struct StoreMemorySettings: Sendable, Equatable {
    /// libgit2's object cache (parsed commits and trees), in MiB; 0 turns it off.
    public var cacheMB: Int = 2
    /// The most pack data mapped into memory at once, in MiB. 4 (in windows of 1 MiB): at 8, a
    /// 100k-file first sync peaked 6 MB higher and kept most of it mapped, at the same speed.
    public var packWindowMB: Int = 4

    public init(cacheMB: Int = 2, packWindowMB: Int = 4) {
        self.cacheMB = cacheMB
        self.packWindowMB = packWindowMB
    }
}

/// One `[[hook]]`: a command run for chosen event types, with the event as one JSON line on stdin.
public struct HookConfig: Sendable, Equatable {
    public var events: [String]
    public var command: [String]
    public var timeoutSeconds: Int = 10

    public init(events: [String], command: [String], timeoutSeconds: Int = 10) {
        self.events = events
        self.command = command
        self.timeoutSeconds = timeoutSeconds
    }
}

/// The event types `[[hook]] events` may name (SPEC "Events").
public enum EventTypes {
    public static let all = EventType.hookable.map(\.rawValue)
}

extension PeerConfig {
    /// The peer's git dir when its url names one on this machine (a path, relative to the config
    /// file's directory, or a file:// URL); nil for a network URL.
    public func localPath(configFile: FilePath) -> FilePath? {
        if url.hasPrefix("file://") { return FilePath(String(url.dropFirst("file://".count))).lexicallyNormalized() }
        if url.contains("://") || Self.isScpLike(url) { return nil }
        let base = configFile.removingLastComponent()
        return (url.hasPrefix("/") ? FilePath(url) : base.pushing(FilePath(url))).lexicallyNormalized()
    }

    /// `host:path` (scp-like ssh) has a ':' before any '/'.
    public static func isScpLike(_ url: String) -> Bool {
        guard let colon = url.firstIndex(of: ":") else { return false }
        guard let slash = url.firstIndex(of: "/") else { return true }
        return colon < slash
    }
}

extension Config {
    /// Every key the config file may hold, by table ("" for the top level): what the parser accepts
    /// (anything else is refused with a suggestion) and what `init`'s file documents.
    public static let keys: [String: [String]] = [
        "": ["device", "data", "state", "mode", "notify_conflicts", "watch", "peer", "resolver", "rule", "hook", "safety", "store"],
        "watch": ["debounce_ms", "max_delay_ms"],
        "safety": ["max_delete_percent", "min_delete_files"],
        "store": ["cache_mb", "pack_window_mb"],
        "peer": ["name", "url", "poll_seconds", "timeout_seconds", "hub", "identity", "known_hosts", "credentials", "notify", "notify_command",
                 "key_file"],
        "resolver": ["path", "strategy", "command"],
        "rule": ["path", "sync", "max_bytes", "devices"],
        "hook": ["events", "command", "timeout_seconds"],
    ]
}

public struct SafetySettings: Sendable, Equatable {
    /// One batch deleting more than this share of the tracked files...
    public var maxDeletePercent: Int = 50
    /// ...and at least this many is held until `syncagent send --deletes`.
    public var minDeleteFiles: Int = 20

    public init(maxDeletePercent: Int = 50, minDeleteFiles: Int = 20) {
        self.maxDeletePercent = maxDeletePercent
        self.minDeleteFiles = minDeleteFiles
    }
}

public struct WatchSettings: Sendable, Equatable {
    /// Quiet period before a commit.
    public var debounceMs: Int = 200
    /// During non-stop changes, commit at least this often.
    public var maxDelayMs: Int = 2000

    public init(debounceMs: Int = 200, maxDelayMs: Int = 2000) {
        self.debounceMs = debounceMs
        self.maxDelayMs = maxDelayMs
    }
}

public struct PeerConfig: Sendable, Equatable {
    public var name: String
    /// A path, file://, ssh://, git:// or http(s):// URL of the peer's store.
    public var url: String
    /// How often to fetch when the agent cannot see the peer's refs change.
    public var pollSeconds: Int = 30
    /// A fetch or push is abandoned after this long without data (and retried).
    public var timeoutSeconds: Int = 20
    /// An ordinary git server shared by many devices (SPEC "Hub").
    public var hub = false
    /// ssh only: the private key to offer (default: ssh-agent, then ~/.ssh/id_ed25519, id_rsa).
    public var identity: FilePath?
    /// ssh only: where the server's host key must be (default ~/.ssh/known_hosts).
    public var knownHosts: FilePath?
    /// http(s) only: a file holding "user:password".
    public var credentials: FilePath?
    /// An encrypted hub's key (`syncagent key new`), or a file holding `passphrase: WORDS`.
    public var keyFile: FilePath?
    /// How the agent learns that the peer's refs moved, besides `poll_seconds` (`notify`).
    public var notify: PeerNotify = .poll
    /// The program (and arguments) that prints the peer's ref moves (`notify_command`), as
    /// `syncagent notify-changes` does; set when `notify` is `.command`.
    public var notifyCommand: [String]?

    public init(name: String, url: String, pollSeconds: Int = 30) {
        self.name = name
        self.url = url
        self.pollSeconds = pollSeconds
    }
}

/// `[[peer]] notify`: polling only, or a channel that says at once when the peer's refs move.
public enum PeerNotify: String, Sendable, Equatable {
    /// Fetch every `poll_seconds` (and at once for a peer on this machine: inotify on its refs).
    case poll
    /// Keep `ssh ... syncagent notify-changes PATH` running and fetch on every line it prints.
    case ssh
    /// Keep `notify_command` running and fetch on every line it prints.
    case command
}

public enum ResolverStrategy: Sendable, Equatable, CustomStringConvertible {
    case manual, newest, keep(device: String), both, union, json, command

    /// Parses the config spelling: `manual`, `newest`, `keep:<device>`, `both`, `union`, `json`, `command`.
    public init?(_ text: String) {
        switch text {
        case "manual": self = .manual
        case "newest": self = .newest
        case "both": self = .both
        case "union": self = .union
        case "json": self = .json
        case "command": self = .command
        default:
            guard text.hasPrefix("keep:"), Config.isValidName(String(text.dropFirst(5))) else { return nil }
            self = .keep(device: String(text.dropFirst(5)))
        }
    }

    /// The config spelling, e.g. `keep:phone`.
    public var description: String {
        switch self {
        case .manual: "manual"
        case .newest: "newest"
        case .keep(let device): "keep:\(device)"
        case .both: "both"
        case .union: "union"
        case .json: "json"
        case .command: "command"
        }
    }
}

public struct ResolverRule: Sendable, Equatable {
    /// A glob matched against the path relative to the data directory.
    public var path: String
    public var strategy: ResolverStrategy
    /// The merge program and its arguments; set exactly when `strategy` is `.command`.
    public var command: [String]?

    public init(path: String, strategy: ResolverStrategy, command: [String]? = nil) {
        self.path = path
        self.strategy = strategy
        self.command = command
    }
}
