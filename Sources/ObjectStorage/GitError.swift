import Glibc

/// A failed libgit2 call, or a failure of our own object storage in its terms: which call, the error
/// class and code, the message, and the errno behind it.
public struct GitError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The libgit2 return code (`GIT_ENOTFOUND`, `GIT_ELOCKED`, ...), see `Code`; our own object
    /// storage uses the same codes.
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

    /// libgit2's return codes (`git_error_code`; `GitErrorTests` checks them against its header).
    public enum Code {
        public static let notFound: Int32 = -3
        public static let modified: Int32 = -15
        /// A reference to create exists already (`GIT_EEXISTS`).
        public static let exists: Int32 = -4
        /// Another writer holds the lock (`GIT_ELOCKED`).
        public static let locked: Int32 = -14
        public static let conflict: Int32 = -13
        public static let directory: Int32 = -23
        public static let unbornBranch: Int32 = -9
        public static let iterOver: Int32 = -31
        public static let ambiguous: Int32 = -5
        public static let auth: Int32 = -16
        public static let certificate: Int32 = -17
        /// An object or name is not what it must be (`GIT_EINVALID`).
        public static let invalid: Int32 = -21
        /// The caller gave up (`GIT_EUSER`: what libgit2 returns when a callback says stop).
        public static let cancelled: Int32 = -7
        /// libgit2's generic failure (`GIT_ERROR`).
        public static let generic: Int32 = -1
    }

    /// libgit2's error classes this project decides on (`git_error_t`; `GitErrorTests` checks the
    /// numbers against libgit2's header).
    public enum Class {
        public static let os: Int32 = 2
        public static let odb: Int32 = 9
        public static let net: Int32 = 12
        public static let ssh: Int32 = 23
        public static let callback: Int32 = 26
        public static let filesystem: Int32 = 30
        public static let http: Int32 = 34
    }

    /// An object of a store that is not what its id, its parent or its size says: the store is
    /// damaged, or the history hostile.
    public static func damagedObject(_ message: String, call: String) -> GitError {
        GitError(code: Code.invalid, errorClass: Class.odb, message: message, call: call)
    }

    /// Work the caller stopped (a copy or transfer cancelled through its progress callback).
    public static func cancelled(_ message: String, call: String) -> GitError {
        GitError(code: Code.cancelled, errorClass: Class.callback, message: message, call: call)
    }

    /// The network, ssh or http failed underneath (no route, refused, reset, a bad answer).
    public var isNetwork: Bool {
        [Class.net, Class.ssh, Class.http].contains(errorClass)
    }

    /// See `damagedObject`.
    public var isDamagedObject: Bool {
        code == Code.invalid && errorClass == Class.odb
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
        code == Code.notFound && errorClass == Class.odb
    }

    public var description: String {
        "\(call) failed: \(message) (libgit2 class \(errorClass), code \(code))"
    }
}

