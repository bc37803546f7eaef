import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage
import FileSystem

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
        defer { OpenConflicts.remind(config) }
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
