import Foundation

/// The `command` strategy: runs the configured program on temporary copies of the versions.
/// `{base}`, `{ours}`, `{theirs}`, `{out}` and `{path}` in its arguments are replaced; `{ours}` is the
/// version of the device whose name sorts first, `{theirs}` the other, so every device runs the same
/// merge. Exit 0 with `{out}` written resolves; anything else leaves the record open.
enum ExternalMerge {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ command: [String], path: String, base: [UInt8]?, first: [UInt8]?, second: [UInt8]?,
                    timeout: Duration) -> Result<ResolverDecision, Failure> {
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
                paths.reduce(arg) { $0.replacingOccurrences(of: "{\($1.key)}", with: $1.value) }
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = args
            let stderr = Pipe()
            process.standardError = stderr
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let deadline = ContinuousClock.now + timeout
            while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
            if process.isRunning {
                process.terminate()
                let grace = ContinuousClock.now + .seconds(2)
                while process.isRunning && ContinuousClock.now < grace { usleep(10_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
                throw Failure(description: "\(command[0]) did not finish within \(timeout) for \(path)")
            }
            let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            guard process.terminationStatus == 0 else {
                throw Failure(description: "\(command[0]) exited \(process.terminationStatus) for \(path): \(message)")
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
