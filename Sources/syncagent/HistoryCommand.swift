import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage
import FileSystem

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the versions of one path, newest first.",
        discussion: """
            Every commit of main that changed PATH: which device made the change, when, the blob, \
            and what happened (added, modified, deleted, renamed), following renames. Every \
            version listed can be put back with `syncagent restore`.

            Example: syncagent history notes/today.txt --limit 5
            """
    )

    @OptionGroup var options: ConfigOption
    @Argument(help: "A path relative to the data directory.") var path: String
    @Flag(name: .long, help: "Print a JSON array.") var json = false
    @Option(name: .long, help: ArgumentHelp("Show at most this many versions.", valueName: "n")) var limit: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be 1 or more") }
    }

    func run() async throws {
        let config = try options.load()
        let target = FilePath(bytes: DataPath.bytes(path, data: config.data))
        let entries = try OneShot.readStore(config: config).history(of: target, limit: limit)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(entries), as: UTF8.self))
            return
        }
        guard !entries.isEmpty else {
            throw UserFacingError("\(target.display) has no history in \(config.storePath): it was never committed on this device or its peers")
        }
        for e in entries {
            var what = e.change.rawValue
            if let from = e.from { what += " from \(from)" }
            if let to = e.to { what += " (moved to \(to))" }
            print("\(e.commit.prefix(12))  \(e.time)  \(e.device)  \(what)  \(e.blob.map { String($0.prefix(12)) } ?? "-")  \(e.path)")
        }
        print("\nput a version back: syncagent restore \(target.display) --at COMMIT (or --to FILE to only write it out)")
    }
}

struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put an earlier version of a file or directory back.",
        usage: """
            syncagent restore [--config <file>] <path> [--at <commit|time>]
                              [--to <file>]
            syncagent restore [--config <file>] --deletes
            """,
        discussion: """
            Without --at: the version before PATH's newest change (a deleted file or directory \
            comes back; an edit is undone). --at COMMIT takes PATH as that commit holds it; --at \
            TIME (ISO 8601) takes it as this device's main held it then. For a directory, every \
            file under it is put back and files added since are removed (their versions stay in \
            the store). The result is a new change that syncs to every device like any other. \
            With --to FILE, the version is only written to FILE (a new path) and nothing changes. \
            A file whose deletion was never committed (held by the deletion guard) comes back too.

            --deletes: every file the deletion spell under way or held took (see `syncagent \
            status`), back on disk as it was when the spell began, including those whose \
            deletions had already left this device; the hold then ends by itself.

            Example: syncagent restore notes/ --at 2026-11-20T10:00:00Z
            """
    )

    @OptionGroup var options: ConfigOption
    @Argument(help: "A file or directory, relative to the data directory.") var path: String?
    @Flag(name: .long, help: "Bring back every file of the deletion spell held or under way.") var deletes = false
    @Option(name: .long, help: ArgumentHelp("A commit (from `syncagent history`) or an ISO 8601 time.", valueName: "commit|time")) var at: String?
    @Option(name: .long, help: ArgumentHelp("Write the version to this new path instead.", valueName: "file")) var to: String?
    @Flag(name: .long, help: "Print the result as JSON (see README, CLI reference).") var json = false

    func validate() throws {
        if deletes {
            guard path == nil, at == nil, to == nil else {
                throw ValidationError("--deletes brings back what the deletion spell took and takes no path, --at or --to")
            }
        } else if path == nil {
            throw ValidationError("give a path to restore (relative to the data directory), or --deletes")
        }
    }

    func run() async throws {
        let config = try options.load()
        defer { OpenConflicts.remind(config) }
        guard let path else {
            let result = try await OneShot.restoreDeletes(config: config)
            if json { return try JSONOutput.print(result, failed: result.error != nil) }
            if let error = result.error { throw UserFacingError(error) }
            print(result.message)
            return
        }
        let target = DataPath.bytes(path, data: config.data)
        guard let to else {
            let result = try await OneShot.restore(config: config, path: target, at: at)
            if json { return try JSONOutput.print(result, failed: result.error != nil) }
            if let error = result.error { throw UserFacingError(error) }
            print(result.message)
            return
        }
        let store = try OneShot.readStore(config: config)
        let targetPath = FilePath(bytes: target)
        let point = try store.restorePoint(for: targetPath, at: at)
        let entries = try store.version(of: targetPath, at: point)
        guard !entries.isEmpty else {
            throw UserFacingError("\(targetPath.display) did not exist at \(point.why); `syncagent history \(targetPath.display)` lists its versions")
        }
        let dest = FilePath(bytes: rawArgument(to))
        let written = try store.export(entries, root: targetPath, to: dest)
        if json { return try JSONOutput.print(ExportResult(path: targetPath.display, at: point.why, to: dest.display, files: written)) }
        print("wrote \(targetPath.display) as of \(point.why) to \(dest.display) (\(written) file\(written == 1 ? "" : "s")); the data directory is unchanged")
    }
}
