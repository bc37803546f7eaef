import FileSystem
import FoundationEssentials
import Glibc
internal import Git
internal import ObjectStorage
import SystemPackage

/// The one place where libgit2's errors (its class and code first, then what servers and ssh say
/// in words) become the codes and messages a user reads.
extension SyncError {
    /// What a failed fetch from `link` means, with what to do; nil when `error` is not libgit2's.
    public static func fetching(_ error: any Error, link: PeerLink, configFile: FilePath) -> SyncError? {
        guard let git = error as? GitError else { return nil }
        var problem = fetching(git, link: link, configFile: configFile)
        problem.subject = link.name
        problem.cause = git
        return problem
    }

    private static func fetching(_ git: GitError, link: PeerLink, configFile: FilePath) -> SyncError {
        let url = link.displayURL
        let said = git.serverSaid
        if said == .hostKeyUnknown {
            let file = KnownHosts.knownHostsFile(for: link.config, home: ProcessInfo.processInfo.environment["HOME"])
            return SyncError(.hostKey, "peer \(link.name) (\(url)): \(git.message). The server's host key is not in \(file), or it changed; "
                + "check it with the server's admin, then add it (ssh-keyscan the host >> \(file))")
        }
        if said == .hostKey {
            return SyncError(.hostKey, "peer \(link.name) (\(url)): \(git.message)")
        }
        if said == .authentication {
            let fix = link.config.credentials != nil || url.hasPrefix("http")
                ? "check the user:password in the credentials file named in \(configFile)"
                : "check `identity` for this peer in \(configFile), or add this device's public key to the server's authorized_keys"
            return SyncError(.auth, "peer \(link.name) (\(url)): \(git.message); \(fix)")
        }
        if git.code == GitError.Code.certificate {
            return SyncError(.hostKey, "peer \(link.name) (\(url)): \(git.message); the server's certificate or host key is not trusted here. Check it with the server's admin.")
        }
        if git.isDamagedObject {
            return SyncError(.badHistory, "peer \(link.name) (\(url)): its store holds a damaged object (\(git.message)); nothing was merged and the fetch is retried. Run `git --git-dir=<its store> fsck` on \(link.name).")
        }
        if git.isMissingObject {
            return SyncError(.badHistory, "peer \(link.name) (\(url)): an object its history names could not be read (\(git.message)); nothing was merged and the fetch is retried. If this repeats, run `git --git-dir=<its store> fsck` on \(link.name).")
        }
        // A store on this machine: what is at its path says why, not the words.
        if let dir = link.localGitDir, let what = Self.notAStore(dir) {
            if what.partial {
                return SyncError(.notFound, "peer \(link.name) (\(url)): \(dir) is not a whole store (\(git.message)): its agent may be creating it, or it is damaged. "
                    + "Retried; if this lasts, run `git --git-dir=\(dir) fsck` on \(link.name).")
            }
            return SyncError(.notFound, "peer \(link.name) (\(url)): \(what.why). A peer's url is its store, <its state>/store.git "
                + "(by default ~/.local/state/syncagent/\(link.name)/store.git), never its data directory. Fix the url in \(configFile).")
        }
        if said == .repositoryMissing || (link.localGitDir == nil && git.code == GitError.Code.notFound) {
            return SyncError(.notFound, "peer \(link.name) (\(url)): the repository was not found (\(git.message)). Check the url in \(configFile); a hub must exist first (git init --bare).")
        }
        if said == .permissionDenied {
            return SyncError(.refused, "peer \(link.name) (\(url)): permission denied by the server (\(git.message)); the account needs read and write access to the repository.")
        }
        return SyncError(.unreachable, "cannot fetch from \(url): \(git.message). Check the peer's url in \(configFile) and that its store exists.")
    }

    /// Why the directory `dir` is not a store git can open (nil: it looks like one): it does not
    /// exist, is a file, is a directory with none of a store's parts, or holds only some of them.
    static func notAStore(_ dir: FilePath) -> (why: String, partial: Bool)? {
        func kind(_ path: FilePath) -> FileStat.Kind? { (try? FileStat.of(path))?.kind }
        guard let top = kind(dir) else { return ("\(dir) does not exist", false) }
        guard top == .directory else { return ("\(dir) is a file", false) }
        let parts = ["HEAD", "objects", "refs"].map { kind(dir.appending($0)) != nil }
        if parts.allSatisfy({ $0 }) { return nil }
        return parts.contains(true) ? ("\(dir) is not a whole store", true) : ("\(dir) is a directory but not a store", false)
    }

    /// What a failed push to the hub `link` means; `otherwise` is the code when the words say
    /// nothing about the disk or permissions (the fetch's reading of the same error).
    public static func pushing(_ error: any Error, link: PeerLink, otherwise: Code) -> SyncError {
        let git = error as? GitError
        let detail = git?.message ?? "\(error)"
        let said = git?.serverSaid
        let (code, hint): (Code, String) = said == .diskFull || git?.isDiskFull == true
            ? (.diskFull, " The server's disk is full: free space there.")
            : said == .permissionDenied
            ? (.refused, " The server refused to write: the account needs write access to the repository.") : (otherwise, "")
        return SyncError(code, "cannot push to \(link.name) (\(link.displayURL)): \(detail).\(hint) Local commits go on; the push is retried.",
                         subject: link.name, cause: error as? GitError)
    }
}
