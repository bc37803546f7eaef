import FileSystem
internal import Git
internal import ObjectStorage
import SystemPackage

/// Why deletions are held instead of committed (SPEC "Safety holds"): an accident such as an
/// unmounted disk or an emptied directory must never become deletions on every device.
public enum DeletionHold: Sendable, Equatable {
    case rootMissing(FilePath)
    case rootEmpty(FilePath, tracked: Int)
    /// `sent`: files of the spell that had left the device before it crossed the line.
    case massDelete(deleting: Int, tracked: Int, percent: Int, sent: Int)

    public var message: String {
        switch self {
        case .rootMissing(let root):
            return "the data directory \(root.display) is gone (deleted, moved or unmounted); nothing is committed or synced until it is back. "
                + "If it is gone for good, recreate it (empty) and confirm the deletions with `syncagent send --deletes`"
        case .rootEmpty(let root, let tracked):
            return "the data directory \(root.display) is suddenly empty while the store holds \(tracked) files; the deletions are held. "
                + "If you meant to delete everything, confirm with `syncagent send --deletes`; otherwise bring every file back with `syncagent restore --deletes`"
        case .massDelete(let deleting, let tracked, let percent, let sent):
            let left = sent > 0 ? " (\(sent) of them had left this device before the spell crossed the line)" : ""
            return "\(deleting) of \(tracked) tracked files were deleted in one spell (more than \(percent)%)\(left); the deletions still on this device are held, and so is any further deletion. "
                + "If you meant it, confirm with `syncagent send --deletes`; otherwise bring every file of the spell back with `syncagent restore --deletes`"
        }
    }
}

/// The pure rule: does a count of deletions cross the line `[safety]` draws?
public struct DeletionGuard: Sendable, Equatable {
    public var settings: SafetySettings
    public init(settings: SafetySettings) { self.settings = settings }

    /// - Parameters:
    ///   - deleting: tracked files deleted (in one spell: sent and not).
    ///   - tracked: tracked files before the deletions began.
    ///   - rootIsEmpty: the data directory holds nothing at all.
    ///   - sent: of `deleting`, how many have left the device already (for the message).
    public func check(root: FilePath, deleting: Int, tracked: Int, rootIsEmpty: Bool, sent: Int = 0) -> DeletionHold? {
        guard deleting > 0, tracked > 0 else { return nil }
        if rootIsEmpty && deleting >= tracked { return .rootEmpty(root, tracked: tracked) }
        if deleting >= settings.minDeleteFiles && deleting * 100 > tracked * settings.maxDeletePercent {
            return .massDelete(deleting: deleting, tracked: tracked, percent: settings.maxDeletePercent, sent: sent)
        }
        return nil
    }
}

/// Deletions as people make them (SPEC "Safety holds"): a deletion spell is every deletion that
/// comes with gaps shorter than `quiet` (5 s) between them, however the debounce, `max_delay_ms`
/// and slices cut it into batches. The guard judges the spell, against the files tracked when it
/// began. Pure: the engine passes what it sees and the clock's reading.
///
/// - A spell's first `min_delete_files - 1` deletions go at once (they can never cross the line).
/// - Past that, its deletions wait until no deletion has come for `quiet`, then the whole spell is
///   judged: under the line it is committed, over it everything still on the device is held, and
///   so is any later deletion, until `send --deletes` or until every file is back.
/// - A spell that never pauses (a program deleting a file every second) is judged every `longest`
///   (60 s): what is under the line by then goes (and counts), so a slow clean-up is never held for
///   ever; only a spell that crosses the line in total is held.
public struct DeletionSpell: Sendable, Equatable {
    public typealias Instant = ContinuousClock.Instant

    /// A pause in deletions this long ends a spell. `rm -rf` and scripts delete with gaps of
    /// micro- to milliseconds; a slow disk, a file manager reading a big folder or a loaded machine
    /// pause for up to a second or two; a person deleting by hand pauses longer. 5 s keeps those
    /// programs' deletions one spell and costs a big deletion 5 s before it leaves.
    public static let quiet: Duration = .seconds(5)
    /// A spell that never pauses is judged at least this often.
    public static let longest: Duration = .seconds(60)

    public enum Decision: Sendable, Equatable {
        /// Commit the deletions now.
        case send
        /// Keep them back; judge them again at this instant (or at the next batch).
        case wait(until: Instant)
        /// Hold them until the user answers (`send --deletes`) or the files come back.
        case hold(DeletionHold)
    }

    public struct Spell: Sendable, Equatable {
        public var startedAt: Instant
        public var lastDeletionAt: Instant
        /// When the deletions that wait now began to wait.
        public var pieceStartedAt: Instant
        /// Files tracked when the spell began.
        public var tracked: Int
        /// Files of the spell already committed.
        public var sent: Int
        /// `main` when the spell began: what `restore --deletes` brings back.
        public var startCommit: String?
        public var held: DeletionHold?
    }

    public let rule: DeletionGuard
    public let root: FilePath
    public private(set) var current: Spell?

    public init(rule: DeletionGuard, root: FilePath) {
        self.rule = rule
        self.root = root
    }

    /// Judges the deletions not committed yet.
    /// - Parameters:
    ///   - deleted: tracked files deleted and not committed (waiting ones and this batch's).
    ///   - grew: this batch deleted something not seen before.
    ///   - tracked: files the index tracks now (the uncommitted deletions still among them).
    ///   - wholeSeen: every deletion there is has been seen (a scan at start-up or by a one-shot
    ///     command, with no watcher to tell more): judge now instead of waiting for quiet.
    ///   - head: `main` now, kept when a spell begins.
    public mutating func observe(now: Instant, deleted: Int, grew: Bool, tracked: Int, rootIsEmpty: Bool,
                                 wholeSeen: Bool, head: String?) -> Decision {
        guard deleted > 0 else {
            // Nothing waits: a held spell is over (every file came back); another one ends once quiet.
            if let spell = current, spell.held != nil || now - spell.lastDeletionAt >= Self.quiet { current = nil }
            return .send
        }
        if let spell = current, spell.held == nil, grew, now - spell.lastDeletionAt >= Self.quiet {
            current = nil  // these deletions came after a pause: a new spell (what waits joins it)
        }
        var spell = current ?? Spell(startedAt: now, lastDeletionAt: now, pieceStartedAt: now, tracked: tracked, sent: 0,
                                     startCommit: head, held: nil)
        if grew { spell.lastDeletionAt = now }
        defer { current = spell }
        let total = spell.sent + deleted
        if let hold = rule.check(root: root, deleting: total, tracked: spell.tracked, rootIsEmpty: rootIsEmpty, sent: spell.sent) {
            spell.held = hold
            return .hold(hold)
        }
        if let hold = spell.held { return .hold(hold) }  // held once: held until the user answers
        if total < rule.settings.minDeleteFiles || wholeSeen { return .send }
        let quietAt = spell.lastDeletionAt + Self.quiet
        let judgeAt = spell.pieceStartedAt + Self.longest
        if now >= quietAt || now >= judgeAt { return .send }
        return .wait(until: min(quietAt, judgeAt))
    }

    /// The deletions judged `send` were committed: `files` of them.
    public mutating func sent(_ files: Int, now: Instant) {
        guard var spell = current else { return }
        spell.sent += files
        spell.pieceStartedAt = now
        current = now - spell.lastDeletionAt >= Self.quiet ? nil : spell
    }

    /// `send --deletes`: the user confirmed; the spell is over.
    public mutating func confirm() { current = nil }
}

extension Store {
    /// Of these changed paths, the ones that are gone from disk, and how many tracked files they
    /// take with them (a deleted directory counts its files). Costs the paths and their entries.
    public func deletions(among paths: Set<FilePath>) throws -> (paths: Set<FilePath>, files: Int) {
        let index = try liveIndex()
        let unapplied = loadUnapplied()  // a merge could not write these: their absence is no deletion
        var gone: Set<FilePath> = []
        var files: Set<FilePath> = []  // a deleted directory and its files arrive as separate paths
        for path in paths where !path.isEmpty {
            // The index first (memory): a path it does not track is no deletion, whatever the disk
            // says, and a start-up full of new files costs no stat here.
            var tracked = index.entries(under: path).map(\.path).filter { unapplied[$0] == nil }
            if index.entry(path) != nil, unapplied[path] == nil { tracked.append(path) }
            // Paths this device does not keep on disk, and deletions the rules hold anyway, are not
            // deletions this batch would commit.
            tracked.removeAll { !policy.materializes($0) || policy.holdReason($0, size: nil) != nil }
            guard !tracked.isEmpty else { continue }
            // Only what is surely gone: a path this user cannot look at is an obstacle, not a deletion.
            let absent: Bool
            do { absent = try FileStat.of(data.pushing(path)) == nil } catch { absent = false }
            guard absent else { continue }
            gone.insert(path)
            files.formUnion(tracked)
        }
        return (gone, files.count)
    }

    /// How many files the index tracks.
    public func trackedCount() throws -> Int {
        let index = try liveIndex()
        guard !policy.rules.isEmpty else { return index.count }
        return index.entries().filter { policy.materializes($0.path) }.count
    }
}
