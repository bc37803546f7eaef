import ArgumentParser
import FoundationEssentials

/// `--json`: one JSON value on stdout (keys sorted), for scripts; the same shapes the control
/// socket answers with, `error` and `errorCode` (`SyncError.Code`) beside each result. A command
/// whose result holds an error exits 1 after printing it.
enum JSONOutput {
    static func print(_ value: some Encodable, failed: Bool = false) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        Swift.print(String(decoding: try encoder.encode(value), as: UTF8.self))
        if failed { throw ExitCode(1) }
    }
}

/// What `init --json` and `restore --to --json` print.
struct InitResult: Encodable {
    var config: String
    var device: String
    var data: String
    var state: String
    var store: String
    var peers: [String]
}

struct ExportResult: Encodable {
    var path: String
    var at: String
    var to: String
    var files: Int
}
