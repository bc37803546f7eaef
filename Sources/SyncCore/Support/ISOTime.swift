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
    /// (From whole milliseconds, rounded: the formatter's own fractions truncate a double a hair
    /// under .123 to .122, and the line read back would name another time.)
    public static func precise(_ date: Date) -> String {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (seconds, fraction) = (ms.quotientAndRemainder(dividingBy: 1000))
        let (s, f) = fraction < 0 ? (seconds - 1, fraction + 1000) : (seconds, fraction)
        let whole = string(s)  // 2026-11-20T10:00:00Z
        return String(whole.dropLast()) + "." + String(repeating: "0", count: 3 - String(f).count) + String(f) + "Z"
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
