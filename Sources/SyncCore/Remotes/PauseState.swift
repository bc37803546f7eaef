import FileSystem
import FoundationEssentials
import SystemPackage

/// The peers a person paused (`syncagent pause [PEER]`): no fetch, merge or push with them until
/// `syncagent resume`; local changes are still committed. Kept in `<state>/paused` (one peer
/// name a line; `*`: every peer), so a pause outlives restarts of the agent and of the machine.
public struct PauseState: Sendable, Equatable {
    /// Every peer, those added to the config later too.
    public var all = false
    /// The peers paused by name (when `all` is false).
    public var peers: Set<String> = []

    public init(all: Bool = false, peers: Set<String> = []) {
        self.all = all
        self.peers = peers
    }

    public func isPaused(_ peer: String) -> Bool { all || peers.contains(peer) }

    /// The paused ones among `names`, in their order.
    public func paused(among names: [String]) -> [String] { names.filter(isPaused) }

    /// Pauses `peer` (nil: every peer).
    public mutating func pause(_ peer: String?) {
        if let peer { if !all { peers.insert(peer) } } else { all = true; peers = [] }
    }

    /// Resumes `peer` (nil: every peer). Resuming one while all are paused leaves the others of
    /// `names` paused.
    public mutating func resume(_ peer: String?, among names: [String]) {
        guard let peer else { all = false; peers = []; return }
        if all {
            all = false
            peers = Set(names)
        }
        peers.remove(peer)
    }

    public static func file(state: FilePath) -> FilePath { state.appending("paused") }

    /// What is on disk; nothing paused when there is no file.
    public static func load(state: FilePath) -> PauseState {
        guard let bytes = try? Files.read(file(state: state)) else { return PauseState() }
        var out = PauseState()
        for line in bytes.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            let name = String(decoding: line, as: UTF8.self)
            if name == "*" { out.all = true } else { out.peers.insert(name) }
        }
        if out.all { out.peers = [] }
        return out
    }

    /// Writes it (a temporary, then rename; flushed: a pause is a promise to the person); no file
    /// when nothing is paused.
    public func save(state: FilePath) throws {
        let target = Self.file(state: state)
        guard all || !peers.isEmpty else {
            guard ((try? FileStat.of(target)) ?? nil) != nil else { return }
            try Files.remove(target)  // a resume that cannot be kept says so
            _ = Durability.flushFiles([], andDirectories: [state])
            return
        }
        let text = all ? "*\n" : peers.sorted().map { "\($0)\n" }.joined()
        let temp = state.appending("paused.new")
        try? Files.remove(temp)
        try Files.create(temp, bytes: Array(text.utf8), executable: false)
        try Files.rename(temp, to: target)
        _ = Durability.flushReplaced(FilePath("paused"), under: state)
    }
}
