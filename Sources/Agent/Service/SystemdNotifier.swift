import FoundationEssentials
import Glibc
import Platform
import SyncCore

/// systemd's notify protocol (sd_notify(3)): datagrams such as "READY=1" or "STATUS=..." sent to
/// the socket named by `$NOTIFY_SOCKET` (a path, or "@name" for the abstract namespace). Does
/// nothing when the variable is unset, so the agent runs the same outside systemd.
final class SystemdNotifier: Sendable {
    private let fd: Int32
    private let address: [UInt8]
    /// Half of `$WATCHDOG_USEC` (systemd's advice): how often to say "WATCHDOG=1"; nil when the
    /// unit sets no `WatchdogSec` (or it is meant for another process).
    let watchdogInterval: Duration?

    init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let socketName = environment["NOTIFY_SOCKET"], !socketName.isEmpty else { return nil }
        var bytes = Array(socketName.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
        guard bytes.count <= UnixSocket.maxPathLength else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        self.fd = fd
        address = bytes
        if let usec = environment["WATCHDOG_USEC"].flatMap(Int64.init), usec > 0,
           environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true {
            watchdogInterval = .microseconds(usec / 2)
        } else {
            watchdogInterval = nil
        }
    }

    deinit { close(fd) }

    /// Sends one message ("READY=1\nSTATUS=..."); failures are ignored, as sd_notify's are.
    func send(_ message: String) {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: address) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + address.count)
        let payload = Array(message.utf8)
        _ = withUnsafePointer(to: &addr) { ptr in
            ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, length) }
            }
        }
    }

    /// A status line for `STATUS=`: one line, no newlines.
    static func statusLine(_ report: StatusReport) -> String {
        if let progress = report.progress ?? report.tasks.first(where: { !$0.complete }) {
            return progress.line.replacingScalar("\n", with: " ")
        }
        let direct = report.peers.filter { $0.via == nil }
        let reachable = direct.filter { $0.reachable == true }.count
        var parts = ["watching \(report.data)"]
        if !direct.isEmpty { parts.append("\(reachable) of \(direct.count) peers reachable") }
        parts.append("\(report.conflicts.open) open conflict\(report.conflicts.open == 1 ? "" : "s")")
        if report.held > 0 { parts.append("\(report.held) held") }
        if !report.problems.isEmpty { parts.append("\(report.problems.count) problem\(report.problems.count == 1 ? "" : "s"): see `syncagent status`") }
        return parts.joined(separator: "; ").replacingScalar("\n", with: " ")
    }
}
