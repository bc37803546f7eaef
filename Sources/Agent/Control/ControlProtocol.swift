import FoundationEssentials
import Glibc
import Logging
import SyncCore
import SystemPackage

/// A request on the control socket: one JSON line, answered by one JSON line (or, for `events`,
/// one line per event).
public enum ControlRequest: Codable, Sendable {
    /// Answer: `StatusReport`.
    case status
    /// Answer: `[SyncResult]`.
    case sync(peer: String?)
    /// Answer: `[ResolveResult]`.
    case resolve(targets: [RecordTarget], all: Bool, choice: ResolveChoiceArgument)
    /// Answer: `MessageResult`.
    case sendDeletes
    /// Answer: `[HeldEntry]`.
    case held
    /// Answer: `MessageResult`. Paths relative to the data directory, as bytes.
    case send(paths: [[UInt8]], all: Bool)
    /// Answer: `MessageResult`.
    case revert(paths: [[UInt8]])
    /// Answer: `MessageResult`. The path relative to the data directory, as bytes.
    case restore(path: [UInt8], at: String?)
    /// Answer: `MessageResult`. `restore --deletes`: what the deletion spell took, back on disk.
    case restoreDeletes
    /// Answer: one `AgentEvent` per line: the kept ones after `since`, then (with `follow`) every new
    /// one until the client hangs up or the agent stops.
    case events(since: Int?, follow: Bool)
    /// Answer: `CommitResult`. Commits these paths (relative to the data directory, as bytes) now,
    /// after what the watcher holds: an app's `set` returns when its value is committed.
    case commit(paths: [[UInt8]])
    /// Answer: `PauseResult`. `syncagent pause [PEER]` (`paused` true) or `resume [PEER]`: nil is
    /// every peer.
    case pause(peer: String?, paused: Bool)
    /// Answer: `[ProgressReport]`: the long work in hand (`status.tasks`), answered at once
    /// however busy the engine is (a progress bar asks a few times a second).
    case progress

    /// The subcommand that makes this request (one word: the agent lock names its holder with it).
    public var commandName: String {
        switch self {
        case .status, .progress: "status"
        case .sync: "sync"
        case .resolve: "resolve"
        case .sendDeletes, .send: "send"
        case .held: "held"
        case .revert: "revert"
        case .restore, .restoreDeletes: "restore"
        case .events: "events"
        case .commit: "commit"
        case .pause(_, let paused): paused ? "pause" : "resume"
        }
    }
}

/// What `commit` did: the commit `main` points at afterwards, the paths the rules hold back
/// instead of committing (`syncagent held`), and those they keep off the store (`never`).
public struct CommitResult: Codable, Sendable {
    public var commit: String?
    public var held: [String] = []
    public var local: [String] = []
    public var error: String?
    /// `SyncError.Code`'s name for `error`, for programs.
    public var errorCode: String? = nil
}

/// A one-line answer.
public struct MessageResult: Codable, Sendable {
    public var message: String
    public var error: String?
    /// `SyncError.Code`'s name for `error`, for programs.
    public var errorCode: String? = nil
}

/// A resolution as the CLI states it: `keep` (a device, "newest" or "both"), `withFile`, or `delete`.
public struct ResolveChoiceArgument: Codable, Sendable {
    public var keep: String?
    public var withFile: String?
    /// The bytes of the `--with` file, read by the CLI from the argument's exact bytes (so a name
    /// that is not UTF-8 works, and the agent needs no access to the caller's directory).
    public var withContent: [UInt8]?
    public var delete: Bool
    public init(keep: String?, withFile: String?, delete: Bool) {
        self.keep = keep
        self.withFile = withFile
        self.delete = delete
    }
}

public struct ControlError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// An agent was there but did not answer in time (else: none could be reached).
    public var timedOut = false
    public var description: String { message }
}
