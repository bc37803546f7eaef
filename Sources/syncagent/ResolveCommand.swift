import Agent
import ArgumentParser
import FileSystem
import SyncCore
import SystemPackage

struct ResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Settle conflict records; the settlement reaches every peer.",
        usage: """
            syncagent resolve [--config <file>] [<targets> ...] [--all]
                              [--keep <device|newest|both>] [--with <file>]
                              [--delete]
            """,
        discussion: """
            --keep DEVICE keeps that device's version, --keep newest the newer one, --keep both keeps \
            the newer at the path and writes the other beside it as \
            NAME.conflict-DEVICE-YYYYMMDD-HHMMSS.EXT. --with FILE puts FILE's bytes at the path; \
            --delete removes it. Goes through the running agent, or takes the store lock itself when \
            none runs.

            Example: syncagent resolve notes/today.txt --keep phone
            """
    )

    @OptionGroup var options: ConfigOption
    @Argument(help: "Record ids or paths.") var targets: [String] = []
    @Flag(name: .long, help: "Every open record.") var all = false
    @Option(name: .long, help: ArgumentHelp("A device name, newest or both.", valueName: "device|newest|both")) var keep: String?
    @Option(name: .customLong("with"), help: ArgumentHelp("Use this file's bytes.", valueName: "file")) var withFile: String?
    @Flag(name: .long, help: "Delete the path.") var delete = false

    /// The choice as stated; `--with FILE` is read here, by the argument's exact bytes, so a missing
    /// file fails before anything changes.
    func choice() throws -> ResolveChoiceArgument {
        var choice = ResolveChoiceArgument(keep: keep, withFile: withFile, delete: delete)
        if let withFile {
            do {
                choice.withContent = try Files.read(FilePath(bytes: rawArgument(withFile)))
            } catch {
                throw UserFacingError("cannot read \(withFile) (given with --with): \(error); nothing was changed")
            }
        }
        return choice
    }

    @Flag(name: .long, help: "Print the result as JSON (see README, CLI reference).") var json = false

    func validate() throws {
        let choices = [keep != nil, withFile != nil, delete].filter { $0 }.count
        guard choices == 1 else { throw ValidationError("give exactly one of --keep, --with or --delete") }
        guard all != !targets.isEmpty else { throw ValidationError("name the records to resolve (ids or paths), or give --all") }
    }

    func run() async throws {
        let config = try options.load()
        defer { OpenConflicts.remind(config) }
        let results = try await OneShot.resolve(
            config: config, targets: targets.map { RecordTarget(text: $0, pathBytes: rawArgument($0)) }, all: all,
            choice: try choice())
        if json { return try JSONOutput.print(results, failed: results.contains { $0.error != nil }) }
        var failed = 0
        for r in results {
            if let error = r.error {
                failed += 1
                print("\(r.target): not resolved: \(error)")
            } else {
                print("resolved \(r.id ?? r.target) (\(r.path ?? ""))")
            }
        }
        if all && results.isEmpty { print("no open conflicts") }
        if failed > 0 { throw UserFacingError("\(failed) record\(failed == 1 ? "" : "s") not resolved") }
    }
}
