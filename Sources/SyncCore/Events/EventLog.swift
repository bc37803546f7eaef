import FileSystem
import FoundationEssentials
import Glibc
import SystemPackage

/// The events of one device, `<state>/events.jsonl`: one JSON line per event, appended; the last
/// `keep` are kept (the file is rewritten without the oldest once it holds a fifth more).
/// Not thread-safe: one writer (the agent's event bus, or a one-shot command under the lock).
public final class EventLog {
    public static let keep = 10_000

    public let file: FilePath
    /// The sequence number of the last event written (0 before the first).
    public private(set) var lastSeq: Int
    private var lines: Int

    public static func file(state: FilePath) -> FilePath { state.appending("events.jsonl") }

    public init(state: FilePath) {
        file = Self.file(state: state)
        let events = Self.readAll(file)
        lastSeq = events.last?.seq ?? 0
        lines = events.count
    }

    /// Gives each event the next sequence number and appends it. A write that fails (disk full) is
    /// dropped from the file, never from the live stream; the numbers still grow.
    @discardableResult
    public func append(_ event: AgentEvent) -> AgentEvent {
        var event = event
        lastSeq += 1
        event.seq = lastSeq
        let line = event.jsonLine + [UInt8(ascii: "\n")]
        let fd = open(file.string, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 {
            _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            lines += 1
        }
        if lines > Self.keep + Self.keep / 5 { trim() }
        return event
    }

    /// Keeps the newest `keep` events (a temporary, then rename).
    private func trim() {
        let events = Self.readAll(file).suffix(Self.keep)
        var bytes: [UInt8] = []
        for event in events { bytes += event.jsonLine + [UInt8(ascii: "\n")] }
        let temp = file.addingToName(".new")
        try? Files.remove(temp)
        guard (try? Files.create(temp, bytes: bytes, executable: false)) != nil,
              (try? Files.rename(temp, to: file)) != nil else { return }
        lines = events.count
    }

    /// The kept events after `since` (all when nil), preceded by a `gap` when some after `since`
    /// are no longer kept.
    public static func read(state: FilePath, since: Int?) -> [AgentEvent] {
        let events = readAll(file(state: state))
        guard let since else { return events }
        let after = events.filter { ($0.seq ?? 0) > since }
        if let oldest = events.first?.seq, oldest > since + 1 {
            return [AgentEvent.gap(since: since, oldest: oldest)] + after
        }
        return after
    }

    /// Every parsable line; a line cut short by a crash is skipped.
    static func readAll(_ file: FilePath) -> [AgentEvent] {
        guard let bytes = try? Files.read(file) else { return [] }
        let decoder = JSONDecoder()
        return bytes.split(separator: UInt8(ascii: "\n")).compactMap { try? decoder.decode(AgentEvent.self, from: Data($0)) }
    }
}
