import Foundation
import SyncCore
import SystemPackage

/// The page's token: 32 random bytes as hex in `<state>/web-token` (mode 0600), made on first use
/// and kept, so a bookmark of the URL `syncagent web --url` prints keeps working.
public enum WebToken {
    public static func file(state: FilePath) -> FilePath { state.appending("web-token") }

    public static func load(state: FilePath) throws -> String {
        let path = file(state: state)
        if let data = FileManager.default.contents(atPath: path.description) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.count == 64, text.allSatisfy(\.isHexDigit) { return text }
        }
        var generator = SystemRandomNumberGenerator()
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        try FileManager.default.createDirectory(atPath: state.description, withIntermediateDirectories: true)
        let fd = try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate], permissions: [.ownerReadWrite])
        try fd.closeAfter { _ = try fd.writeAll(Array((token + "\n").utf8)) }
        return token
    }

    public static func url(port: Int, token: String) -> String { "http://127.0.0.1:\(port)/?token=\(token)" }
}
