import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage
import FileSystem

struct NotifyChangesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify-changes",
        abstract: "Tell a connected agent at once when a hub's refs move (run on the hub's host, over ssh).",
        discussion: """
            Watches the bare repository REPO with inotify, prints READY once it watches, then one \
            line per ref that moved (the ref's name and its new id; 40 zeros for a deleted ref), \
            a burst of moves batched over a few milliseconds. It ends when its standard input \
            closes or REPO goes away. An agent whose [[peer]] says notify = "ssh" keeps it running \
            over ssh and fetches on every line, so devices meet through a hub without polling it.

            Example: syncagent notify-changes /srv/git/family.git
            (what the agent runs as: ssh git@hub.example 'syncagent notify-changes family.git')
            """
    )

    @Argument(help: ArgumentHelp("The hub's bare repository.", valueName: "repo")) var repository: String

    func run() async throws {
        let path = FilePath(bytes: rawArgument(repository))
        if let problem = RefNotifier.problem(with: path) { throw UserFacingError(problem) }
        signal(SIGPIPE, SIG_IGN)
        let outcome = try await RefNotifier.serve(repository: path) { bytes in
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress! + done, $0.count - done) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                done += n
            }
            return true
        }
        switch outcome {
        case .hungUp, .outputClosed: return
        case .repositoryGone: throw UserFacingError("\(path): the repository went away; nothing more to watch")
        }
    }
}
