import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// A file operation's failure in words ("Permission denied (/srv/x)"), not the error's structure:
/// Foundation's file errors carry the errno and the path inside.
public func reason(of error: any Error) -> String {
    if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
    if let cocoa = error as? CocoaError {
        let path = cocoa.userInfo["NSFilePath"] as? String
        let why = (cocoa.userInfo["NSUnderlyingError"] as? POSIXError).map { String(cString: strerror($0.code.rawValue)) }
            ?? "error \(cocoa.code.rawValue)"
        return why + (path.map { " (\($0))" } ?? "")
    }
    return "\(error)"
}
