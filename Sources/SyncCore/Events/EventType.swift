/// Every type an event line can have (SPEC "Events"), in one place.
public enum EventType: String, CaseIterable, Sendable {
    case committed
    case received
    case conflictOpened = "conflict-opened"
    case conflictResolved = "conflict-resolved"
    case peerReachable = "peer-reachable"
    case peerUnreachable = "peer-unreachable"
    case held
    case problem
    case started
    case stopped
    /// `syncagent pause` / `resume`: a peer (or every peer) paused or resumed.
    case paused
    case resumed
    /// `events --since` asked for lines the log no longer keeps: never a hook's.
    case gap
    /// Long work moving (`ProgressReport`), at most once a second per task: live listeners only
    /// (`events --follow`, SyncAgentKit), never logged, numbered or given to a hook.
    case progress

    /// The types a `[[hook]]` may name.
    public static let hookable = allCases.filter { $0 != .gap && $0 != .progress }

    /// Changes a hub must hear about: local commits, merges written here, conflict records.
    public static let changesForHub: Set<EventType> = [.committed, .received, .conflictOpened, .conflictResolved]
}
