import FoundationEssentials
import Glibc
import Platform
import FileSystem

/// The `command` strategy: runs the configured program on temporary copies of the versions.
/// `{base}`, `{ours}`, `{theirs}`, `{out}` and `{path}` in its arguments are replaced; `{ours}` is the
/// version of the device whose name sorts first, `{theirs}` the other, so every device runs the same
/// merge. Exit 0 with `{out}` written resolves; anything else leaves the record open.
/// The plan (`ConflictPolicy`) only asks for it (`PathPlan.external`); the store runs it.
enum ExternalMerge {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
        public init(description: String) { self.description = description }
    }

    static func run(_ request: ExternalMergeRequest) -> Result<ResolverDecision, Failure> {
        let (command, path, timeout) = (request.command, request.path, request.timeout)
        let (base, first, second) = (request.base, request.first, request.second)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncagent-merge-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let files = ["base": base, "ours": first, "theirs": second]
            var paths: [String: String] = ["path": path, "out": dir.appendingPathComponent("out").path]
            for (name, bytes) in files {
                let url = dir.appendingPathComponent(name)
                try Data(bytes ?? []).write(to: url)
                paths[name] = url.path
            }
            let args = command.map { arg in
                paths.reduce(arg) { $0.replacing("{\($1.key)}", with: $1.value) }
            }
            let seconds = Int((timeout.components.seconds)) + (timeout.components.attoseconds > 0 ? 1 : 0)
            switch ChildProcess.run(args, timeoutSeconds: max(1, seconds)) {
            case .exited(0, _):
                break
            case .exited(let status, let stderr):
                throw Failure(description: "\(command[0]) exited \(status) for \(path): \(stderr.trimmed(newlines: true))")
            case .timedOut:
                throw Failure(description: "\(command[0]) did not finish within \(timeout) for \(path)")
            case .cannotStart(let why):
                throw Failure(description: "cannot run \(command[0]) for \(path): \(why)")
            }
            guard let out = FileManager.default.contents(atPath: paths["out"]!) else {
                throw Failure(description: "\(command[0]) exited 0 but wrote no {out} for \(path)")
            }
            return .success(.bytes(Array(out)))
        } catch let failure as Failure {
            return .failure(failure)
        } catch {
            return .failure(Failure(description: "cannot run \(command.first ?? "?") for \(path): \(error)"))
        }
    }
}
