import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage

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
