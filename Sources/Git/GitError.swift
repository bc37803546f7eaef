import CLibgit2
import Glibc

/// A failed libgit2 call: which call, libgit2's error class and code, and its message.
public struct GitError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The libgit2 return code (`GIT_ENOTFOUND`, `GIT_ELOCKED`, ...), see `Code`.
    public let code: Int32
    /// The libgit2 error class (`GIT_ERROR_OS`, `GIT_ERROR_NET`, ...), 0 when libgit2 gave none.
    public let errorClass: Int32
    /// libgit2's own message.
    public let message: String
    /// The libgit2 function that failed, e.g. "git_index_add_bypath".
    public let call: String
    /// The OS error behind it (`errno`) when libgit2 said the system failed (`GIT_ERROR_OS`,
    /// `GIT_ERROR_FILESYSTEM`) or our own file I/O did: `ENOSPC` and `EDQUOT` mean the disk is full.
    public var osError: Int32?

    public enum Code {
        public static let notFound = Int32(GIT_ENOTFOUND.rawValue)
        public static let modified = Int32(GIT_EMODIFIED.rawValue)
        public static let conflict = Int32(GIT_ECONFLICT.rawValue)
        public static let directory = Int32(GIT_EDIRECTORY.rawValue)
        public static let unbornBranch = Int32(GIT_EUNBORNBRANCH.rawValue)
        public static let iterOver = Int32(GIT_ITEROVER.rawValue)
        public static let ambiguous = Int32(GIT_EAMBIGUOUS.rawValue)
        public static let auth = Int32(GIT_EAUTH.rawValue)
        public static let certificate = Int32(GIT_ECERTIFICATE.rawValue)
        /// An object or name is not what it must be (`GIT_EINVALID`).
        public static let invalid = Int32(GIT_EINVALID.rawValue)
        /// The caller gave up (`GIT_EUSER`: what libgit2 returns when a callback says stop).
        public static let cancelled = Int32(GIT_EUSER.rawValue)
        /// libgit2's generic failure (`GIT_ERROR`).
        public static let generic = Int32(GIT_ERROR.rawValue)
    }

    /// An object of a store that is not what its id, its parent or its size says: the store is
    /// damaged, or the history hostile.
    static func damagedObject(_ message: String, call: String) -> GitError {
        GitError(code: Code.invalid, errorClass: Int32(GIT_ERROR_ODB.rawValue), message: message, call: call)
    }

    /// Work the caller stopped (a copy or transfer cancelled through its progress callback).
    static func cancelled(_ message: String, call: String) -> GitError {
        GitError(code: Code.cancelled, errorClass: Int32(GIT_ERROR_CALLBACK.rawValue), message: message, call: call)
    }

    /// The network, ssh or http failed underneath (no route, refused, reset, a bad answer).
    public var isNetwork: Bool {
        [GIT_ERROR_NET, GIT_ERROR_SSH, GIT_ERROR_HTTP].map { Int32($0.rawValue) }.contains(errorClass)
    }

    /// See `damagedObject`.
    public var isDamagedObject: Bool {
        code == Code.invalid && errorClass == Int32(GIT_ERROR_ODB.rawValue)
    }

    public init(code: Int32, errorClass: Int32, message: String, call: String, osError: Int32? = nil) {
        self.code = code
        self.errorClass = errorClass
        self.message = message
        self.call = call
        self.osError = osError
    }

    /// The local disk (or this user's quota) is full.
    public var isDiskFull: Bool { osError == ENOSPC || osError == EDQUOT }

    /// An object a reference or tree names is not in the object database (a store that is damaged,
    /// or a copy that stopped half-way): not a missing repository.
    public var isMissingObject: Bool {
        code == Code.notFound && errorClass == Int32(GIT_ERROR_ODB.rawValue)
    }

    public var description: String {
        "\(call) failed: \(message) (libgit2 class \(errorClass), code \(code))"
    }
}

/// Turns a libgit2 return code into a thrown `GitError`. It reads `git_error_last()` at once, on the
/// calling thread: libgit2 keeps that per thread and never clears it on success.
@inline(__always)
@discardableResult
func check(_ result: Int32, _ call: @autoclosure () -> String) throws(GitError) -> Int32 {
    guard result < 0 else { return result }
    throw lastError(code: result, call: call())
}

/// The classes libgit2 sets from a failed system call.
private let systemClasses: Set<Int32> = [Int32(GIT_ERROR_OS.rawValue), Int32(GIT_ERROR_FILESYSTEM.rawValue)]
/// The errno of a failed system call under libgit2. `errno` itself is gone by the time libgit2
/// returns (it cleans up with more calls: a failed mkdir came back as ENOENT), but libgit2 ends the
/// message of a failed system call with `strerror` of its errno, in this process's locale: that
/// text is matched whole against the same `strerror` of each errno (only once a call failed).
func osError(endingMessage message: String) -> Int32? {
    (Int32(1)..<Int32(134)).first { message.hasSuffix(": " + String(cString: strerror($0))) }
}

func lastError(code: Int32, call: String) -> GitError {
    if let err = git_error_last(), let msg = err.pointee.message {
        let klass = err.pointee.klass
        let message = String(cString: msg)
        return GitError(code: code, errorClass: klass, message: message, call: call,
                        osError: systemClasses.contains(klass) ? osError(endingMessage: message) : nil)
    }
    return GitError(code: code, errorClass: 0, message: "no message from libgit2", call: call)
}
