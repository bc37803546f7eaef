import Agent
import ArgumentParser
import Logging
import ServiceLifecycle
import SyncCore

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the agent in the foreground (systemd-friendly).",
        discussion: """
            Commits what changed while it was stopped, then every change as it happens. SIGTERM or \
            SIGINT stops it after the batch in hand is committed (exit status 0). Logs go to stderr. \
            Under systemd (Type=notify) it says READY=1 once its watches are in place, keeps STATUS= \
            up to date and answers WatchdogSec.

            Example:
              syncagent run --config ~/.config/syncagent/config.toml --log-level notice
            """
    )

    @OptionGroup var options: ConfigOption

    @Option(name: .long, help: ArgumentHelp("How much to log.", valueName: "level"))
    var logLevel: Logger.Level = .info

    func run() async throws {
        StopSignals.catchEarly()  // a stop during start-up still ends with exit status 0
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "syncagent")
        let config = try options.load()
        let agent = try await AgentService.prepare(config: config, logger: logger)
        // SIGTERM and SIGINT stay with StopSignals for the agent's whole life: it asks the group
        // to shut down gracefully.
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: agent)],
            gracefulShutdownSignals: [],
            logger: logger))
        let forwarding = Task { await StopSignals.forward(to: group) }
        do {
            try await group.run()
        } catch {
            forwarding.cancel()
            throw error
        }
        forwarding.cancel()
        if await forwarding.value { logger.notice("a stop signal came while starting; stopped cleanly") }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
