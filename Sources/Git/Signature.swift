import CLibgit2
import ObjectStorage

/// Who made a commit and when (seconds since the epoch, UTC offset in minutes).
public struct Signature: Sendable, Equatable {
    public var name: String
    public var email: String
    public var time: Int64
    public var offsetMinutes: Int32

    public init(name: String, email: String, time: Int64, offsetMinutes: Int32 = 0) {
        self.name = name
        self.email = email
        self.time = time
        self.offsetMinutes = offsetMinutes
    }

    init(_ sig: git_signature) {
        name = String(cString: sig.name)
        email = String(cString: sig.email)
        time = sig.when.time
        offsetMinutes = sig.when.offset
    }

    func makeC() throws(GitError) -> UnsafeMutablePointer<git_signature> {
        var out: UnsafeMutablePointer<git_signature>?
        try check(git_signature_new(&out, name, email, time, offsetMinutes), "git_signature_new(\(name))")
        return out!
    }
}
