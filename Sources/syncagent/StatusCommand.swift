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
            work (first scan, start-up commit, a large commit or merge) as done/total, and `tasks` \
            every piece of it in hand, transfers with each peer included (files or objects, \
            bytes, rate, time left). --watch keeps showing it.

            Example: syncagent status --json
            """
    )

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    @Flag(name: .long, help: "Keep showing it, once a second, until interrupted: on a terminal the whole status redrawn with a bar per task in hand; piped, a line per task as it moves (with --json, one object a second).")
    var watch = false

    func run() async throws {
        let config = try options.load()
        if watch { return try await watchStatus(config) }
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

    /// `status --watch`: the status once a second until interrupted.
    private func watchStatus(_ config: Config) async throws {
        let terminal = isatty(STDOUT_FILENO) == 1
        let view = ProgressView(terminal: false, output: .standardOutput)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        while true {
            let report = try StatusReporter.report(for: config)
            if json {
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else if terminal {
                let saved = try? FileManager.default.attributesOfItem(atPath: PeerLedger.file(state: config.state).string)[.modificationDate] as? Date
                print("\u{1B}[H\u{1B}[2J" + StatusReporter.text(report, peersSavedAt: saved) + "\n\n(every second; Ctrl-C stops)")
            } else {
                view.show(report.tasks)
            }
            fflush(nil)  // every stream: stdout is piped to a reader that waits for the line
            try await Task.sleep(for: .seconds(1))
        }
    }
}
