import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage
import FileSystem

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Share changes this device holds back.",
        usage: "syncagent send [--config <file>] (<path>... | --all | --deletes) [--json]",
        discussion: """
            PATH... (relative to the data directory; a directory sends everything held under it) or \
            --all commits the changes held by a [[rule]] (sync = "manual", or a file over max_bytes) \
            as they are on disk now, and shares them. --deletes confirms deletions the agent held \
            because they looked like an accident (the data directory emptied, or more than [safety] \
            max_delete_percent of the files deleted at once). `syncagent held` lists what is held.

            Example: syncagent send photos/beach.jpg
            """
    )

    @OptionGroup var options: ConfigOption
    @Argument(help: "Held paths to send, relative to the data directory.") var paths: [String] = []
    @Flag(name: .long, help: "Send every change held by a rule.") var all = false
    @Flag(name: .long, help: "Commit and share the held deletions.") var deletes = false
    @Flag(name: .long, help: "Print the result as JSON (see README, CLI reference).") var json = false

    func validate() throws {
        let ways = [!paths.isEmpty, all, deletes].filter { $0 }.count
        guard ways == 1 else { throw ValidationError("say what to send: PATH..., --all or --deletes (one of them)") }
    }

    func run() async throws {
        let config = try options.load()
        defer { OpenConflicts.remind(config) }
        let result: MessageResult
        if deletes {
            result = try await OneShot.sendDeletes(config: config)
        } else {
            result = try await OneShot.send(config: config, paths: paths.map { DataPath.bytes($0, data: config.data) }, all: all)
        }
        if json { return try JSONOutput.print(result, failed: result.error != nil) }
        if let error = result.error { throw UserFacingError(error) }
        print(result.message)
    }
}
