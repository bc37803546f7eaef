import CLibgit2
import Glibc
import ObjectStorage

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
