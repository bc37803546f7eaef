import FoundationEssentials
import Synchronization
import SyncCore
import SystemPackage

/// The pauses of one agent (`syncagent pause` / `resume`), shared by its peers' syncers: read on
/// every round, changed by a request, kept on disk (`PauseState`) so they outlive restarts.
final class PauseBoard: Sendable {
    private let state: FilePath
    private let current: Mutex<PauseState>

    init(state: FilePath) {
        self.state = state
        current = Mutex(PauseState.load(state: state))
    }

    func isPaused(_ peer: String) -> Bool { current.withLock { $0.isPaused(peer) } }

    var snapshot: PauseState { current.withLock { $0 } }

    /// Pauses (or resumes, `paused` false) `peer`, nil: every one of `names`; saved before it
    /// returns. Returns the paused peers of `names` afterwards.
    func set(_ peer: String?, paused: Bool, names: [String]) throws -> [String] {
        try current.withLock { s in
            var next = s
            if paused { next.pause(peer) } else { next.resume(peer, among: names) }
            try next.save(state: state)
            s = next
            return next.paused(among: names)
        }
    }
}

/// What `pause` and `resume` answer: the peers paused now, and what was done.
public struct PauseResult: Codable, Sendable {
    public var paused: [String]
    public var message: String
    public var error: String?
    /// `SyncError.Code`'s name for `error`, for programs.
    public var errorCode: String?
}
