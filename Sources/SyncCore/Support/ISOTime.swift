import FoundationEssentials
import Glibc

/// Every time the agent writes or reads (records, status, peers.json, history, events) in one
/// format: ISO 8601 in UTC to the second (`2026-11-20T10:00:00Z`); events to the millisecond.
public enum ISOTime {
    public static func string(_ seconds: Int64) -> String { string(Date(timeIntervalSince1970: TimeInterval(seconds))) }

    public static func string(_ date: Date) -> String {
        date.formatted(.iso8601)  // 2026-11-20T10:00:00Z
    }

    /// To the millisecond, for events that follow each other closely.
    public static func precise(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    public static func now() -> String { string(Date()) }

    /// The time `iso` names (with or without fractional seconds, any offset); nil when it is none.
    public static func date(_ iso: String) -> Date? {
        // Takes +02:00 as well as Z.
        if let d = try? Date.ISO8601FormatStyle().parse(iso) { return d }
        return try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(iso)
    }

    /// Seconds since the epoch of `iso`; 0 when it names no time.
    public static func seconds(_ iso: String) -> Int64 { Int64(date(iso)?.timeIntervalSince1970 ?? 0) }
}
