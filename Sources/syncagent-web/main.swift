import Agent
import ArgumentParser
import Foundation
import SyncCore
import SystemPackage
import WebUI

/// `syncagent web` (this binary, which `syncagent web` runs): a page on 127.0.0.1 to see and
/// settle everything of the agents of these configs. A program of its own: the agent itself
/// serves no HTTP and links no HTTP library.
@main
struct SyncAgentWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncagent web",
        abstract: "Serve a page on 127.0.0.1 to see and settle everything: devices, progress, held changes, conflicts, history.",
        discussion: """
            The page is for this machine's user only: it listens on 127.0.0.1, asks for a token \
            (kept in <state>/web-token, mode 0600) once and then keeps it in an HttpOnly cookie, \
            and refuses requests whose Host or Origin is not its own. It talks to each agent \
            through its socket, or to its store while it is stopped, as the CLI does.

            Example: syncagent web --url   (prints the address to open)
            """
    )

    @Option(name: .long, help: ArgumentHelp("A config file; repeat it for each agent on this machine to show.", valueName: "file"))
    var config: [String] = []

    @Option(name: .long, help: "The port on 127.0.0.1.")
    var port: Int = 8384

    @Flag(name: .long, help: "Print the page's address (with its token) and exit.")
    var url = false

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        let cwd = FilePath(FileManager.default.currentDirectoryPath)
        let files = try (config.isEmpty ? [nil] : config.map { Optional($0) }).map {
            try ConfigLocator.locate(explicit: $0, environment: env, currentDirectory: cwd)
        }
        let configs = try files.map { try Config.load(file: $0, environment: env) }
        let token = try WebToken.load(state: configs[0].state)
        let address = WebToken.url(port: port, token: token)
        if url {
            print(address)
            return
        }
        let server = try WebServer(configs: configs, port: port, token: token)
        let running = Task { try await server.run() }
        try await server.waitUntilListening()
        FileHandle.standardError.write(Data("syncagent web: open \(address)\n(devices: \(configs.map(\.device).joined(separator: ", ")); Ctrl-C stops)\n".utf8))
        do {
            try await running.value
        } catch {
            throw ValidationError("cannot serve on 127.0.0.1:\(port): \(error). Another program may hold the port: try --port.")
        }
    }
}
