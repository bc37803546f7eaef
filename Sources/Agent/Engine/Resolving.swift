import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage

/// One record's result of `syncagent resolve`.
public struct ResolveResult: Codable, Sendable {
    public var target: String
    public var id: String?
    public var path: String?
    public var error: String?
    /// `SyncError.Code`'s name for `error`, for programs.
    public var errorCode: String?

    init(target: String, id: String? = nil, path: String? = nil, problem: SyncError? = nil) {
        self.target = target
        self.id = id
        self.path = path
        error = problem?.message
        errorCode = problem?.code.rawValue
    }
}

extension ResolveChoiceArgument {
    /// The choice for the store; reads `--with FILE` now, so a missing file fails before anything changes.
    func resolved() throws -> ResolutionChoice {
        if delete { return .delete }
        if let withContent { return .with(bytes: withContent) }
        if let withFile {
            guard let data = FileManager.default.contents(atPath: withFile) else {
                throw ResolveError(message: "cannot read \(withFile) (given with --with); nothing was changed", code: .io)
            }
            return .with(bytes: Array(data))
        }
        switch keep {
        case "newest": return .newest
        case "both": return .both
        case let device?: return .keep(device: device)
        case nil: throw ResolveError(message: "say how to resolve: --keep DEVICE|newest|both, --with FILE or --delete", code: .other)
        }
    }
}

extension Store {
    /// Resolves each target (id or path), or every open record with `all`; one result per record.
    func resolve(targets: [RecordTarget], all: Bool, choice: ResolveChoiceArgument) -> [ResolveResult] {
        let resolution: ResolutionChoice
        do { resolution = try choice.resolved() } catch {
            return targets.map { ResolveResult(target: $0.text, problem: SyncError(error)) }
        }
        var names = targets
        if all { names = ((try? conflicts()) ?? []).map { RecordTarget(text: $0.id) } }
        return names.map { target in
            do {
                let record = try openRecord(target)
                let done = try resolve(record, resolution)
                return ResolveResult(target: target.text, id: done.id, path: done.path)
            } catch {
                return ResolveResult(target: target.text, problem: SyncError(error))
            }
        }
    }
}

extension OneShot {
    /// Through the running agent, or under the store lock when none runs.
    public static func resolve(config: Config, targets: [RecordTarget], all: Bool, choice: ResolveChoiceArgument) async throws -> [ResolveResult] {
        try await viaAgentOrLock(config, .resolve(targets: targets, all: all, choice: choice), as: [ResolveResult].self,
                                 commitFirst: false)
    }
}
