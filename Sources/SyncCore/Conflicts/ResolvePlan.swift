internal import Git
internal import ObjectStorage
import SystemPackage
import FileSystem

/// What settling a record does, decided from the record, the choice and what was looked at (is
/// the path's directory now a file, was the path edited after the conflict) with no disk and no
/// libgit2: `Store.resolve` looks, asks, carries the steps out, commits and marks the record.
/// Table-tested in `ResolvePlanTests`.
struct ResolvePlan: Sendable, Equatable {
    enum Step: Sendable, Equatable {
        /// This version goes at the path (a deletion removes it; a directory version leaves the
        /// directory as it is). The copies a merge wrote beside the path go unless `keepCopies`.
        case place(ConflictRecord.Version, keepCopies: Bool)
        /// Every version but the winner's written beside the path (`both`).
        case writeCopies([PathPlan.Copy])
        /// These bytes go at the path as a regular file (`--with FILE`).
        case put([UInt8])
        /// The path goes.
        case remove
        /// The copies a merge wrote beside the path go (those still holding their version's bytes).
        case removeCopies
    }

    var steps: [Step]
    /// What the record's resolution is called.
    var strategy: String
    /// Whether the path itself is written (else only copies, or nothing, are).
    var touchesPath: Bool

    /// - Parameters:
    ///   - supersededBy: a directory above the path that is now a file or link (a later change):
    ///     writing any version back would destroy it, so the record closes as it is.
    ///   - editedSince: `main` holds at the path a version none of the record's (an edit committed
    ///     after the conflict): for `newest`, that edit is the newest and stays.
    static func decide(_ record: ConflictRecord, _ choice: ResolutionChoice, supersededBy: FilePath?,
                       editedSince: Bool) throws(ResolveError) -> ResolvePlan {
        if let above = supersededBy {
            return ResolvePlan(steps: [], strategy: "superseded (\(above.display) is now a file)", touchesPath: false)
        }
        let name = choice.strategyName
        switch choice {
        case .keep(let device):
            guard let v = record.versions.first(where: { $0.device == device }) else {
                let names = record.versions.map(\.device)
                let meant = Spelling.nearest(device, in: names + ["newest", "both"]).map { " (did you mean '\($0)'?)" } ?? ""
                throw ResolveError(message: "conflict \(record.id) has no version from '\(device)'\(meant); --keep takes one of: "
                                   + (names + ["newest", "both"]).joined(separator: ", "))
            }
            return ResolvePlan(steps: [.place(v, keepCopies: false)], strategy: name, touchesPath: true)
        case .newest:
            guard let winner = record.winningVersion ?? record.versions.first else {
                throw ResolveError(message: "conflict \(record.id) has no versions")
            }
            if editedSince { return ResolvePlan(steps: [.removeCopies], strategy: name, touchesPath: false) }
            return ResolvePlan(steps: [.place(winner, keepCopies: false)], strategy: name, touchesPath: true)
        case .both:
            // A file against a directory: the two stand as they are already.
            guard !record.versions.contains(where: \.isDirectory) else { return ResolvePlan(steps: [], strategy: name, touchesPath: true) }
            let winner = record.winningVersion
            var steps: [Step] = [.writeCopies(ConflictPolicy.bothCopies(of: record, at: record.filePath, winner: winner))]
            if let winner { steps.append(.place(winner, keepCopies: true)) }
            return ResolvePlan(steps: steps, strategy: name, touchesPath: true)
        case .with(let bytes):
            return ResolvePlan(steps: [.put(bytes), .removeCopies], strategy: name, touchesPath: true)
        case .delete:
            return ResolvePlan(steps: [.remove, .removeCopies], strategy: name, touchesPath: true)
        }
    }
}
