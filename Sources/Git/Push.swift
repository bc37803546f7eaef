import CLibgit2
import ObjectStorage
import Glibc

/// A reference the server would not update, and why (its own words).
public struct PushRefusal: Sendable, Equatable {
    public let ref: String
    public let reason: String
    /// What the server printed meanwhile (a hook's refusal, e.g. gitolite's "FATAL: W ... DENIED").
    public var serverSaid: [String] = []

    public init(ref: String, reason: String, serverSaid: [String] = []) {
        self.ref = ref
        self.reason = reason
        self.serverSaid = serverSaid
    }
}

extension Repository {
    /// Pushes `refspecs` ("refs/heads/main:refs/heads/devices/phone"; give no '+', a push is never
    /// forced) to `url`. Returns the references the server refused with its reason (e.g. not a
    /// fast-forward); throws when the push itself failed.
    public func push(url: String, refspecs: [String], auth: RemoteAuth? = nil,
                     shouldCancel: @escaping () -> Bool = { false },
                     transfer: ((Int, Int?, Int) -> Void)? = nil) throws(GitError) -> [PushRefusal] {
        let remote = try anonymousRemote(url)
        defer { git_remote_free(remote) }
        var opts = git_push_options()
        try check(git_push_options_init(&opts, UInt32(GIT_PUSH_OPTIONS_VERSION)), "git_push_options_init")
        opts.pb_parallelism = 1
        let session = AuthSession(auth, cancel: shouldCancel)
        session.transfer = transfer
        let payload = Unmanaged.passRetained(session)
        defer { payload.release() }
        AuthSession.install(&opts.callbacks, payload.toOpaque())
        opts.callbacks.push_update_reference = { ref, status, payload in
            let session = Unmanaged<AuthSession>.fromOpaque(payload!).takeUnretainedValue()
            if let status, let ref { session.refused.append(PushRefusal(ref: String(cString: ref), reason: String(cString: status))) }
            return 0
        }
        // Building the pack (a delta search over big files) can take longer than a fetch's
        // timeout of silence before a byte is sent: each step of it is progress too.
        opts.callbacks.pack_progress = { _, _, _, payload in
            Unmanaged<AuthSession>.fromOpaque(payload!).takeUnretainedValue().cancel() ? -1 : 0
        }
        opts.callbacks.push_transfer_progress = { current, total, bytes, payload in
            let session = Unmanaged<AuthSession>.fromOpaque(payload!).takeUnretainedValue()
            session.transfer?(Int(current), total > 0 ? Int(total) : nil, Int(bytes))
            return session.cancel() ? -1 : 0
        }
        let rc = withStrarray(refspecs) { git_remote_push(remote, &$0, &opts) }
        do { try check(rc, "git_remote_push(\(url))") } catch { throw session.explain(error) }
        let said = session.serverLines
        return session.refused.map { PushRefusal(ref: $0.ref, reason: $0.reason, serverSaid: said) }
    }

    /// References whose names match `glob` (e.g. "refs/hubs/family/heads/*"), with what they point at.
    public func references(matching glob: String) throws(GitError) -> [(name: String, target: Oid)] {
        var iterator: OpaquePointer?
        try check(git_reference_iterator_glob_new(&iterator, handle, glob), "git_reference_iterator_glob_new(\(glob))")
        defer { git_reference_iterator_free(iterator) }
        var out: [(String, Oid)] = []
        var ref: OpaquePointer?
        while git_reference_next(&ref, iterator) == 0 {
            defer { git_reference_free(ref) }
            guard let target = git_reference_target(ref), let name = git_reference_name(ref) else { continue }
            out.append((String(cString: name), Oid(target)))
        }
        return out
    }

    /// Removes a reference (and its reflog); nothing when there is none.
    public func removeReference(_ name: String) throws(GitError) {
        let rc = git_reference_remove(handle, name)
        if rc == GitError.Code.notFound { return }
        try check(rc, "git_reference_remove(\(name))")
    }
}
