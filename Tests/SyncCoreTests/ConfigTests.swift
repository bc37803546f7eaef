import Foundation
import SystemPackage
import Testing

@testable import SyncCore
import TestSupport

private let file = FilePath("/home/u/syncagent.toml")
private let environment = ["HOME": "/home/u"]

/// The `ConfigError` that parsing `text` throws; records an issue when it parses.
private func parseError(_ text: String, environment: [String: String] = environment) -> ConfigError? {
    #expect(throws: ConfigError.self) { try Config.parse(text, file: file, environment: environment) }
}

/// A fresh, empty directory that is removed when `body` returns.
private func withTemporaryDirectory<T>(_ body: (FilePath) throws -> T) throws -> T {
    let dir = try TempDirectory("configtests")
    return try withExtendedLifetime(dir) { try body(dir.root) }
}

private func write(_ text: String, to path: FilePath) throws {
    try FileManager.default.createDirectory(
        atPath: path.removingLastComponent().string, withIntermediateDirectories: true)
    try text.write(toFile: path.string, atomically: true, encoding: .utf8)
}

@Suite struct ConfigParsingTests {
    @Test func fullConfigParsesToItsValues() throws {
        let config = try Config.parse(
            """
            device = "phone"
            data = "/srv/phone/data"
            state = "/srv/phone/state"

            [watch]
            debounce_ms = 50
            max_delay_ms = 1000

            [[peer]]
            name = "watch"
            url = "/srv/watch/state/store.git"
            poll_seconds = 10

            [[peer]]
            name = "laptop"
            url = "ssh://laptop.local/srv/laptop/state/store.git"

            [[resolver]]
            path = "*.json"
            strategy = "json"

            [[resolver]]
            path = "notes/**"
            strategy = "keep:watch"

            [[resolver]]
            path = "*.ods"
            strategy = "command"
            command = ["merge-tool", "{base}", "{ours}", "{theirs}", "{out}"]
            """, file: file, environment: environment)
        #expect(
            config
                == Config(
                    file: file, device: "phone", data: "/srv/phone/data", state: "/srv/phone/state",
                    watch: WatchSettings(debounceMs: 50, maxDelayMs: 1000),
                    peers: [
                        PeerConfig(name: "watch", url: "/srv/watch/state/store.git", pollSeconds: 10),
                        PeerConfig(name: "laptop", url: "ssh://laptop.local/srv/laptop/state/store.git"),
                    ],
                    resolvers: [
                        ResolverRule(path: "*.json", strategy: .json),
                        ResolverRule(path: "notes/**", strategy: .keep(device: "watch")),
                        ResolverRule(
                            path: "*.ods", strategy: .command,
                            command: ["merge-tool", "{base}", "{ours}", "{theirs}", "{out}"]),
                    ]))
        #expect(config.storePath == "/srv/phone/state/store.git")
        #expect(config.lockPath == "/srv/phone/state/agent.lock")
        #expect(config.socketPath == "/srv/phone/state/agent.sock")
    }

    @Test func minimalConfigTakesTheDefaults() throws {
        let config = try Config.parse(
            "device = \"phone\"\ndata = \"/d\"\n", file: file,
            environment: ["HOME": "/home/u", "XDG_STATE_HOME": "/xdg/state"])
        #expect(config.state == "/xdg/state/syncagent/phone")
        #expect(config.watch == WatchSettings(debounceMs: 200, maxDelayMs: 2000))
        #expect(config.peers.isEmpty)
        #expect(config.resolvers.isEmpty)
    }

    @Test func defaultStateFallsBackToHomeWhenXDGStateHomeIsUnsetOrRelative() throws {
        for environment in [["HOME": "/home/u"], ["HOME": "/home/u", "XDG_STATE_HOME": "relative/state"]] {
            let config = try Config.parse("device = \"phone\"\ndata = \"/d\"", file: file, environment: environment)
            #expect(config.state == "/home/u/.local/state/syncagent/phone")
        }
        let error = parseError("device = \"phone\"\ndata = \"/d\"", environment: [:])
        #expect(error?.key == "state")
        #expect(error?.message.contains("neither XDG_STATE_HOME nor HOME is set") == true)
    }

    @Test func relativePathsAreTakenFromTheConfigFileAndTildeFromHome() throws {
        let config = try Config.parse(
            "device = \"phone\"\ndata = \"./data/../notes/\"\nstate = \"../state\"",
            file: "/etc/syncagent/config.toml", environment: environment)
        #expect(config.data == "/etc/syncagent/notes")
        #expect(config.state == "/etc/state")

        let home = try Config.parse(
            "device = \"phone\"\ndata = \"~/Sync\"\nstate = \"~/.sync-state\"", file: file, environment: environment)
        #expect(home.data == "/home/u/Sync")
        #expect(home.state == "/home/u/.sync-state")
    }

    @Test func storeMemoryKeysHaveSmallDefaultsAndCanBeSet() throws {
        let base = "device = \"watch\"\ndata = \"/srv/w/data\"\nstate = \"/srv/w/state\"\n"
        let defaults = try Config.parse(base, file: file, environment: environment)
        #expect(defaults.memory == StoreMemorySettings(cacheMB: 2, packWindowMB: 4))
        let set = try Config.parse(base + "[store]\ncache_mb = 0\npack_window_mb = 6\n", file: file, environment: environment)
        #expect(set.memory == StoreMemorySettings(cacheMB: 0, packWindowMB: 6))
        let error = parseError(base + "[store]\ncache_mb = -1\n")
        #expect(error?.description.contains("cache_mb") == true)
        #expect(error?.description.contains(":5:") == true)
        let unknown = parseError(base + "[store]\ncache = 2\n")
        #expect(unknown?.description.contains("cache_mb") == true)
    }

    @Test func peerPollSecondsDefaultsToThirty() throws {
        let config = try Config.parse(
            "device = \"a\"\ndata = \"/d\"\n[[peer]]\nname = \"b\"\nurl = \"git://b/store.git\"",
            file: file, environment: environment)
        #expect(config.peers == [PeerConfig(name: "b", url: "git://b/store.git", pollSeconds: 30)])
    }

    @Test func hubPeerKeys() throws {
        let config = try Config.parse(
            "device = \"a\"\ndata = \"/d\"\n[[peer]]\nname = \"hub\"\nurl = \"ssh://me@nas/srv/f.git\"\nhub = true\n"
                + "identity = \"keys/id\"\nknown_hosts = \"/etc/kh\"\ntimeout_seconds = 5\n"
                + "[[peer]]\nname = \"w\"\nurl = \"/w\"\ncredentials = \"~/c\"\n",
            file: file, environment: environment)
        let hub = config.peers[0]
        #expect(hub.hub && !config.peers[1].hub)
        #expect(hub.identity == file.removingLastComponent().appending("keys/id"))
        #expect(hub.knownHosts == "/etc/kh")
        #expect(hub.timeoutSeconds == 5 && config.peers[1].timeoutSeconds == 20)
        #expect(config.peers[1].credentials?.string.hasSuffix("/c") == true)
        let two = parseError("device = \"p\"\ndata = \"/d\"\n[[peer]]\nname = \"h\"\nurl = \"u\"\nhub = true\n"
                             + "[[peer]]\nname = \"g\"\nurl = \"v\"\nhub = true")
        #expect(two?.key == "peer.hub")
        #expect(two?.line == 10)
        let notBool = parseError("device = \"p\"\ndata = \"/d\"\n[[peer]]\nname = \"h\"\nurl = \"u\"\nhub = \"yes\"")
        #expect(notBool?.message.contains("true or false") == true)
    }

    @Test(arguments: [
        ("manual", ResolverStrategy.manual), ("newest", .newest), ("keep:my-phone_2", .keep(device: "my-phone_2")),
        ("both", .both), ("union", .union), ("json", .json),
    ])
    func everyStrategyParses(text: String, strategy: ResolverStrategy) throws {
        let config = try Config.parse(
            "device = \"a\"\ndata = \"/d\"\n[[resolver]]\npath = \"*\"\nstrategy = \"\(text)\"",
            file: file, environment: environment)
        #expect(config.resolvers == [ResolverRule(path: "*", strategy: strategy)])
        #expect(strategy.description == text)
    }
}

@Suite struct ConfigErrorTests {
    @Test func descriptionHasFileLineKeyAndMessage() {
        let full = ConfigError(file: file, line: 7, key: "watch.debounce_ms", message: "bad")
        #expect(full.description == "/home/u/syncagent.toml:7: watch.debounce_ms: bad")
        #expect(ConfigError(file: file, message: "bad").description == "/home/u/syncagent.toml: bad")
    }

    @Test func tomlSyntaxErrorsGiveTheLine() {
        let error = parseError("device = \"phone\"\ndata = \"/d\"\n\n[watch\ndebounce_ms = 1")
        #expect(error?.file == file)
        #expect(error?.line == 4)
        #expect(error?.message.hasPrefix("invalid TOML") == true)
    }

    @Test func wrongTypeNamesTheKeyTheLineAndTheExpectedType() {
        let error = parseError("# a comment\ndevice = 5\ndata = \"/d\"")
        #expect(error?.line == 2)
        #expect(error?.key == "device")
        #expect(error?.message.contains("must be a string") == true)
        #expect(error?.message.hasSuffix("got 5") == true)
    }

    @Test func outOfRangeIntegerSaysTheRange() {
        let error = parseError(
            "device = \"phone\"\ndata = \"/d\"\n\n[watch]\nmax_delay_ms = 3000\n\n  \"debounce_ms\" = \"fast\"\n")
        #expect(
            error?.description
                == "/home/u/syncagent.toml:7: watch.debounce_ms: must be a whole number of milliseconds between 0 and 600000, got \"fast\""
        )
        #expect(parseError("device = \"p\"\ndata = \"/d\"\n[watch]\ndebounce_ms = 600001")?.line == 4)
    }

    @Test func maxDelayMustBeAtLeastDebounce() {
        let below = parseError("device = \"p\"\ndata = \"/d\"\n[watch]\ndebounce_ms = 500\nmax_delay_ms = 100")
        #expect(below?.line == 5)
        #expect(below?.key == "watch.max_delay_ms")
        #expect(below?.message == "must be a whole number of milliseconds between debounce_ms (500) and 3600000, got 100")

        let defaulted = parseError("device = \"p\"\ndata = \"/d\"\n[watch]\ndebounce_ms = 5000")
        #expect(defaulted?.line == 3)
        #expect(defaulted?.key == "watch.max_delay_ms")
        #expect(defaulted?.message.contains("defaults to 2000") == true)

        #expect(parseError("device = \"p\"\ndata = \"/d\"\n[watch]\nmax_delay_ms = 3600001")?.line == 4)
    }

    @Test func missingRequiredKeysPointAtTheirTable() {
        let device = parseError("data = \"/d\"")
        #expect(
            device?.description
                == "/home/u/syncagent.toml: missing required key 'device' (a string of letters, digits, '-' and '_', e.g. device = \"phone\")"
        )
        let url = parseError("device = \"p\"\ndata = \"/d\"\n[[peer]]\nname = \"a\"\nurl = \"u\"\n\n[[peer]]\nname = \"b\"\n")
        #expect(url?.line == 7)
        #expect(url?.message.hasPrefix("missing required key 'url' in [[peer]]") == true)
    }

    /// Issue 46: `device =` written after a `[[peer]]` header gave only "missing required key".
    @Test func aTopLevelKeyBelowATableHeaderIsSaidToBelongToThatTable() {
        let swallowed = parseError("data = \"/d\"\n[[peer]]\nname = \"w\"\nurl = \"/w\"\ndevice = \"phone\"\n")
        #expect(swallowed?.message.contains("this `device =` line sits below the [[peer]] header") == true)
        #expect(swallowed?.message.contains("Move it above the first [table]") == true)
        let inWatch = parseError("device = \"p\"\n[watch]\ndebounce_ms = 100\ndata = \"/d\"\n")
        #expect(inWatch?.message.contains("sits below the [watch] header") == true)
    }

    @Test func unknownKeysSuggestTheNearestValidKey() {
        let watch = parseError("device = \"p\"\ndata = \"/d\"\n[watch]\nmax_delay_ms = 3000\ndebounce = 10")
        #expect(
            watch?.description
                == "/home/u/syncagent.toml:5: unknown key 'debounce' in [watch]; did you mean 'debounce_ms'?")

        let top = parseError("devise = \"p\"\ndata = \"/d\"")
        #expect(top?.line == 1)
        #expect(top?.message == "unknown key 'devise'; did you mean 'device'?")

        let table = parseError("device = \"p\"\ndata = \"/d\"\n\n[[peers]]\nname = \"a\"")
        #expect(table?.line == 4)
        #expect(table?.message == "unknown table [[peers]]; did you mean [[peer]]?")

        let resolver = parseError(
            "device = \"p\"\ndata = \"/d\"\n[[resolver]]\npath = \"*\"\nstrategy = \"both\"\nzzz = 1")
        #expect(resolver?.line == 6)
        #expect(resolver?.message == "unknown key 'zzz' in [[resolver]]; valid keys are 'path', 'strategy', 'command'")
    }

    @Test func theFirstUnknownKeyInTheFileIsReported() {
        let error = parseError("device = \"p\"\ndata = \"/d\"\n[[peer]]\nname = \"a\"\nurl = \"u\"\nzeta = 1\nalpha = 2")
        #expect(error?.line == 6)
        #expect(error?.message.hasPrefix("unknown key 'zeta' in [[peer]]") == true)
    }

    @Test(arguments: ["my phone", "", "ph/one", "téléphone"])
    func deviceNamesAreLettersDigitsDashAndUnderscore(name: String) {
        let error = parseError("data = \"/d\"\ndevice = \"\(name)\"")
        #expect(error?.line == 2)
        #expect(error?.key == "device")
    }

    @Test func peerNamesAreUniqueAndNotTheDevice() {
        let own = parseError("device = \"p\"\ndata = \"/d\"\n[[peer]]\nname = \"p\"\nurl = \"u\"")
        #expect(own?.line == 4)
        #expect(own?.key == "peer.name")
        #expect(own?.message.contains("this device's own name") == true)

        let twice = parseError(
            "device = \"p\"\ndata = \"/d\"\n[[peer]]\nname = \"w\"\nurl = \"u\"\n[[peer]]\nname = \"w\"\nurl = \"v\"")
        #expect(twice?.line == 7)
        #expect(twice?.message == "'w' is already the name of the peer on line 4; each peer needs its own name")

        let poll = parseError("device = \"p\"\ndata = \"/d\"\n[[peer]]\nname = \"w\"\nurl = \"u\"\npoll_seconds = 0")
        #expect(poll?.line == 6)
        #expect(poll?.key == "peer.poll_seconds")
    }

    @Test func strategiesAndCommandsAreChecked() {
        let header = "device = \"p\"\ndata = \"/d\"\n[[resolver]]\npath = \"*\"\n"
        let unknown = parseError(header + "strategy = \"keep:my phone\"")
        #expect(unknown?.line == 5)
        #expect(unknown?.key == "resolver.strategy")
        #expect(unknown?.message.hasPrefix("must be one of manual, newest, keep:<device>") == true)

        let missing = parseError(header + "strategy = \"command\"")
        #expect(missing?.line == 3)
        #expect(missing?.message.hasPrefix("missing required key 'command' in [[resolver]]") == true)

        let stray = parseError(header + "strategy = \"newest\"\ncommand = [\"x\"]")
        #expect(stray?.line == 6)
        #expect(stray?.key == "resolver.command")

        for command in ["[]", "[\"x\", 1]", "\"x\""] {
            let bad = parseError(header + "strategy = \"command\"\ncommand = \(command)")
            #expect(bad?.line == 6)
            #expect(bad?.message.hasPrefix("must be a non-empty array of strings") == true)
        }
    }

    @Test func tablesMustBeWrittenAsTables() {
        let watch = parseError("device = \"p\"\ndata = \"/d\"\nwatch = 5")
        #expect(watch?.line == 3)
        #expect(watch?.message == "must be a table: a line [watch] followed by its keys")

        let peer = parseError("device = \"p\"\ndata = \"/d\"\n[peer]\nname = \"w\"")
        #expect(peer?.line == 3)
        #expect(peer?.message == "must be written as [[peer]] tables, one for each peer")
    }

    @Test(arguments: [
        ("/srv/d", "/srv/d"), ("/srv/d", "/srv/d/.state"), ("/srv/d/data", "/srv/d"),
    ])
    func stateAndDataMustBeApart(data: String, state: String) {
        let error = parseError("device = \"p\"\ndata = \"\(data)\"\nstate = \"\(state)\"")
        #expect(error?.line == 3)
        #expect(error?.key == "state")
        #expect(error?.message.hasSuffix("the data directory is watched; put state outside it") == true)
    }
}

@Suite struct ConfigTemplateTests {
    @Test func renderedFileParsesBackToTheGivenValues() throws {
        let text = ConfigTemplate.render(
            device: "phone", data: "data", state: "/var/lib/syncagent/phone",
            peers: [(name: "watch", url: "/srv/watch/state/store.git", hub: false), (name: "pc", url: "ssh://pc/store.git", hub: false),
                    (name: "family", url: "ssh://me@nas/srv/family.git", hub: true)])
        let config = try Config.parse(text, file: file, environment: environment)
        #expect(
            config
                == Config(
                    file: file, device: "phone", data: "/home/u/data", state: "/var/lib/syncagent/phone",
                    peers: [
                        PeerConfig(name: "watch", url: "/srv/watch/state/store.git"),
                        PeerConfig(name: "pc", url: "ssh://pc/store.git"),
                        { var hub = PeerConfig(name: "family", url: "ssh://me@nas/srv/family.git"); hub.hub = true; return hub }(),
                    ]))
    }

    /// `init --help` says the file documents every key: each key the parser accepts is in it, as a
    /// value or a commented-out example, under its own table.
    @Test func renderedFileDocumentsEveryKeyTheParserAccepts() throws {
        let text = ConfigTemplate.render(device: "phone", data: "data", state: nil, peers: [])
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        for (table, keys) in Config.keys {
            for key in keys where !(table == "" && Config.keys[key] != nil) {
                let set = lines.contains { $0.hasPrefix("\(key) =") || $0.hasPrefix("# \(key) =") }
                #expect(set, "the template shows `\(key) = ...` (table [\(table)])")
            }
            if table != "" {
                let header = lines.contains { $0.hasSuffix("[\(table)]") || $0.hasSuffix("[[\(table)]]") }
                #expect(header, "the template has a [\(table)] table")
            }
        }
    }

    @Test func renderedFileWithoutStateOrPeersUsesTheDefaults() throws {
        let text = ConfigTemplate.render(device: "watch", data: "/data \"quoted\" \\ path", state: nil, peers: [])
        let config = try Config.parse(text, file: file, environment: environment)
        #expect(config.data == "/data \"quoted\" \\ path")
        #expect(config.state == "/home/u/.local/state/syncagent/watch")
        #expect(config.watch == WatchSettings())
        #expect(config.peers.isEmpty)
        #expect(config.resolvers.isEmpty)
        #expect(text.contains("# state = \"~/.local/state/syncagent/watch\""))
        #expect(text.contains("# [[peer]]"))
    }
}

@Suite struct ConfigFileTests {
    @Test func loadReadsTheFileAndNamesItInErrors() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appending("syncagent.toml")
            try write("device = \"phone\"\ndata = \"data\"\nstate = \"state\"\n", to: path)
            let config = try Config.load(file: path, environment: environment)
            #expect(config.file == path)
            #expect(config.data == directory.appending("data"))
            #expect(config.state == directory.appending("state"))

            try write("device = \"phone\"\ndata = 1\n", to: path)
            let bad = #expect(throws: ConfigError.self) { try Config.load(file: path, environment: environment) }
            #expect(bad?.file == path)
            #expect(bad?.line == 2)

            let missing = directory.appending("missing.toml")
            let absent = #expect(throws: ConfigError.self) { try Config.load(file: missing, environment: environment) }
            #expect(absent?.description == "\(missing): cannot read the config file: No such file or directory")
        }
    }

    @Test func locatorFollowsTheSpecOrder() throws {
        try withTemporaryDirectory { directory in
            let cwd = directory.appending("cwd")
            let home = directory.appending("home")
            let xdg = home.appending(".config/syncagent/config.toml")
            let local = cwd.appending("syncagent.toml")
            let fromEnvironment = directory.appending("env.toml")
            let explicit = directory.appending("explicit.toml")
            for path in [xdg, local, fromEnvironment, explicit] { try write("", to: path) }
            var env = ["HOME": home.string, "SYNCAGENT_CONFIG": fromEnvironment.string]

            #expect(try ConfigLocator.locate(explicit: "../explicit.toml", environment: env, currentDirectory: cwd) == explicit)
            #expect(try ConfigLocator.locate(explicit: nil, environment: env, currentDirectory: cwd) == fromEnvironment)
            env["SYNCAGENT_CONFIG"] = nil
            #expect(try ConfigLocator.locate(explicit: nil, environment: env, currentDirectory: cwd) == local)
            try FileManager.default.removeItem(atPath: local.string)
            #expect(try ConfigLocator.locate(explicit: nil, environment: env, currentDirectory: cwd) == xdg)

            env["XDG_CONFIG_HOME"] = directory.appending("xdg").string
            let error = #expect(throws: ConfigError.self) {
                try ConfigLocator.locate(explicit: nil, environment: env, currentDirectory: cwd)
            }
            #expect(error?.file == directory.appending("xdg/syncagent/config.toml"))
            #expect(error?.message.contains(local.string) == true)
            #expect(error?.message.contains("syncagent init --device NAME --data DIR") == true)
            #expect(error?.message.contains("--config") == true)
        }
    }

    @Test func locatorRefusesANamedFileThatDoesNotExist() throws {
        try withTemporaryDirectory { directory in
            let named = #expect(throws: ConfigError.self) {
                try ConfigLocator.locate(
                    explicit: nil, environment: ["SYNCAGENT_CONFIG": "~/nope.toml", "HOME": directory.string],
                    currentDirectory: "/")
            }
            #expect(named?.file == directory.appending("nope.toml"))
            #expect(named?.message.contains("$SYNCAGENT_CONFIG") == true)
        }
    }

    @Test func targetDoesNotRequireTheFileToExist() throws {
        try withTemporaryDirectory { directory in
            let env = ["HOME": "/home/u"]
            #expect(
                ConfigLocator.target(explicit: "new.toml", environment: env, currentDirectory: directory)
                    == directory.appending("new.toml"))
            #expect(
                ConfigLocator.target(explicit: nil, environment: env, currentDirectory: directory)
                    == "/home/u/.config/syncagent/config.toml")
            try write("", to: directory.appending("syncagent.toml"))
            #expect(
                ConfigLocator.target(explicit: nil, environment: env, currentDirectory: directory)
                    == directory.appending("syncagent.toml"))
            #expect(
                ConfigLocator.target(explicit: nil, environment: [:], currentDirectory: "/nowhere")
                    == "/nowhere/syncagent.toml")
        }
    }
}
