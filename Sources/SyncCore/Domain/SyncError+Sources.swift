import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage
import FileSystem

extension SyncError {
    /// Any error the store, the config or libgit2 throws, as the user-facing error: its code from
    /// the error's type (libgit2's by its class and code), its own words kept as the message.
    public init(_ error: any Error) {
        switch error {
        case let same as SyncError:
            self = same
        case let git as GitError:
            self.init(Self.code(of: git), git.message, cause: git)
        case let store as StoreError:
            self.init(store.code, store.description, subject: store.path.display, cause: store)
        case let resolve as ResolveError:
            self.init(resolve.code, resolve.message)
        case let lock as LockError:
            self.init(lock.holder == nil ? .io : .locked, lock.description, subject: lock.path.display)
        case let config as ConfigError:
            self.init(.badConfig, config.description)
        case let refusal as HubRefusal:
            self.init(refusal.clash ? .nameClash : .refused, refusal.description, subject: refusal.hub)
        case let refusal as SyncRefusal:
            self.init(.badHistory, refusal.description, subject: refusal.peer)
        case let failure as ApplyFailure:
            self.init(failure.errno == .noSpace ? .diskFull : .io, failure.description, subject: failure.path.display, cause: failure)
        case let errno as Errno:
            self.init(errno == .noSpace ? .diskFull : .io, "\(errno)", cause: errno)
        default:
            self.init(.other, "\(error)")
        }
    }

    /// libgit2's class and code, in that order, as a code; what they do not tell is `other`.
    static func code(of git: GitError) -> Code {
        if git.code == GitError.Code.auth { return .auth }
        if git.code == GitError.Code.certificate { return .hostKey }
        if git.isMissingObject || git.isDamagedObject { return .badHistory }
        if git.code == GitError.Code.notFound { return .notFound }
        if git.isNetwork { return .unreachable }
        if git.code == GitError.Code.cancelled { return .timeout }
        if git.isDiskFull { return .diskFull }
        return .other
    }
}
