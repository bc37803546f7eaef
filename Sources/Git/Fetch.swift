import CLibgit2
import ObjectStorage
import Glibc

extension Repository {
    /// An in-memory remote for `url`, never saved in the config. No `url.<base>.insteadOf`
    /// rewriting (the store's config never has any): in libgit2 1.5 that step matches a regex
    /// against every config entry and leaks ~20 KB per entry that does not match (pcre2 match data
    /// never freed), about 100 KB per fetch. Found with heaptrack. Free it with `git_remote_free`.
    func anonymousRemote(_ url: String) throws(GitError) -> OpaquePointer? {
        Libgit2.prepareTransport(for: url)
        var remote: OpaquePointer?
        var createOpts = git_remote_create_options()
        try check(git_remote_create_options_init(&createOpts, UInt32(GIT_REMOTE_CREATE_OPTIONS_VERSION)),
                  "git_remote_create_options_init")
        createOpts.repository = handle
        createOpts.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF.rawValue | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC.rawValue
        try check(git_remote_create_with_opts(&remote, url, &createOpts), "git_remote_create_with_opts(\(url))")
        return remote
    }

    /// Runs `body` with `strings` as a libgit2 string array.
    func withStrarray<T>(_ strings: [String], _ body: (inout git_strarray) -> T) -> T {
        var cStrings = strings.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        return cStrings.withUnsafeMutableBufferPointer { buf in
            var array = git_strarray(strings: buf.baseAddress, count: buf.count)
            return body(&array)
        }
    }

    /// Fetches `refspecs` (e.g. "+refs/heads/main:refs/remotes/watch/main") from `url`, which must be
    /// a URL libgit2 understands (`file://`, `ssh://`, `git://`, `http(s)://`). `shouldCancel` is
    /// asked whenever data arrives; returning true abandons the fetch (it throws).
    /// `transfer` is told (objects received, objects in all, bytes received) as data arrives.
    public func fetch(url: String, refspecs: [String], auth: RemoteAuth? = nil,
                      shouldCancel: @escaping () -> Bool = { false },
                      transfer: ((Int, Int?, Int) -> Void)? = nil) throws(GitError) {
        let remote = try anonymousRemote(url)
        defer { git_remote_free(remote) }
        var opts = git_fetch_options()
        try check(git_fetch_options_init(&opts, UInt32(GIT_FETCH_OPTIONS_VERSION)), "git_fetch_options_init")
        opts.prune = GIT_FETCH_NO_PRUNE
        opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE
        opts.update_fetchhead = 0
        let session = AuthSession(auth, cancel: shouldCancel)
        session.transfer = transfer
        let payload = Unmanaged.passRetained(session)
        defer { payload.release() }
        AuthSession.install(&opts.callbacks, payload.toOpaque())
        opts.callbacks.transfer_progress = { stats, payload in
            let session = Unmanaged<AuthSession>.fromOpaque(payload!).takeUnretainedValue()
            if let stats, let transfer = session.transfer {
                let s = stats.pointee
                transfer(Int(s.received_objects), s.total_objects > 0 ? Int(s.total_objects) : nil, Int(s.received_bytes))
            }
            return session.cancel() ? -1 : 0
        }
        let rc = withStrarray(refspecs) { git_remote_fetch(remote, &$0, &opts, "syncagent fetch") }
        do { try check(rc, "git_remote_fetch(\(url))") } catch { throw session.explain(error) }
    }
}
