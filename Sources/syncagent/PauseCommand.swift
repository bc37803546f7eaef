import Agent
import ArgumentParser
import FoundationEssentials
import SyncCore

/// `syncagent pause [PEER]` and `syncagent resume [PEER]`.
enum PauseCommands {
    static func run(options: ConfigOption, peer: String?, paused: Bool, json: Bool) async throws {
        let config = try options.load()
        defer { OpenConflicts.remind(config) }
        let result = try await OneShot.pause(config: config, peer: peer, paused: paused)
        if json { return try JSONOutput.print(result, failed: result.error != nil) }
        if let error = result.error { throw UserFacingError(error) }
        print(result.message)
    }
}

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Stop syncing with a peer (or every peer) until `syncagent resume`.",
        discussion: """
            Nothing is fetched from, merged from or pushed to a paused peer; local changes are \
            still committed, and go out when it is resumed. The pause is kept in the state \
            directory (a file named `paused`): it lasts across restarts of the agent and of the \
            machine. A round with the peer already under way finishes first. `status` shows \
            paused peers; `sync` with one fails, saying it is paused. Works whether or not the \
            agent runs.

            Example: syncagent pause watch
            """
    )

    @OptionGroup var options: ConfigOption
    @Argument(help: "The peer to pause (as named in the config); every peer when left out.") var peer: String?
    @Flag(name: .long, help: "Print the answer as JSON: {\"paused\": [names], \"message\", \"error\", \"errorCode\"}.") var json = false

    func run() async throws {
        try await PauseCommands.run(options: options, peer: peer, paused: true, json: json)
    }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Sync with a paused peer (or every peer) again.",
        discussion: """
            The peer is synced at once: what either side changed meanwhile is exchanged. \
            Resuming one peer after `syncagent pause` (every peer) leaves the others paused.

            Example: syncagent resume watch
            """
    )

    @OptionGroup var options: ConfigOption
    @Argument(help: "The peer to resume; every peer when left out.") var peer: String?
    @Flag(name: .long, help: "Print the answer as JSON: {\"paused\": [names still paused], \"message\", \"error\", \"errorCode\"}.") var json = false

    func run() async throws {
        try await PauseCommands.run(options: options, peer: peer, paused: false, json: json)
    }
}
