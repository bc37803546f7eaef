internal import Git
internal import ObjectStorage
import SystemPackage
import FileSystem

/// The decisions of one merge over a set of paths the two sides changed differently, made from
/// what was read (each side's version, the device that made it, the records already in the
/// book) with no disk and no libgit2: the store reads, asks for the plan, then carries it out
/// (`Store.merge`). Table-tested in `MergePlanTests`, in the spirit of Mutagen's
/// `reconcile(path, ancestor, alpha, beta)`.
struct MergePlan: Sendable {
    /// One path, as read from the two sides.
    struct Input: Sendable {
        var path: FilePath
        var base: ConflictSide?
        var ours: SideVersion
        var theirs: SideVersion
        /// Our version was first seen in a join commit (authored by "syncagent", no device): two
        /// devices' versions may stand behind it, so one device on both sides is no proof.
        var oursFromJoin: Bool = false
        /// libgit2 reported no conflict here, but its result holds a directory where one side
        /// made or changed a file (`Store.filesLostToDirectories`).
        var lostToDirectory: Bool = false
    }

    enum Step: Sendable, Equatable {
        /// Both versions come from one device: its later edit is what it meant. No record.
        case later(FilePath, PathPlan.Take)
        /// A conflict: the path takes `plan.take` (a path lost to a directory keeps the directory:
        /// the dropped entry is removed instead), `plan.copies` go beside it, `plan.record` is kept.
        case conflict(FilePath, PathPlan, lostToDirectory: Bool)
        /// Nothing to do (a file lost to a directory where both are one device's doing).
        case none(FilePath)
    }

    /// One step per input, in input order.
    var steps: [Step] = []
    /// The book with every record of this plan in it.
    var book: [String: ConflictRecord]
    /// The records this plan opened or extended, in input order.
    var records: [ConflictRecord] = []
    /// Why a configured strategy declined, for the log.
    var notes: [String] = []

    /// - Parameters:
    ///   - book: the merged books' records, by id; a path's open record takes the new versions.
    ///   - content: the bytes of a blob, nil when this device does not have it (strategies).
    ///   - complete: runs what a plan asks to have run (the `command` strategy's program) and
    ///     returns the final plan; the identity where nothing may run.
    static func decide(_ inputs: [Input], book: [String: ConflictRecord], policy: ConflictPolicy, now: Int64,
                       content: (Oid) -> [UInt8]?, complete: (PathPlan) -> PathPlan = { $0 }) -> MergePlan {
        var out = MergePlan(book: book)
        for input in inputs {
            let (ours, theirs) = (input.ours, input.theirs)
            if input.lostToDirectory {
                guard ours.device != theirs.device || ours.isDirectory != theirs.isDirectory else {
                    out.steps.append(.none(input.path))
                    continue
                }
            } else if ours.device == theirs.device, !input.oursFromJoin {
                let later = (ours.time, ours.commit.hex) >= (theirs.time, theirs.commit.hex) ? ours : theirs
                out.steps.append(.later(input.path, later.isDirectory ? .directory : .entry(later.entry)))
                continue
            }
            let slot = Self.recordSlot(out.book, path: input.path, base: input.lostToDirectory ? nil : input.base)
            var plan = policy.plan(PathConflict(path: input.path, base: input.lostToDirectory ? nil : input.base, ours: ours, theirs: theirs),
                                   existing: slot.existing, generation: slot.generation, now: now, content: content)
            if plan.external != nil { plan = complete(plan) }
            if !input.lostToDirectory, let note = plan.note { out.notes.append(note) }
            out.book[plan.record.id] = plan.record
            out.records.append(plan.record)
            out.steps.append(.conflict(input.path, plan, lostToDirectory: input.lostToDirectory))
        }
        return out
    }

    /// Where a conflict at `path` goes in the book: the path's open record (its versions join it),
    /// or a new one named by how many records of the path were resolved before. (The common version
    /// is not part of the name: devices that merge through different pairs can see different
    /// common versions of one dispute, and it must stay one record.)
    static func recordSlot(_ book: [String: ConflictRecord], path: FilePath, base: ConflictSide?) -> (existing: ConflictRecord?, generation: Int) {
        let pathHex = ConflictRecord.hex(path.bytes)
        return (book.values.first { $0.pathBytes == pathHex && $0.status == .open },
                book.values.filter { $0.pathBytes == pathHex && $0.status == .resolved }.count)
    }
}
