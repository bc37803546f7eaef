import SystemPackage
import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether the agent runs, the HEAD commit, pending changes and peers.",
        discussion: """
            Works whether the agent runs or not; while it is stopped, `pending` counts what it will \
            commit when it starts. `storeBytes` is the store's size on disk; `progress` shows long \
            work (first scan, start-up commit, a large merge) as done/total.

            Example: syncagent status --json
            """
    )

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func run() async throws {
        let config = try options.load()
        let report = try StatusReporter.report(for: config)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            let saved = try? FileManager.default.attributesOfItem(atPath: PeerLedger.file(state: config.state).string)[.modificationDate] as? Date
            print(StatusReporter.text(report, peersSavedAt: saved))
        }
    }
}
