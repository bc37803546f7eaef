import FoundationEssentials
import Glibc
import Logging
import Platform
import Synchronization
import SyncCore

/// A desktop notification for each conflict opened on this device (`notify_conflicts`, default
/// on): a person at a desktop sees it at once, where a log line and `conflicts: 1 open` in
/// `status` were easy to miss (issue 46). Only when the agent runs in a desktop session (a session
/// bus or a display) and `notify-send` is installed; otherwise nothing, and the CLI's line on
/// stderr remains (`syncagent` prints it after every command while any conflict is open).
/// Reads the event stream (no thread, no timer while nothing happens); a notification runs on a
/// thread of its own, `notify-send` given 10 s.
enum ConflictNotifier {
    /// The `notify-send` to run, or nil when there is no desktop to tell.
    static func program(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard ["DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY"].contains(where: { !(environment[$0] ?? "").isEmpty }) else { return nil }
        for dir in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(dir)/notify-send"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Starts telling the desktop about every conflict opened from now on; nil when it will not.
    /// The conflicts of one burst (a merge that opens many) make one notification: the first
    /// starts a thread that waits a moment, then tells what gathered meanwhile.
    static func start(config: Config, bus: EventBus, logger: Logger) -> Task<Void, Never>? {
        guard config.notifyConflicts, let program = program() else { return nil }
        let device = config.device
        let events = bus.stream()  // subscribed now, not when the task first runs
        let waiting = Mutex<[(id: String, path: String)]?>(nil)
        return Task {
            for await event in events {
                guard case .conflictOpened(let id, let path) = event.kind else { continue }
                let first = waiting.withLock { list -> Bool in
                    if list == nil { list = [(id, path)]; return true }
                    list!.append((id, path))
                    return false
                }
                guard first else { continue }
                OwnThread.start(name: "syncagent-notify") {
                    usleep(200_000)
                    let opened = waiting.withLock { list in defer { list = nil }; return list ?? [] }
                    guard let one = opened.first else { return }
                    let title = opened.count == 1 ? "syncagent (\(device)): conflict on \(one.path)"
                        : "syncagent (\(device)): \(opened.count) conflicts (\(opened.prefix(3).map(\.path).joined(separator: ", "))\(opened.count > 3 ? ", ..." : ""))"
                    let body = "Two devices changed \(opened.count == 1 ? "it" : "them") differently. The data directory holds one version; every version is kept. `syncagent conflicts` shows them, `syncagent resolve \(opened.count == 1 ? one.id : "ID")` settles one."
                    let argv = [program, "--app-name=syncagent", "--icon=dialog-warning", title, body]
                    if case .exited(let status, let stderr) = ChildProcess.run(argv, timeoutSeconds: 10), status != 0 {
                        logger.notice("notify-send for \(opened.count) conflict(s) exited \(status): \(stderr)")
                    }
                }
            }
        }
    }
}
