import Agent
import ArgumentParser
import Foundation
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

    func validate() throws {
        let ways = [!paths.isEmpty, all, deletes].filter { $0 }.count
        guard ways == 1 else { throw ValidationError("say what to send: PATH..., --all or --deletes (one of them)") }
    }

    func run() async throws {
        let config = try options.load()
        let result: MessageResult
        if deletes {
            result = try await OneShot.sendDeletes(config: config)
        } else {
            result = try await OneShot.send(config: config, paths: paths.map { DataPath.bytes($0, data: config.data) }, all: all)
        }
        if let error = result.error { throw UserFacingError(error) }
        print(result.message)
        if result.message.hasPrefix("not sent") { throw UserFacingError("nothing was sent") }
    }
}

struct HeldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "held",
        abstract: "List the changes this device keeps back, with the reason.",
        discussion: """
            Reasons: manual ([[rule]] sync = "manual"), max_bytes (a file over the rule's max_bytes), \
            mass-delete (deletions waiting for `syncagent send --deletes`), local-change (an edit on a \
            receive-only device; `syncagent revert` undoes it).

            Example: syncagent held --json
            """
    )

    @OptionGroup var options: ConfigOption
    @Flag(name: .long, help: "Print a JSON array of {path, reason, bytes}.") var json = false

    func run() async throws {
        let config = try options.load()
        let list = try OneShot.held(config: config)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(list), as: UTF8.self))
            return
        }
        if list.isEmpty { print("nothing is held") }
        for entry in list {
            print("\(entry.reason)\t\(entry.bytes.map { "\($0) bytes" } ?? "deleted")\t\(entry.path)")
        }
    }
}

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

    func run() async throws {
        let config = try options.load()
        let result = try await OneShot.revert(config: config, paths: paths.map { DataPath.bytes($0, data: config.data) })
        if let error = result.error { throw UserFacingError(error) }
        print(result.message)
    }
}

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print the agent's events as JSON lines; --follow streams new ones.",
        discussion: """
            Each line: {"seq", "time", "type", ...}; seq grows by one per event and survives restarts. \
            --since SEQ prints the kept events after SEQ (a "gap" line first when some of them are no \
            longer kept: the last 10,000 are). --follow goes on printing every new event until \
            interrupted, waiting across agent restarts; without --since it starts with the next event.

            Example: syncagent events --since 41 --follow
            """
    )

    @OptionGroup var options: ConfigOption
    @Option(name: .long, help: ArgumentHelp("Print the events after this sequence number.", valueName: "seq")) var since: Int?
    @Flag(name: .long, help: "Keep printing new events until interrupted.") var follow = false

    func validate() throws {
        if let since, since < 0 { throw ValidationError("--since must be 0 or more (a sequence number from an earlier event)") }
    }

    func run() async throws {
        let config = try options.load()
        try OneShot.events(config: config, since: since, follow: follow) { line in
            // Straight to fd 1, one line at a time (a UI reading a pipe sees each event at once).
            let bytes = line + [UInt8(ascii: "\n")]
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }
}

/// A path argument as the bytes of a path relative to the data directory: an absolute path inside
/// it loses the data directory's prefix, "./" and a trailing '/' go.
enum DataPath {
    static func bytes(_ argument: String, data: FilePath) -> [UInt8] {
        var raw = rawArgument(argument)
        let prefix = data.bytes + [UInt8(ascii: "/")]
        if raw.starts(with: prefix) { raw.removeFirst(prefix.count) }
        while raw.starts(with: [UInt8(ascii: "."), UInt8(ascii: "/")]) { raw.removeFirst(2) }
        while raw.count > 1, raw.last == UInt8(ascii: "/") { raw.removeLast() }
        return raw
    }
}
