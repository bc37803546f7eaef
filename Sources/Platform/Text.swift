#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension StringProtocol {
    /// Without the spaces, tabs (and with `newlines`, line ends) at either end.
    public func trimmed(newlines: Bool = false) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || (newlines && $0.isNewline) }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(self[first...last])
    }
}

/// `value` in decimal, at least `width` digits (leading zeros), as `%0Nd` prints it.
public func zeroPadded(_ value: Int, width: Int) -> String {
    let digits = String(value.magnitude)
    let padding = String(repeating: "0", count: max(0, width - digits.count))
    return (value < 0 ? "-" : "") + padding + digits
}

/// `value` with one decimal (as `%.1f` prints it, rounded half away from zero).
public func oneDecimal(_ value: Double) -> String {
    guard value.isFinite else { return "\(value)" }
    let tenths = (value * 10).rounded(.toNearestOrAwayFromZero)
    let whole = Int(tenths / 10)
    let fraction = Int(abs(tenths).truncatingRemainder(dividingBy: 10))
    return (tenths < 0 && whole == 0 ? "-" : "") + "\(whole).\(fraction)"
}

extension StringProtocol {
    /// Whether `part` occurs in this text (the standard library's search, not Foundation's).
    public func includes(_ part: some StringProtocol) -> Bool { firstRange(of: part) != nil }
}

extension StringProtocol {
    /// Every `target` scalar replaced by `replacement`, scalar by scalar: unlike the standard
    /// library's `replacing`, which matches whole characters, a quote followed by a combining mark
    /// (one character) or the "\n" of "\r\n" is still found.
    public func replacingScalar(_ target: Unicode.Scalar, with replacement: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            if scalar == target { out.append(contentsOf: replacement.unicodeScalars) } else { out.append(scalar) }
        }
        return String(out)
    }
}
