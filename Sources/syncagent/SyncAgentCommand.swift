import Agent
import ArgumentParser
import Glibc
import FoundationEssentials
import SyncCore

struct SyncAgentCommand: AsyncParsableCommand {
    /// The program (see main.swift). `run` catches SIGTERM and SIGINT before anything else happens
    /// (argument parsing included): `systemctl stop` right after `start` must end with exit status
    /// 0, not the signal's default.
    static func start() async {
        // The program's version, for `syncagent --version` alone: ArgumentParser's `version:` puts a
        // `--version` in every subcommand's help, and `show` has a `--version` of its own (a flag on
        // this command would take that one's argument).
        if CommandLine.arguments.dropFirst().first == "--version" {
            print("syncagent \(SyncAgentVersion.string)")
            return
        }
        let first = CommandLine.arguments.dropFirst().first(where: { !$0.hasPrefix("-") })
        if first == "run" { StopSignals.catchEarly() }
        if let first, CommandLine.arguments.dropFirst().first == first {
            // A mistyped subcommand: say which one was meant (ArgumentParser only says "unexpected").
            let names = configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
            if !names.contains(first) {
                let advice = Spelling.nearest(first, in: names).map { "; did you mean '\($0)'?" } ?? ""
                _ = try? FileDescriptor.standardError.writeAll("Error: unknown command '\(first)'\(advice)\nCommands: \(names.dropLast().joined(separator: ", ")). See 'syncagent --help'.\n".utf8)
                Glibc.exit(64)
            }
        }
        await main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "syncagent",
        abstract: "Keeps a data directory in sync through a git store: watches it with inotify and commits every change.",
        discussion: """
            Start with `syncagent init --device NAME --data DIR`, then `syncagent run`. The config \
            file is found at --config, else $SYNCAGENT_CONFIG, else ./syncagent.toml, else \
            $XDG_CONFIG_HOME/syncagent/config.toml.

            `syncagent --version` prints the program's version.

            Example: syncagent init --device phone --data ~/Notes && syncagent run
            """,
        subcommands: [RunCommand.self, InitCommand.self, StatusCommand.self, SyncCommand.self, SendCommand.self, HeldCommand.self, RevertCommand.self, EventsCommand.self, ConflictsCommand.self, ShowCommand.self, ResolveCommand.self, HistoryCommand.self, RestoreCommand.self, PauseCommand.self, ResumeCommand.self, WebCommand.self, KeyCommand.self, NotifyChangesCommand.self]
    )

}

enum SyncAgentVersion {
    static let string = "0.1.0"
}

/// `--config`, shared by every command.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The config file.", valueName: "file"))
    var config: String?

    func load() throws -> Config {
        let cwd = FilePath(FileManager.default.currentDirectoryPath)
        let env = ProcessInfo.processInfo.environment
        let file = try ConfigLocator.locate(explicit: config, environment: env, currentDirectory: cwd)
        let loaded = try Config.load(file: file, environment: env)
        for warning in loaded.warnings { _ = try? FileDescriptor.standardError.writeAll("warning: \(warning)\n".utf8) }
        return loaded
    }
}

/// Prints an error the user can act on and exits non-zero.
struct UserFacingError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

import SystemPackage

/// The exact bytes of a command-line argument: Swift's `CommandLine.arguments` repairs bytes that
/// are not UTF-8, so a path argument is matched back to its `argv` entry to get the name exactly.
func rawArgument(_ text: String) -> [UInt8] {
    for i in 1..<Int(CommandLine.argc) {
        guard let ptr = CommandLine.unsafeArgv[i] else { continue }
        let bytes = Array(UnsafeBufferPointer(start: UnsafeRawPointer(ptr).assumingMemoryBound(to: UInt8.self), count: strlen(ptr)))
        if String(decoding: bytes, as: UTF8.self) == text { return bytes }
    }
    return Array(text.utf8)
}
