import Agent
import Foundation
import SyncCore

/// Builds `status`: from the running agent over its socket, else from the store on disk.
enum StatusReporter {
    static func report(for config: Config) throws -> StatusReport {
        if let pid = AgentLock.holder(of: config.lockPath) {
            if let line = try? ControlClient.send(ControlRequest(command: "status"), to: config.socketPath),
               let live = try? JSONDecoder().decode(StatusReport.self, from: Data(line)) {
                return live
            }
            var report = try offline(config)
            report.running = true
            report.pid = pid
            report.pending = nil
            report.problems.append("the agent (pid \(pid)) holds the lock but did not answer on \(config.socketPath)")
            return report
        }
        return try offline(config)
    }

    /// The agent is stopped: read the store and count what it would commit at start-up.
    static func offline(_ config: Config) throws -> StatusReport {
        var problems: [String] = []
        var head: String?
        var pending: Int?
        do {
            let store = try Store.open(device: config.device, data: config.data, gitDir: config.storePath)
            head = try store.head()?.hex
            pending = try store.changedSinceLastCommit().count
        } catch {
            problems.append("\(error)")
        }
        return StatusReport(device: config.device, running: false, pid: nil, data: config.data.string,
                            store: config.storePath.string, head: head, pending: pending,
                            peers: config.peers.map { StatusReport.Peer(name: $0.name, url: $0.url) },
                            conflicts: .init(open: 0), problems: problems)
    }

    static func text(_ r: StatusReport) -> String {
        var lines = [
            "device:   \(r.device)",
            "agent:    " + (r.running ? "running (pid \(r.pid.map(String.init) ?? "?"))" : "stopped"),
            "data:     \(r.data)",
            "store:    \(r.store)",
            "head:     \(r.head ?? "(no commit yet)")",
            "pending:  " + (r.pending.map { "\($0) change\($0 == 1 ? "" : "s")" + (r.running ? "" : " (committed when the agent starts)") } ?? "unknown"),
        ]
        for peer in r.peers {
            var line = "peer:     \(peer.name) \(peer.url)"
            switch peer.reachable {
            case true?: line += " — reachable, last sync \(peer.lastSync ?? "never"), ahead \(peer.ahead ?? 0), behind \(peer.behind ?? 0)"
            case false?: line += " — NOT reachable"
            case nil: break
            }
            lines.append(line)
            if let error = peer.lastError { lines.append("          last error: \(error)") }
        }
        lines.append("conflicts: \(r.conflicts.open) open")
        for problem in r.problems { lines.append("problem:  \(problem)") }
        return lines.joined(separator: "\n")
    }
}
