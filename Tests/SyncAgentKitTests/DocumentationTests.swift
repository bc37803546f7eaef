import Foundation
import Testing

/// Every public symbol of SyncAgentKit has a doc comment (`///`): an app developer reads the API
/// from them. Public members of a type count; a comment may sit above attributes.
@Suite struct DocumentationTests {
    @Test func everyPublicSymbolIsDocumented() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/SyncAgentKit").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        var missing: [String] = []
        for file in files.sorted() {
            let lines = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8).components(separatedBy: "\n")
            var inPublicEnum = false
            for (i, raw) in lines.enumerated() {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("public enum") { inPublicEnum = true }
                // An enum's case, not a switch's (`case .x:`, `case let`).
                let isCase = inPublicEnum && line.hasPrefix("case ") && !line.hasPrefix("case .") && !line.hasPrefix("case let")
                guard line.hasPrefix("public ") || isCase else { continue }
                var j = i - 1
                while j >= 0, lines[j].trimmingCharacters(in: .whitespaces).hasPrefix("@") { j -= 1 }
                if j < 0 || !lines[j].trimmingCharacters(in: .whitespaces).hasPrefix("///") {
                    missing.append("\(file):\(i + 1): \(line)")
                }
            }
        }
        #expect(missing.isEmpty, "undocumented public symbols:\n\(missing.joined(separator: "\n"))")
    }
}
