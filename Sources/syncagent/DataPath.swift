import Agent
import ArgumentParser
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage
import FileSystem

enum DataPath {
    static func bytes(_ argument: String, data: FilePath) -> [UInt8] {
        var raw = rawArgument(argument)
        let prefix = data.bytes + [UInt8(ascii: "/")]
        if raw.starts(with: prefix) { raw.removeFirst(prefix.count) }
        while raw.starts(with: [UInt8(ascii: "."), UInt8(ascii: "/")]) { raw.removeFirst(2) }
        while raw.count > 1, raw.last == UInt8(ascii: "/") { raw.removeLast() }
        return raw
    }
}
