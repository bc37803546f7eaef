import CLibgit2
import Foundation
@testable import Git
@testable import ObjectStorage
import SystemPackage
import Testing
@testable import SyncCore

/// Every error the store, the config or libgit2 throws reaches the user with a code made in one
/// place (`SyncError(_:)`): libgit2's by its class and code, never by its words.
@Suite struct SyncErrorTests {
    static func git(_ code: git_error_code, _ klass: git_error_t, _ message: String = "words that say nothing") -> GitError {
        GitError(code: code.rawValue, errorClass: Int32(klass.rawValue), message: message, call: "test")
    }

    static let rows: [(String, any Error & Sendable, SyncError.Code)] = [
        ("libgit2 auth", git(GIT_EAUTH, GIT_ERROR_SSH), .auth),
        ("libgit2 certificate", git(GIT_ECERTIFICATE, GIT_ERROR_SSL), .hostKey),
        ("a missing object", git(GIT_ENOTFOUND, GIT_ERROR_ODB), .badHistory),
        ("a damaged object", GitError.damagedObject("object x is not the tree its parent names", call: "copy"), .badHistory),
        ("no such repository", git(GIT_ENOTFOUND, GIT_ERROR_REPOSITORY), .notFound),
        ("the network", git(GIT_ERROR, GIT_ERROR_NET), .unreachable),
        ("http", git(GIT_ERROR, GIT_ERROR_HTTP), .unreachable),
        ("cancelled", GitError.cancelled("copy cancelled", call: "copy"), .timeout),
        ("anything else from libgit2", git(GIT_ERROR, GIT_ERROR_INDEX), .other),
        ("a full disk under libgit2", GitError(code: GIT_ERROR.rawValue, errorClass: Int32(GIT_ERROR_OS.rawValue),
                                               message: "words that say nothing", call: "test", osError: ENOSPC), .diskFull),
        ("a full quota under libgit2", GitError(code: GIT_ERROR.rawValue, errorClass: Int32(GIT_ERROR_OS.rawValue),
                                                message: "words that say nothing", call: "test", osError: EDQUOT), .diskFull),
        ("words alone", git(GIT_ERROR, GIT_ERROR_OS, "No space left on device"), .other),
        ("a config error", ConfigError(file: "/etc/x.toml", line: 3, message: "unknown key"), .badConfig),
        ("the lock", LockError(path: "/s/agent.lock", holder: 42, message: "held"), .locked),
        ("a full disk on apply", ApplyFailure(path: "a", errno: .noSpace), .diskFull),
        ("a store error", StoreError(path: "a", message: "it has no earlier version", hint: "see history"), .noSuchPath),
        ("a resolve error", ResolveError(message: "no open conflict"), .noSuchConflict),
        ("a hub clash", HubRefusal(hub: "hub", url: "/srv/hub.git", device: "phone", detail: "x"), .nameClash),
        ("a refused history", SyncRefusal(peer: "watch", reasons: [".git in a path"]), .badHistory),
        ("errno", Errno.noSpace, .diskFull),
    ]

    @Test(arguments: rows.indices) func codes(_ i: Int) {
        let (what, error, code) = Self.rows[i]
        let problem = SyncError(error)
        #expect(problem.code == code, "\(what)")
        #expect(!problem.message.isEmpty)
    }

    @Test func libgit2sWordsStayTheMessageAndItsCallTheCause() throws {
        let problem = SyncError(Self.git(GIT_EAUTH, GIT_ERROR_SSH, "Permission denied (publickey)"))
        #expect(problem.message == "Permission denied (publickey)")
        // The cause is the GitError itself, typed: its class and code stay readable.
        let cause = try #require(problem.cause as? GitError)
        #expect(cause.code == GIT_EAUTH.rawValue)
        #expect("\(cause)".contains("test failed"))
    }
}
