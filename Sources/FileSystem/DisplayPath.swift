import SystemPackage

extension FilePath {
    /// The path for messages and logs: as is when it is printable UTF-8, otherwise quoted the way git
    /// does (`"a\nb"`, `"\377x"`), so that any byte sequence shows unambiguously on one line.
    public var display: String {
        let raw = bytes
        if let text = String(validating: raw, as: UTF8.self),
           !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f || $0 == "\"" || $0 == "\\" }) {
            return text
        }
        var out = "\""
        var i = 0
        while i < raw.count {
            let b = raw[i]
            switch b {
            case 0x0a: out += "\\n"
            case 0x09: out += "\\t"
            case 0x22: out += "\\\""
            case 0x5c: out += "\\\\"
            case 0x20..<0x7f: out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                // Keep valid multi-byte UTF-8 sequences readable, escape everything else in octal.
                let length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0
                if length > 0, i + length <= raw.count,
                   let scalarText = String(validating: raw[i..<(i + length)], as: UTF8.self) {
                    out += scalarText
                    i += length
                    continue
                }
                out += "\\" + String(b, radix: 8).leftPadded(to: 3)
            }
            i += 1
        }
        return out + "\""
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
