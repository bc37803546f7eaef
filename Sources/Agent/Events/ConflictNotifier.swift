import FoundationEssentials
import Glibc
import Logging
import Platform
import SyncCore

/// A desktop notification for each conflict opened on this device (`notify_conflicts`, default
/// on): a person at a desktop sees it at once, where a log line and `conflicts: 1 open` in
/// `status` were easy to miss (issue 46). Only when the agent runs in a desktop session (a session
/// bus or a display) and `notify-send` is installed; otherwise nothing, and the CLI's line on
/// stderr remains (`syncagent` prints it after every command while any conflict is open).
/// Reads the event stream (no thread, no timer while nothing happens); each notification runs on a
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
    static func start(config: Config, bus: EventBus, logger: Logger) -> Task<Void, Never>? {
        guard config.notifyConflicts, let program = program() else { return nil }
        let device = config.device
        return Task {
            for await event in bus.stream() {
                guard case .conflictOpened(let id, let path) = event.kind else { continue }
                let argv = [program, "--app-name=syncagent", "--icon=dialog-warning",
                            "syncagent (\(device)): conflict on \(path)",
                            "Two devices changed it differently. The data directory holds one version; every version is kept. `syncagent conflicts` shows them, `syncagent resolve \(id)` settles it."]
                OwnThread.start(name: "syncagent-notify") {
                    if case .exited(let status, let stderr) = ChildProcess.run(argv, timeoutSeconds: 10), status != 0 {
                        logger.notice("notify-send for conflict \(id) exited \(status): \(stderr)")
                    }
                }
            }
        }
    }
}
