import FoundationEssentials
import Glibc
internal import Git
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
        // libgit2's own codes first, then what servers and ssh say in words.
        if git.code == GitError.Code.auth, !git.message.hasPrefix("authentication failed") {
            return SyncError(.auth, "peer \(link.name) (\(url)): \(git.message); check `identity` or the credentials for this peer in \(configFile)")
        }
        if git.message.contains("Host key verification failed") {
            let file = KnownHosts.knownHostsFile(for: link.config, home: ProcessInfo.processInfo.environment["HOME"])
            return SyncError(.hostKey, "peer \(link.name) (\(url)): \(git.message). The server's host key is not in \(file), or it changed; "
                + "check it with the server's admin, then add it (ssh-keyscan the host >> \(file))")
        }
        if git.message.contains("host key") {
            return SyncError(.hostKey, "peer \(link.name) (\(url)): \(git.message)")
        }
        if git.message.hasPrefix("authentication failed") || git.message.contains("Permission denied (publickey") {
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
        let text = git.message.lowercased()
        if let dir = link.localGitDir, git.code == GitError.Code.notFound || text.contains("could not find repository")
            || text.contains("not found") || text.contains("no such file or directory") {
            var info = stat()
            let exists = dir.withPlatformString { stat($0, &info) } == 0
            let isDirectory = exists && (info.st_mode & S_IFMT) == S_IFDIR
            let partial = ["HEAD", "objects", "refs"].contains { FileManager.default.fileExists(atPath: dir.appending($0).string) }
            if partial {
                return SyncError(.notFound, "peer \(link.name) (\(url)): \(dir) is not a whole store (\(git.message)): its agent may be creating it, or it is damaged. "
                    + "Retried; if this lasts, run `git --git-dir=\(dir) fsck` on \(link.name).")
            }
            let what = !exists ? "\(dir) does not exist" : isDirectory ? "\(dir) is a directory but not a store" : "\(dir) is a file"
            return SyncError(.notFound, "peer \(link.name) (\(url)): \(what). A peer's url is its store, <its state>/store.git "
                + "(by default ~/.local/state/syncagent/\(link.name)/store.git), never its data directory. Fix the url in \(configFile).")
        }
        if text.contains("not found") || text.contains("status code: 404") || text.contains("does not appear to be a git repository")
            || text.contains("not a git repository") {
            return SyncError(.notFound, "peer \(link.name) (\(url)): the repository was not found (\(git.message)). Check the url in \(configFile); a hub must exist first (git init --bare).")
        }
        if text.contains("permission denied") || text.contains("403") {
            return SyncError(.refused, "peer \(link.name) (\(url)): permission denied by the server (\(git.message)); the account needs read and write access to the repository.")
        }
        return SyncError(.unreachable, "cannot fetch from \(url): \(git.message). Check the peer's url in \(configFile) and that its store exists.")
    }

    /// What a failed push to the hub `link` means; `otherwise` is the code when the words say
    /// nothing about the disk or permissions (the fetch's reading of the same error).
    public static func pushing(_ error: any Error, link: PeerLink, otherwise: Code) -> SyncError {
        let detail = (error as? GitError)?.message ?? "\(error)"
        let lower = detail.lowercased()
        let hint = lower.contains("no space") || lower.contains("disk full") || lower.contains("quota")
            ? " The server's disk is full: free space there."
            : lower.contains("permission denied") || lower.contains("403")
            ? " The server refused to write: the account needs write access to the repository." : ""
        let code: Code = hint.contains("disk is full") ? .diskFull : hint.isEmpty ? otherwise : .refused
        return SyncError(code, "cannot push to \(link.name) (\(link.displayURL)): \(detail).\(hint) Local commits go on; the push is retried.",
                         subject: link.name, cause: error as? GitError)
    }
}
