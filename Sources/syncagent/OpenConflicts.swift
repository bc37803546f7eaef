import Agent
import SyncCore
import SystemPackage

/// While any conflict is open, every command that syncs or changes the store ends with one line
/// on stderr naming them (issue 46: the only signs were a log warning and `conflicts: 1 open` in
/// `status`). Stdout, and so `--json`, is left alone.
enum OpenConflicts {
    static func remind(_ config: Config) {
        guard let store = try? OneShot.readStore(config: config), let open = try? store.conflicts(), !open.isEmpty else { return }
        let names = open.prefix(3).map(\.path).joined(separator: ", ") + (open.count > 3 ? ", ..." : "")
        let line = "note: \(open.count) conflict\(open.count == 1 ? "" : "s") open (\(names)): the data directory holds one version of each and every version is kept; `syncagent conflicts` shows them, `syncagent resolve` settles them\n"
        _ = try? FileDescriptor.standardError.writeAll(line.utf8)
    }
}
