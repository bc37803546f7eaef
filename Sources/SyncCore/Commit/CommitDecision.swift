import FileSystem

/// What a commit does with one path of its batch, decided from what was looked at (pure; the
/// store looks, asks, then does it: `Store.commit`). Table-tested in `CommitDecisionTests`.
struct CommitDecision: Sendable, Equatable {
    enum Action: Sendable, Equatable {
        /// Nothing: an ignored name, a path this device does not keep, its own write unchanged,
        /// or what a merge could not write here, still untouched.
        case leave
        /// Something syncagent does not sync stands there (a FIFO, a device, an unreadable
        /// directory above it): what the store holds there and under it stays.
        case obstruct
        /// The rules hold the change (`manual`, `max_bytes`, a receive-only device): kept in the
        /// store and listed, not committed, unless the disk is back at the store's version.
        case hold(HoldReason)
        /// Gone: its entry and every entry under it leave the index.
        case remove
        /// Now a directory: its file entry leaves; its files come as paths of their own.
        case removeFile
        /// A regular file or link: entries under it leave, its bytes go in.
        case stage
        /// A merge's own write, stamped, whose stat data are still the entry's: entries under it
        /// leave, the bytes are not read again.
        case keepStamped
    }

    var action: Action
    /// The path leaves the held list (its change goes the ordinary way now).
    var releasesHold = false
    /// The user wrote where a merge could not: that is now the change, its unapplied record goes.
    var overridesUnapplied = false

    /// Whether the path is passed over before anything on disk is looked at.
    static func passesOver(ignored: Bool, materializes: Bool, ownWrite: Bool) -> Bool {
        ignored || !materializes || ownWrite
    }

    /// What was looked at for one path.
    struct Look: Sendable, Equatable {
        /// Something syncagent does not sync stands at or above the path (not looked for in a
        /// file hashed ahead a moment ago).
        var obstacle = false
        /// What is on disk there: nil when nothing.
        var kind: FileStat.Kind?
        /// The index has an entry at the path.
        var tracked = false
        /// Why the rules hold a change here (with `syncagent send` taken into account): nil, none.
        var holdReason: HoldReason?
        /// A merge could not write the path: nil, no; true, and the disk still holds what was
        /// there then; false, the user has written since.
        var unappliedUntouched: Bool?
        /// The index entry is a merge's stamped write and the stat data still match it.
        var stampedUnchanged = false
    }

    static func decide(_ look: Look) -> CommitDecision {
        if look.obstacle { return CommitDecision(action: .obstruct) }
        // The rules hold files, not directories: a directory that went away (or came) is handled
        // file by file, under the same rules.
        let storable = look.kind == .regular || look.kind == .symlink
        if storable || look.tracked, let why = look.holdReason { return CommitDecision(action: .hold(why)) }
        var decision = CommitDecision(action: .leave, releasesHold: true)
        if let untouched = look.unappliedUntouched {
            if untouched { return decision }  // its old state is not a change of this device's
            decision.overridesUnapplied = true
        }
        switch look.kind {
        case nil: decision.action = .remove
        case .directory?: decision.action = .removeFile
        case .regular?, .symlink?: decision.action = look.stampedUnchanged ? .keepStamped : .stage
        default: decision.action = .obstruct  // it just came (the obstacle look saw none)
        }
        return decision
    }
}
