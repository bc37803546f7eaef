import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Commit local changes and sync with the peers now.",
        discussion: """
            Goes through the running agent, or takes the store lock itself when none runs. Exits \
            non-zero naming every peer that failed.

            Example: syncagent sync --peer watch
            """
    )

    @OptionGroup var options: ConfigOption

    @Option(name: .long, help: "Only this peer.")
    var peer: String?
    @Flag(name: .long, help: "Print the result as JSON (see README, CLI reference).") var json = false

    func run() async throws {
        let config = try options.load()
        defer { OpenConflicts.remind(config) }
        let results = try await OneShot.sync(config: config, peer: peer)
        if json { return try JSONOutput.print(results, failed: results.contains { $0.error != nil }) }
        var failed: [String] = []
        for result in results {
            if let error = result.error {
                failed.append(result.peer)
                print("\(result.peer): FAILED: \(error)")
            } else {
                print("\(result.peer): ok")
            }
        }
        if results.isEmpty { print("no peers configured in \(config.file)") }
        if !failed.isEmpty {
            throw UserFacingError("sync failed for peer\(failed.count == 1 ? "" : "s") \(failed.joined(separator: ", "))")
        }
    }
}
