// The watch app: a client of the `syncagent run` on the watch. It prints every settings change
// and every workout it sees, and decides settings conflicts: field by field (the default), or
// with a resolver that throws, or not at all (--resolver merge|throws|later).
//
//   watch-app --config watch.toml [--theme T] [--units U] [--goal N] [--resolver R] [--slow] [--status] [--once]
//
// --slow makes the settings observer take two seconds per update; --status prints where
// settings.json stands (synced, pending, held, conflicted) and, per peer, whether it has this version. With --once it sets what it is
// given and exits; else it runs until SIGTERM.
import Foundation
import Logging
import SampleModels
import ServiceLifecycle
import SyncAgentKit

struct ResolverFailed: Error, CustomStringConvertible {
    var description: String { "the watch's resolver gave up on purpose" }
}

@main
struct WatchApp {
    static func main() async {
        guard let configFile = option("--config") else {
            FileHandle.standardError.write(Data("usage: watch-app --config FILE [--theme T] [--units U] [--goal N] [--resolver merge|throws|later] [--slow] [--once]\n".utf8))
            exit(2)
        }
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        do {
            let agent = try SyncAgent.client(configFile: configFile, logger: Logger(label: "watch-app"))
            let settings = agent.value("settings.json", as: Settings.self)
            if let next = (((try? settings.get()) ?? nil) ?? Settings()).applyingOptions() {
                let commit = try await settings.set(next)
                say("watch set settings: \(next) (commit \(commit.map { String($0.prefix(12)) } ?? "held"))")
            }
            if flag("--status") {
                let status = try await settings.status()
                let peers = status.peers.sorted { $0.key < $1.key }.map { name, peer in
                    "\(name): \(peer.hasThisVersion.map { $0 ? "has this version" : "has another version" } ?? "unknown"), last sync \(peer.lastSync ?? "never")"
                }
                say("watch status of settings.json: \(status.state); \(peers.joined(separator: "; "))")
            }
            if flag("--once") { return }
            let mode = option("--resolver") ?? "merge"
            agent.onConflict(.key("settings.json"), as: Settings.self) { conflict in
                let versions = conflict.versions.map { v in
                    "\(v.device): \(v.value.map(\.description) ?? (v.isDeleted ? "deleted" : "undecodable \(v.raw.map { String(decoding: $0, as: UTF8.self) } ?? "")"))"
                }
                say("watch resolver got \(conflict.id): base \(conflict.base?.value.map(\.description) ?? "none"); \(versions.joined(separator: "; "))")
                switch mode {
                case "throws": throw ResolverFailed()
                case "later": return .decideLater
                default:
                    let answer = Settings.merge(conflict)
                    if case .value(let merged) = answer { say("watch resolver merged: \(merged)") }
                    return answer
                }
            }
            let slow = flag("--slow")
            Task {
                for await update in settings.updates() {
                    if slow { try? await Task.sleep(for: .seconds(2)) }
                    let what = update.value.map(\.description)
                        ?? (update.isDeleted ? "none" : "undecodable (\(update.raw?.count ?? 0) bytes: \(update.raw.map { String(decoding: $0, as: UTF8.self) } ?? ""))")
                    say("watch sees settings: \(what) (\(words(update.origin)))")
                }
            }
            Task {
                for await change in agent.updates(under: "workouts/", as: Workout.self) {
                    guard let workout = change.update.value else { continue }
                    say("watch sees workout \(change.key): \(workout.kind) \(workout.minutes) min from \(workout.device)")
                }
            }
            let group = ServiceGroup(configuration: .init(services: [.init(service: agent)],
                                                          gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "watch-app")))
            try await group.run()
        } catch {
            FileHandle.standardError.write(Data("watch-app: \(error)\n".utf8))
            exit(1)
        }
    }
}
