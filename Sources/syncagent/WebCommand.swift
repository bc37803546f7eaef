import ArgumentParser
import Glibc
import SystemPackage

/// `syncagent web ...`: runs `syncagent-web` (built and installed beside this binary) with the
/// same arguments. The page is a program of its own: the agent links no HTTP library.
struct WebCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "Serve a page on 127.0.0.1 to see and settle everything (runs syncagent-web; `syncagent web --help` says more).",
        discussion: "Example: syncagent web --url",
        helpNames: []
    )

    @Argument(parsing: .captureForPassthrough, help: "[--config F]... [--port N] [--url]")
    var arguments: [String] = []

    func run() throws {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let dir = n > 0 ? FilePath(String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)).removingLastComponent()
                        : FilePath(".")
        let program = dir.appending("syncagent-web")
        let argv = ["syncagent web"] + arguments
        program.withPlatformString { path in
            var cArgs = argv.map { strdup($0) } + [nil]
            execv(path, &cArgs)
        }
        throw UserFacingError("cannot run \(program): \(String(cString: strerror(errno))). `make build` builds it beside syncagent and `make install` installs it there.")
    }
}
