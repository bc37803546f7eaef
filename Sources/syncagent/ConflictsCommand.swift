import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage

struct ConflictsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List conflict records (open ones unless --all).",
        discussion: """
            Records are the same on every device. Settle one with `syncagent resolve`.

            Example: syncagent conflicts --all --json
            """
    )

    @OptionGroup var options: ConfigOption
    @Flag(name: .long, help: "Print a JSON array of records.") var json = false
    @Flag(name: .long, help: "Include resolved records.") var all = false

    func run() async throws {
        let config = try options.load()
        let store = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
        let records = try store.conflicts(includeResolved: all)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(records), as: UTF8.self))
            return
        }
        // Versions this device holds in its store but could not write into the data directory.
        let stuck = store.stuckPaths()
        defer {
            if !stuck.isEmpty {
                print("\n\(stuck.count) path\(stuck.count == 1 ? "" : "s") not written here (the store keeps the version; it lands by itself):")
                for failure in stuck { print("    \(failure)") }
            }
        }
        if records.isEmpty {
            print(all ? "no conflict records" : "no open conflicts")
            return
        }
        for r in records {
            let versions = r.versions.map { "\($0.device)\($0.isDirectory ? " (directory)" : $0.blob == nil ? " (deleted)" : "") \($0.time)" }.joined(separator: ", ")
            print("\(r.id)  \(r.status.rawValue)  \(r.kind.rawValue)  \(r.path)")
            let holds = r.current ?? (r.status == .resolved ? "the resolution's result" : "-")
            print("    versions: \(versions); data holds: \(holds)")
            if let res = r.resolution { print("    resolved: \(res.strategy) by \(res.by) at \(res.at)") }
        }
        if records.contains(where: { $0.status == .open }) {
            print("\nsee a version: syncagent show ID --version base|DEVICE\nsettle one:    syncagent resolve ID --keep DEVICE|newest|both (or --with FILE, --delete)")
        }
    }
}

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print the bytes of one version of a conflict to stdout.",
        discussion: """
            base is the common version; a device name is that device's version.

            Example: syncagent show c-3f9a1e0b7c2d --version watch > theirs.txt
            """
    )

    @OptionGroup var options: ConfigOption
    @Argument(help: "The record's id (or its path).") var id: String
    @Option(name: .long, help: "base, or a device name.") var version: String

    func run() async throws {
        let config = try options.load()
        let store = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
        guard let record = try store.anyRecord(RecordTarget(text: id, pathBytes: rawArgument(id))) else {
            throw UserFacingError("no conflict record with id or path '\(id)'; `syncagent conflicts --all` lists them")
        }
        guard let bytes = try store.versionBytes(record, version: version) else {
            throw UserFacingError("\(version) deleted \(record.path) in conflict \(record.id): there are no bytes to show")
        }
        _ = try? FileDescriptor.standardOutput.writeAll(bytes)
    }
}
