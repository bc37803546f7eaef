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
            non-zero naming every peer that failed. Long work (a transfer, a merge of 100 paths or \
            more, a start-up commit) is shown on stderr while it runs: a live bar on a terminal, \
            a plain line a second when piped (none with --json unless stderr is a terminal).

            Example: syncagent sync --peer watch
            """
    )

    @OptionGroup var options: ConfigOption

    @Option(name: .long, help: "Only this peer.")
    var peer: String?
    @Flag(name: .long, help: "Print the result as JSON (see README, CLI reference).") var json = false
    @Flag(name: .long, help: "Show no progress on stderr.") var noProgress = false

    func run() async throws {
        let config = try options.load()
        defer { OpenConflicts.remind(config) }
        let terminal = isatty(STDERR_FILENO) == 1
        let view = noProgress || (json && !terminal) ? nil : ProgressView(terminal: terminal)
        var show: (@Sendable ([ProgressReport]) -> Void)?
        if let view { show = { tasks in view.show(tasks) } }
        let results = try await OneShot.sync(config: config, peer: peer, progress: show)
        view?.end()
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
