import FoundationEssentials
import Glibc
import SyncCore

/// The agent's side of `syncagent events` on the control socket (a thread of its own per client).
enum EventStreaming {
    /// Writes the kept events after `since`, then, with `follow`, each new one until the client
    /// hangs up or the agent stops. No event is written twice or skipped between the two parts:
    /// it listens before it reads the log, and writes only numbers above the last one written.
    static func serve(_ fd: Int32, bus: EventBus, since: Int?, follow: Bool) {
        let queue = follow ? bus.listen() : nil
        defer { queue.map(bus.unlisten) }
        var last = since ?? 0
        if since != nil || !follow {
            for event in bus.stored(since: since) {
                guard UnixSocket.writeAll(fd, event.jsonLine + [UInt8(ascii: "\n")]) else { return }
                if let seq = event.seq { last = max(last, seq) }
            }
        } else {
            last = bus.stored(since: nil).last?.seq ?? 0  // --follow alone: new events only
        }
        guard let queue else { return }
        UnixSocket.setTimeout(fd, seconds: 5)
        while let (events, _) = queue.next(timeout: 1) {
            // Live-only events (`progress`) have no number: always new.
            for event in events where event.seq.map({ $0 > last }) ?? true {
                guard UnixSocket.writeAll(fd, event.jsonLine + [UInt8(ascii: "\n")]) else { return }
                last = event.seq ?? last
            }
            if events.isEmpty, UnixSocket.peerClosed(fd) { return }
        }
    }
}
