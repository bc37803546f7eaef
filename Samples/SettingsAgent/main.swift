// A program that embeds the syncagent with its own conflict resolver: settings files (*.settings.json)
// are merged field by field; a field both devices changed takes the newer device's value.
//
//   settings-agent --config phone.toml
//
// Everything else behaves like `syncagent run`. It also listens to the agent's events, as an app
// updating its UI would: "settings reloaded: PATH" on stdout each time a peer's change to a settings
// file lands in the data directory.
import Agent
import Foundation
import Logging
import ServiceLifecycle
import SyncCore

struct SettingsResolver: ConflictResolver {
    var name: String { "settings-fields" }

    func resolve(_ record: ConflictRecord, base: [UInt8]?, versions: [String: [UInt8]?]) -> ResolverDecision? {
        guard record.path.hasSuffix(".settings.json"), record.versions.count == 2 else { return nil }
        func object(_ bytes: [UInt8]?) -> [String: Any]? {
            guard let bytes else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
        }
        // Oldest first, so the newer device's fields are applied last (tie: the name sorting last wins).
        let ordered = record.versions.sorted { ($0.time, $0.device) < ($1.time, $1.device) }
        let baseObject = object(base) ?? [:]
        var merged = baseObject
        for version in ordered {
            guard let fields = object(versions[version.device] ?? nil) else { return nil }
            for (key, value) in fields where !(baseObject[key].map { NSDictionary(dictionary: ["v": $0]).isEqual(to: ["v": value]) } ?? false) {
                merged[key] = value
            }
            for key in baseObject.keys where fields[key] == nil { merged[key] = nil }
        }
        guard let data = try? JSONSerialization.data(withJSONObject: merged, options: [.prettyPrinted, .sortedKeys]) else { return nil }
        return .bytes(Array(data) + [UInt8(ascii: "\n")])
    }
}

@main
struct SettingsAgent {
    static func main() async {
        let args = CommandLine.arguments
        guard let i = args.firstIndex(of: "--config"), i + 1 < args.count else {
            FileHandle.standardError.write(Data("usage: settings-agent --config FILE\n".utf8))
            exit(2)
        }
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let logger = Logger(label: "settings-agent")
        do {
            let config = try Config.load(file: FilePath(args[i + 1]))
            let agent = try await AgentService.prepare(config: config, logger: logger, resolvers: [SettingsResolver()])
            let events = agent.events()
            Task {
                for await event in events {
                    guard case .received(let peer, _, let paths, _) = event.kind else { continue }
                    for path in paths where path.hasSuffix(".settings.json") {
                        let line = "settings reloaded: \(path) (from \(peer), event \(event.seq ?? 0))\n"
                        FileHandle.standardOutput.write(Data(line.utf8))
                    }
                }
            }
            let group = ServiceGroup(configuration: .init(services: [.init(service: agent)],
                                                          gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        } catch {
            FileHandle.standardError.write(Data("settings-agent: \(error)\n".utf8))
            exit(1)
        }
    }
}

import SystemPackage
