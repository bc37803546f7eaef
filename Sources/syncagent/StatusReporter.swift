import Agent
import FoundationEssentials
import Glibc
import SyncCore
import FileSystem

/// Builds `status`: from the running agent over its socket, else from the store on disk.
enum StatusReporter {
    static func report(for config: Config) throws -> StatusReport {
        if let pid = AgentLock.holder(of: config.lockPath) {
            if let line = try? ControlClient.send(.status, to: config.socketPath),
               let live = try? JSONDecoder().decode(StatusReport.self, from: Data(line)) {
                return live
            }
            var report = StatusBuilder.offline(config)
            report.running = true
            report.pid = pid
            report.pending = nil
            report.problems.append(StatusProblem(.agent, "the agent (pid \(pid)) holds the lock but did not answer on \(config.socketPath)",
                                                 subject: config.socketPath.display))
            return report
        }
        return StatusBuilder.offline(config)
    }

    /// `peersSavedAt`: when a stopped agent last wrote what it knew of its peers (their lines are
    /// that old).
    static func text(_ r: StatusReport, peersSavedAt: Date? = nil) -> String {
        var lines = [
            "device:   \(r.device)",
            "agent:    " + (r.running ? "running (pid \(r.pid.map(String.init) ?? "?"))" : "stopped"),
            "data:     \(r.data)",
            "store:    \(r.store)" + (r.storeBytes.map { " (\(ProgressReport.size(Int($0))) on disk)" } ?? ""),
            "head:     \(r.head ?? "(no commit yet)")",
            "pending:  " + (r.pending.map { "\($0) change\($0 == 1 ? "" : "s")" + (r.running ? "" : " (committed when the agent starts)") } ?? "unknown"),
        ]
        for task in r.tasks.isEmpty ? (r.progress.map { [$0] } ?? []) : r.tasks {
            lines.append("working:  " + ProgressLine.bar(task, width: 20) + " " + task.line)
        }
        if !r.running, !r.peers.isEmpty {
            if let saved = peersSavedAt {
                lines.append("peers as of \(ISOTime.string(Int64(saved.timeIntervalSince1970))), when the agent last saved what it knew of them:")
            } else {
                lines.append("peers (the agent has never run here, so nothing is known of them yet):")
            }
        }
        for peer in r.peers {
            var line = "peer:     \(peer.name) " + (peer.via.map { "(through hub \($0))" } ?? peer.url)
            switch peer.reachable {
            case true?: line += " — reachable, last sync \(peer.lastSync ?? "never"), ahead \(peer.ahead ?? 0), behind \(peer.behind ?? 0)"
            case false?: line += " — NOT reachable"
            case nil: break
            }
            if peer.paused == true { line += " — PAUSED (`syncagent resume \(peer.name)` to sync with it again)" }
            lines.append(line)
            if let error = peer.lastError { lines.append("          last error: \(error)\(peer.errorCode.map { " [\($0)]" } ?? "")") }
            var seen: [String] = []
            if let t = peer.lastChecked { seen.append("checked \(t)") }
            if let t = peer.lastFetch { seen.append("fetched \(t)") }
            if let t = peer.lastPush { seen.append("pushed \(t)") }
            if let t = peer.lastSeen { seen.append("seen \(t)") }
            if !seen.isEmpty { lines.append("          last:       " + seen.joined(separator: ", ")) }
            if let notify = peer.notify { lines.append("          notify:     \(notify)") }
        }
        lines.append("conflicts: \(r.conflicts.open) open")
        if r.mode != "send-receive" {
            lines.append("mode:     \(r.mode), \(r.localChanges) local change\(r.localChanges == 1 ? "" : "s") (never sent; `syncagent revert` undoes them)")
        }
        if r.held > 0 { lines.append("held:     \(r.held) change\(r.held == 1 ? "" : "s") kept back (`syncagent held` lists them, `syncagent send` shares them)") }
        for problem in r.problems { lines.append("problem:  \(problem)") }
        return lines.joined(separator: "\n")
    }
}
