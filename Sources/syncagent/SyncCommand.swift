import Agent
import ArgumentParser
import SyncCore

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Commit local changes and sync with the peers now.",
        discussion: "Goes through the running agent, or takes the store lock itself when none runs. Exits non-zero naming every peer that failed."
    )

    @OptionGroup var options: ConfigOption

    @Option(name: .long, help: "Only this peer.")
    var peer: String?

    func run() async throws {
        let config = try options.load()
        let results = try await OneShot.sync(config: config, peer: peer)
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

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Share changes this device holds back.",
        discussion: """
            --deletes confirms deletions the agent held because they looked like an accident (the data
            directory emptied, or more than [safety] max_delete_percent of the files deleted at once).
            Example: syncagent send --deletes
            """
    )

    @OptionGroup var options: ConfigOption
    @Flag(name: .long, help: "Commit and share the held deletions.") var deletes = false

    func validate() throws {
        guard deletes else { throw ValidationError("say what to send: --deletes (per-path sending comes with [[rule]] sync = \"manual\")") }
    }

    func run() async throws {
        let config = try options.load()
        let result = try await OneShot.sendDeletes(config: config)
        if let error = result.error { throw UserFacingError(error) }
        print(result.message)
        if result.message.hasPrefix("not sent") { throw UserFacingError("nothing was sent") }
    }
}
