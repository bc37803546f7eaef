import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage
import FileSystem

struct RevertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revert",
        abstract: "On a receive-only device, put the store's version back over local edits.",
        discussion: """
            Every locally edited path, or only PATH... (relative to the data directory; a directory \
            reverts everything under it). The local bytes are kept in the store \
            (refs/syncagent/kept), never dropped; the output says how to read them.

            Example: syncagent revert settings.json
            """
    )

    @OptionGroup var options: ConfigOption
    @Argument(help: "Paths to revert, relative to the data directory (default: all).") var paths: [String] = []
    @Flag(name: .long, help: "Print the result as JSON (see README, CLI reference).") var json = false

    func run() async throws {
        let config = try options.load()
        defer { OpenConflicts.remind(config) }
        let result = try await OneShot.revert(config: config, paths: paths.map { DataPath.bytes($0, data: config.data) })
        if json { return try JSONOutput.print(result, failed: result.error != nil) }
        if let error = result.error { throw UserFacingError(error) }
        print(result.message)
    }
}
