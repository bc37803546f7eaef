import Foundation
import SyncCore
import SystemPackage

/// One record's result of `syncagent resolve`.
public struct ResolveResult: Codable, Sendable {
    public var target: String
    public var id: String?
    public var path: String?
    public var error: String?
}

extension ResolveChoiceArgument {
    /// The choice for the store; reads `--with FILE` now, so a missing file fails before anything changes.
    func resolved() throws -> ResolutionChoice {
        if delete { return .delete }
        if let withFile {
            guard let data = FileManager.default.contents(atPath: withFile) else {
                throw ResolveError(message: "cannot read \(withFile) (given with --with); nothing was changed")
            }
            return .with(bytes: Array(data))
        }
        switch keep {
        case "newest": return .newest
        case "both": return .both
        case let device?: return .keep(device: device)
        case nil: throw ResolveError(message: "say how to resolve: --keep DEVICE|newest|both, --with FILE or --delete")
        }
    }
}

extension Store {
    /// Resolves each target (id or path; "--all" means every open record), one result per target.
    func resolve(targets: [String], choice: ResolveChoiceArgument) -> [ResolveResult] {
        let resolution: ResolutionChoice
        do { resolution = try choice.resolved() } catch {
            return targets.map { ResolveResult(target: $0, error: "\(error)") }
        }
        var names = targets
        if targets == ["--all"] { names = ((try? conflicts()) ?? []).map(\.id) }
        return names.map { target in
            do {
                let record = try openRecord(target)
                let done = try resolve(record, resolution)
                return ResolveResult(target: target, id: done.id, path: done.path, error: nil)
            } catch {
                return ResolveResult(target: target, id: nil, path: nil, error: "\(error)")
            }
        }
    }
}

extension OneShot {
    /// Through the running agent, or under the store lock when none runs.
    public static func resolve(config: Config, targets: [String], choice: ResolveChoiceArgument) throws -> [ResolveResult] {
        var choice = choice
        if let file = choice.withFile {
            choice.withFile = FilePath(FileManager.default.currentDirectoryPath).pushing(FilePath(file)).string
        }
        if AgentLock.holder(of: config.lockPath) != nil {
            let line = try ControlClient.send(ControlRequest(command: "resolve", targets: targets, choice: choice),
                                              to: config.socketPath, timeoutSeconds: 60)
            return try JSONDecoder().decode([ResolveResult].self, from: Data(line))
        }
        let lock = try AgentLock.acquire(config.lockPath)
        defer { _ = lock }
        Store.clearStaleLocks(gitDir: config.storePath)
        let store = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
        _ = try store.commit(paths: try store.changedSinceLastCommit())
        return store.resolve(targets: targets, choice: choice)
    }
}
