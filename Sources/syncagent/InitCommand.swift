import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Write a commented config file and create the store.",
        usage: """
            syncagent init --device <device> --data <dir> [--state <dir>]
                           [--peer <name=url> ...] [--hub <name=url>]
                           [--config <file>]
            """,
        discussion: """
            Creates the data directory if it is missing. Never overwrites an existing config file. \
            The file it writes documents every key.

            Examples:
              syncagent init --device phone --data ~/Notes \\
                  --peer watch=/home/me/.local/state/syncagent/watch/store.git
              syncagent init --device phone --data ~/Notes \\
                  --hub family=ssh://me@nas/srv/family.git
            """
    )

    @Option(name: .long, help: "This device's name: letters, digits, '-' and '_'.")
    var device: String

    @Option(name: .long, help: ArgumentHelp("The directory to keep in sync.", valueName: "dir"))
    var data: String

    @Option(name: .long, help: ArgumentHelp("Where the store, lock and socket live (default: $XDG_STATE_HOME/syncagent/<device>).", valueName: "dir"))
    var state: String?

    @Option(name: .long, parsing: .singleValue,
            help: ArgumentHelp("A peer, as NAME=URL (a path, file://, ssh://, git:// or http(s):// URL). Repeatable.", valueName: "name=url"))
    var peer: [String] = []

    @Option(name: .long,
            help: ArgumentHelp("A hub (a bare git repository many devices share), as NAME=URL; create it first with git init --bare.", valueName: "name=url"))
    var hub: String?

    @Option(name: .long, help: ArgumentHelp("Where to write the config file.", valueName: "file"))
    var config: String?
    @Flag(name: .long, help: "Print the result as JSON (see README, CLI reference).") var json = false

    func validate() throws {
        for p in peer where !p.contains("=") {
            throw ValidationError("--peer '\(p)' must look like NAME=URL, e.g. --peer watch=/srv/watch/state/store.git")
        }
        if let hub, !hub.contains("=") {
            throw ValidationError("--hub '\(hub)' must look like NAME=URL, e.g. --hub family=ssh://me@nas/srv/family.git")
        }
    }

    func run() async throws {
        let cwd = FilePath(FileManager.default.currentDirectoryPath)
        let env = ProcessInfo.processInfo.environment
        let file = ConfigLocator.target(explicit: config, environment: env, currentDirectory: cwd)
        guard !FileManager.default.fileExists(atPath: file.string) else {
            throw UserFacingError("\(file) already exists; edit it, or remove it first to start over")
        }
        let absoluteData = cwd.pushing(FilePath(data)).lexicallyNormalized()
        let absoluteState = state.map { cwd.pushing(FilePath($0)).lexicallyNormalized().string }
        func split(_ p: String, hub: Bool) -> (name: String, url: String, hub: Bool) {
            let parts = p.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), String(parts[1]), hub)
        }
        let peers = peer.map { split($0, hub: false) } + (hub.map { [split($0, hub: true)] } ?? [])
        let text = ConfigTemplate.render(device: device, data: absoluteData.string, state: absoluteState, peers: peers)
        // Validate by parsing what we are about to write: the same rules as `run`.
        let parsed: Config
        do {
            parsed = try Config.parse(text, file: file, environment: env)
        } catch let error as ConfigError {
            // The file is not written: name the option, not a line of it.
            let option = error.key.map { key in
                ["device": "--device", "data": "--data", "state": "--state", "peer.name": "--peer/--hub NAME", "peer.url": "--peer/--hub URL"][key] ?? key
            } ?? "the options"
            throw UserFacingError("\(option): \(error.message). Nothing was written.")
        }
        try FileManager.default.createDirectory(atPath: parsed.data.string, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: parsed.state.string, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        _ = try Store.openOrCreate(device: parsed.device, data: parsed.data, gitDir: parsed.storePath)
        try FileManager.default.createDirectory(atPath: file.removingLastComponent().string, withIntermediateDirectories: true)
        try text.write(toFile: file.string, atomically: true, encoding: .utf8)
        if json {
            return try JSONOutput.print(InitResult(config: file.string, device: parsed.device, data: parsed.data.string,
                                                   state: parsed.state.string, store: parsed.storePath.string,
                                                   peers: parsed.peers.map(\.name)))
        }
        print("""
            wrote \(file)
            store \(parsed.storePath)
            data  \(parsed.data)
            next: syncagent run --config \(file)
            """)
    }
}
