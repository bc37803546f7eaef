// The code of README.md's "Use it from Swift" section, exactly as there: it is built with the
// project, and e2e/test_readme.sh checks that the README still holds these very lines.
import SyncAgentKit

struct Settings: Codable, Sendable { var theme: String; var goal: Int }

let agent = try await SyncAgent.embedding(configFile: "phone.toml",
                                          policies: [KeyPolicy(.prefix("photos/"), .automatic(maxBytes: 10_000_000))])
let settings = agent.value("settings.json", as: Settings.self)   // a key: a path in the data directory
try await settings.set(Settings(theme: "dark", goal: 30))         // written atomically; returns once committed
Task {
    for await update in settings.updates() {                      // the current value first, then every change
        print(update.value as Any, update.origin)                  // .thisDevice, .peer("watch"), .resolution(by:)...
    }
}
agent.onConflict(.key("settings.json"), as: Settings.self) { conflict in
    // conflict.base, conflict.versions (each device's value, or its raw bytes when it is no Settings)
    .value(Settings(theme: conflict.versions.last?.value?.theme ?? "light", goal: 30))  // or .keep(device:), .keepBoth, .delete, .decideLater
}
try await agent.run()                                              // or put `agent` in your ServiceGroup
