import FileSystem
import FoundationEssentials
import Platform
import Glibc
import SyncCore
import SystemPackage
import Watcher

/// The server side of the notify channel (`syncagent notify-changes REPO`, run on a hub's host
/// over ssh): watches a bare repository's refs with inotify (the loose refs under `refs/` and
/// `packed-refs`), prints `READY` once watching, then one line per ref that moved in a burst
/// (`<name> <id>`, 40 zeros for a deleted ref), bursts batched over a few ms. No polling. It ends
/// when its standard input closes (the agent hung up) or the repository goes away.
public enum RefNotifier {
    public enum Outcome: Sendable, Equatable {
        /// Standard input closed: the other end is gone.
        case hungUp
        /// The repository (or its `refs`) was removed or moved away.
        case repositoryGone
        /// Standard output cannot be written (the other end closed it).
        case outputClosed
    }

    /// Why `repository` cannot be watched, with what to do; nil when it is a git directory.
    public static func problem(with repository: FilePath) -> String? {
        func kind(_ path: FilePath) -> FileStat.Kind? { ((try? FileStat.of(path)) ?? nil)?.kind }
        guard let top = kind(repository) else { return "\(repository): no such directory. Give the path of the hub's bare repository (made with git init --bare)." }
        guard top == .directory else { return "\(repository): not a directory. Give the path of the hub's bare repository (made with git init --bare)." }
        if kind(repository.appending(".git")) != nil {
            return "\(repository): a work tree, not a bare repository. Give a bare repository (git init --bare), or \(repository.appending(".git"))."
        }
        guard kind(repository.appending("HEAD")) == .regular, kind(repository.appending("refs")) == .directory,
              kind(repository.appending("objects")) == .directory else {
            return "\(repository): not a bare git repository (no HEAD, refs/ and objects/). Give the path of the hub's bare repository (made with git init --bare)."
        }
        return nil
    }

    private enum Input: Sendable {
        case changed, hungUp, gone
    }

    /// Watches until the other end hangs up or the repository goes; `write` gets each burst's
    /// lines (and first `READY\n`) and returns false when they cannot be written.
    /// Call only after `problem(with:)` said nil.
    public static func serve(repository: FilePath, quiet: Duration = .milliseconds(5),
                             write: @escaping @Sendable ([UInt8]) -> Bool) async throws -> Outcome {
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let onProblem: @Sendable (WatchProblem) -> Void = { if $0.kind == .rootGone || $0.kind == .unmounted { feed.yield(.gone) } }
        // Loose refs: the whole tree. packed-refs: the repository's top level, nothing under it
        // (objects/ churns with every push).
        let refs = try Watcher(root: repository.appending("refs"), quiet: quiet, maxDelay: .milliseconds(50),
                               ignore: { $0.extension == "lock" }, onProblem: onProblem)
        let top = try Watcher(root: repository, quiet: quiet, maxDelay: .milliseconds(50),
                              ignore: { $0.string != "packed-refs" }, onProblem: onProblem)
        defer {
            refs.stop()
            top.stop()
        }
        refs.start()
        top.start()
        let forward = [refs, top].map { watcher in
            Task { for await _ in watcher.batches { feed.yield(.changed) } }
        }
        defer { forward.forEach { $0.cancel() } }
        watchStandardInput { feed.yield(.hungUp) }

        let reader = Reader(repository: repository, write: write)
        guard await reader.start() else { return .outputClosed }
        for await input in inputs {
            switch input {
            case .hungUp: return .hungUp
            case .gone: return .repositoryGone
            case .changed:
                if let end = await reader.burst() { return end }
            }
        }
        return .hungUp
    }

    /// Reads the refs and writes the lines on a thread of its own (file I/O stays off the
    /// cooperative pool).
    private actor Reader {
        private let executor = ThreadExecutor(name: "syncagent-notify")
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        private let repository: FilePath
        private let write: @Sendable ([UInt8]) -> Bool
        private var known = RefSnapshot()

        init(repository: FilePath, write: @escaping @Sendable ([UInt8]) -> Bool) {
            self.repository = repository
            self.write = write
        }

        /// Takes the first snapshot (the watches are already in place) and says READY.
        func start() -> Bool {
            known = RefSnapshot.read(gitDir: repository)
            return write(Array("READY\n".utf8))
        }

        /// After a burst: one line per ref that moved. Nil while the channel goes on.
        func burst() -> Outcome? {
            if RefNotifier.problem(with: repository) != nil { return .repositoryGone }
            let now = RefSnapshot.read(gitDir: repository)
            let moved = now.changes(since: known)
            known = now
            guard !moved.isEmpty else { return nil }
            var lines: [UInt8] = []
            for (name, id) in moved { lines += name + [UInt8(ascii: " ")] + id + [UInt8(ascii: "\n")] }
            return write(lines) ? nil : .outputClosed
        }
    }

    /// Calls `closed` once standard input reaches its end (or fails), read on a thread of its own.
    private static func watchStandardInput(closed: @escaping @Sendable () -> Void) {
        OwnThread.start(name: "syncagent-notify-stdin") {
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if n > 0 { continue }  // what the other end sends is ignored
                if n < 0 && errno == EINTR { continue }
                break
            }
            closed()
        }
    }
}
