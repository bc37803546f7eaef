// The phone app: the agent runs inside it (embedded). It sets the settings, logs workouts, and
// prints every settings change it sees; conflicts over the settings are left to the watch.
//
//   phone-app --config phone.toml [--theme T] [--units U] [--goal N] [--workout KIND:MINUTES] [--once]
//
// With --once it sets what it is given (committed, not synced) and exits; else it runs and syncs
// until SIGTERM.
import Foundation
import Logging
import SampleModels
import ServiceLifecycle
import SyncAgentKit

@main
struct PhoneApp {
    static func main() async {
        guard let configFile = option("--config") else {
            FileHandle.standardError.write(Data("usage: phone-app --config FILE [--theme T] [--units U] [--goal N] [--workout KIND:MINUTES] [--once]\n".utf8))
            exit(2)
        }
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        do {
            let agent = try await SyncAgent.embedding(configFile: configFile, logger: Logger(label: "phone-app"))
            let settings = agent.value("settings.json", as: Settings.self)
            if let next = (((try? settings.get()) ?? nil) ?? Settings()).applyingOptions() {
                let commit = try await settings.set(next)
                say("phone set settings: \(next) (commit \(commit.map { String($0.prefix(12)) } ?? "held"))")
            }
            if let workout = option("--workout") {
                let parts = workout.split(separator: ":")
                let entry = Workout(kind: String(parts[0]), minutes: parts.count > 1 ? Int(parts[1]) ?? 0 : 0, device: agent.config.device)
                let key = "workouts/\(Int(Date().timeIntervalSince1970 * 1000)).json"
                try await agent.value(key, as: Workout.self).set(entry)
                say("phone logged \(entry.kind) \(entry.minutes) min at \(key)")
            }
            if flag("--once") { return }
            Task {
                for await update in settings.updates() {
                    say("phone sees settings: \(update.value.map(\.description) ?? "none") (\(words(update.origin)))")
                }
            }
            let group = ServiceGroup(configuration: .init(services: [.init(service: agent)],
                                                          gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "phone-app")))
            try await group.run()
        } catch {
            FileHandle.standardError.write(Data("phone-app: \(error)\n".utf8))
            exit(1)
        }
    }
}
