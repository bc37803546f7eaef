/// What integrating a peer's `main` takes, decided before anything is written: the first step of
/// the merge plan (the per-path steps are `ConflictPolicy`'s). Pure: the questions come as
/// closures, asked only when the answer matters (an idle round asks one).
enum MergeStep: Equatable, Sendable {
    /// `main` already holds the peer's (or the peer has nothing).
    case upToDate
    /// The peer's history holds ours: `main` moves to it.
    case fastForward
    /// The same files, histories apart: one join commit every device makes alike.
    case join
    /// Both sides changed: a merge, with the policy deciding each conflicted path.
    case merge

    static func decide(hasOurs: Bool, hasTheirs: Bool, covered: () throws -> Bool,
                       fastForward: () throws -> Bool, sameTree: () throws -> Bool) rethrows -> MergeStep {
        guard hasTheirs else { return .upToDate }
        guard hasOurs else { return .fastForward }
        if try covered() { return .upToDate }
        if try fastForward() { return .fastForward }
        return try sameTree() ? .join : .merge
    }
}
