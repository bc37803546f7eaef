/// The commented config file `syncagent init` writes: every key of SPEC.md documented, the given values
/// filled in, the others shown as commented-out defaults or examples.
public enum ConfigTemplate {
    /// `peers` with `hub` set are written with `hub = true`.
    public static func render(device: String, data: String, state: String?, peers: [(name: String, url: String, hub: Bool)]) -> String {
        let defaults = WatchSettings()
        let safety = SafetySettings()
        let defaultState = quoted("~/.local/state/syncagent/" + device)
        let stateLine = state.map { "state = \(quoted($0))" } ?? "# state = \(defaultState)"
        let peerTables = peers.isEmpty
            ? peerTable(name: "watch", url: "/srv/watch/state/store.git", hub: false, commented: true)
            : peers.map { peerTable(name: $0.name, url: $0.url, hub: $0.hub, commented: false) }.joined(separator: "\n")
        return """
            # syncagent configuration. Relative paths are relative to this file; a leading ~ is your home.

            # This device's name: letters, digits, '-' and '_'.
            device = \(quoted(device))

            # The watched directory. It never holds a .git: the store lives in the state directory.
            data = \(quoted(data))

            # Holds store.git (the git dir), the lock, the socket and caches; it must be outside data.
            # Default: $XDG_STATE_HOME/syncagent/<device>, with XDG_STATE_HOME defaulting to ~/.local/state.
            \(stateLine)

            # send-receive (default), or receive-only: apply peers' changes, never commit or send local
            # edits (`syncagent revert` puts the store's version back).
            # mode = "send-receive"

            # A desktop notification (notify-send) for each conflict opened on this device, when the
            # agent runs in a desktop session (DBUS_SESSION_BUS_ADDRESS or DISPLAY set). Commands
            # print a line on stderr while any conflict is open, whatever this says.
            # notify_conflicts = true

            [watch]
            # Quiet period before a commit, in milliseconds (0 to 600000). A save after a quiet
            # spell, its files closed and nothing removed, goes 5 ms after its last file closes.
            # debounce_ms = \(defaults.debounceMs)
            # During non-stop changes, commit at least this often, in milliseconds (debounce_ms to 3600000).
            # max_delay_ms = \(defaults.maxDelayMs)

            # Deletion guard: one deletion spell (deletions with gaps under 5 s) that deletes more than
            # this share of the files tracked when it began (0 to 100)...
            # [safety]
            # max_delete_percent = \(safety.maxDeletePercent)
            # ...and at least this many files is held until `syncagent send --deletes`, or until the
            # files come back (`syncagent restore --deletes`).
            # min_delete_files = \(safety.minDeleteFiles)

            # One [[peer]] table for each device to sync with.
            #   name: the peer's device name
            #   url: its store.git, as a path, file://, ssh://, git:// or http(s):// URL
            #   poll_seconds: how often to fetch when the agent cannot see the peer's refs change (1 to 86400)
            #   timeout_seconds: a fetch or push is given up after this long without data (default 20)
            #   hub: true for a git repository on a server that many devices share (one hub per config;
            #        each device pushes only refs/heads/devices/<device>), e.g. url = "ssh://git@host/srv/sync.git"
            #   identity: ssh private key for ssh:// URLs (default: ssh-agent, then ~/.ssh/id_ed25519, ~/.ssh/id_rsa)
            #   known_hosts: the file that must list an ssh server's host key (default ~/.ssh/known_hosts)
            #   credentials: for http(s):// URLs, a file (mode 0600) holding one line user:password
            #   key_file: a hub only: encrypt everything on the hub with the key in this file
            #             (`syncagent key new FILE`, copied to every device of the hub)
            #   notify: "ssh" keeps `ssh ... syncagent notify-changes PATH` open and fetches whenever the
            #           peer's refs move (syncagent must be on the server's PATH); default "poll"
            #   notify_command: any program that prints a line whenever the peer's refs move, instead
            \(peerTables)
            # Conflict resolvers, each a [[resolver]] table: the first whose path matches wins; no match means "manual".
            #   path: a glob, matched against the path relative to the data directory
            #   strategy: manual | newest | keep:<device> | both | union | json | command
            #   command: the merge program and its arguments, only for strategy = "command"
            # [[resolver]]
            # path = "*.json"
            # strategy = "json"
            #
            # [[resolver]]
            # path = "*.ods"
            # strategy = "command"
            # command = ["merge-tool", "{base}", "{ours}", "{theirs}", "{out}"]

            # Per-path policy, each a [[rule]] table: the first whose path matches wins; no match: auto, every device.
            #   path: a glob ("*.json", "photos/**", "drafts/")
            #   sync: auto | manual (held until `syncagent send`) | never (local to this device)
            #   max_bytes: auto only; a larger file is held as if manual
            #   devices: only these devices write matching paths into their data directory
            # [[rule]]
            # path = "cache/**"
            # sync = "never"
            #
            # [[rule]]
            # path = "photos/**"
            # max_bytes = 10485760
            # devices = ["phone", "tablet"]

            # Commands run for chosen events (`syncagent events` lists the types), the event as JSON on stdin.
            # [[hook]]
            # events = ["received"]
            # command = ["/usr/local/bin/reload-ui"]
            # timeout_seconds = 10

            # Memory libgit2 may keep for the store (its own defaults suit a server, not a watch).
            # [store]
            # Cache of parsed commits and trees, in MiB (0 turns it off; expect up to ~3x in memory).
            # cache_mb = \(StoreMemorySettings().cacheMB)
            # The most pack data mapped into memory at once, in MiB (4 to 65536).
            # pack_window_mb = \(StoreMemorySettings().packWindowMB)

            """
    }

    private static func peerTable(name: String, url: String, hub: Bool, commented: Bool) -> String {
        let prefix = commented ? "# " : ""
        let defaults = PeerConfig(name: name, url: url)
        let hubLines = (hub ? "hub = true\n" : "# hub = false\n") + "# poll_seconds = \(defaults.pollSeconds)\n"
        return """
            \(prefix)[[peer]]
            \(prefix)name = \(quoted(name))
            \(prefix)url = \(quoted(url))
            \(hubLines)# timeout_seconds = \(defaults.timeoutSeconds)
            # identity = "~/.ssh/id_ed25519"
            # known_hosts = "~/.ssh/known_hosts"
            # credentials = "~/.config/syncagent/\(name).credentials"
            # key_file = "~/.config/syncagent/\(name).key"
            # notify = "poll"
            # notify_command = ["ssh", "git@hub.example", "syncagent", "notify-changes", "family.git"]

            """
    }

    /// `text` as a TOML basic string.
    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
