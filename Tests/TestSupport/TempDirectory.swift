import Foundation
import SystemPackage

/// A real, fresh directory under the system's temporary directory, removed with its contents when
/// the last reference goes. Every test that needs files on disk starts from one.
public final class TempDirectory: @unchecked Sendable {
    public let root: FilePath

    /// - Parameters:
    ///   - label: the start of the directory's name, to tell test leftovers apart.
    ///   - base: where it is made (the system's temporary directory by default).
    public init(_ label: String = "syncagent-tests", in base: FilePath? = nil) throws {
        root = base.map { $0.appending("\(label)-\(UUID().uuidString)") }
            ?? FilePath(FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path)
        try FileManager.default.createDirectory(atPath: root.string, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: root.string) }

    /// `rel` under the root, as a path string.
    public func path(_ rel: String) -> String { root.appending(rel).string }

    /// Writes `text` at `rel` (parents made as needed), with this modification time when given.
    public func write(_ rel: String, _ text: String = "x", mtime: Int? = nil) throws {
        try Self.write(text, at: root.appending(rel), mtime: mtime)
    }
    public func mkdir(_ rel: String) throws {
        try FileManager.default.createDirectory(atPath: path(rel), withIntermediateDirectories: true)
    }
    public func move(_ a: String, _ b: String) throws { try FileManager.default.moveItem(atPath: path(a), toPath: path(b)) }
    public func remove(_ rel: String) throws { try FileManager.default.removeItem(atPath: path(rel)) }
    public func read(_ rel: String) -> String? { try? String(contentsOfFile: path(rel), encoding: .utf8) }

    /// Writes `text` at `path` (parents made as needed), with this modification time when given.
    public static func write(_ text: String, at path: FilePath, mtime: Int? = nil) throws {
        try FileManager.default.createDirectory(atPath: path.removingLastComponent().string, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path.string))
        if let mtime {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(mtime))], ofItemAtPath: path.string)
        }
    }
}

/// One device's directories under a temporary root: its data directory (made) and where its store
/// goes (`state/store.git`, not made), as the agent lays them out.
public final class TempDevice: @unchecked Sendable {
    public let name: String
    public let root: FilePath
    public let data: FilePath
    public let gitDir: FilePath
    private let owner: TempDirectory?

    /// A device of its own temporary directory.
    public convenience init(_ name: String = "phone") throws {
        let dir = try TempDirectory("\(name)-device")
        try self.init(name, under: dir.root, owner: dir)
    }

    /// A device inside `root` (`root/<name>/data`, `root/<name>/state/store.git`), beside others.
    public convenience init(_ name: String, in root: FilePath) throws {
        try self.init(name, under: root.appending(name), owner: nil)
    }

    private init(_ name: String, under root: FilePath, owner: TempDirectory?) throws {
        self.name = name
        self.root = root
        self.owner = owner
        data = root.appending("data")
        gitDir = root.appending("state/store.git")
        try FileManager.default.createDirectory(atPath: data.string, withIntermediateDirectories: true)
    }

    /// Writes `text` at `rel` in the data directory.
    public func write(_ rel: String, _ text: String, mtime: Int? = nil) throws {
        try TempDirectory.write(text, at: data.appending(rel), mtime: mtime)
    }
    public func remove(_ rel: String) throws { try FileManager.default.removeItem(atPath: data.appending(rel).string) }
    public func read(_ rel: String) -> String? { try? String(contentsOfFile: data.appending(rel).string, encoding: .utf8) }
}

/// Runs a program to its end; its exit status and what it wrote on stdout (stderr is dropped).
@discardableResult
public func runProgram(_ path: String, _ args: [String], input: [UInt8]? = nil) throws -> (status: Int32, out: Data) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = FileHandle.nullDevice
    let stdin = input.map { _ in Pipe() }
    if let stdin { p.standardInput = stdin }
    try p.run()
    if let stdin, let input {
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
    }
    let out = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, out)
}

/// The git CLI on a store (`git --git-dir <gitDir> args...`).
@discardableResult
public func git(_ gitDir: FilePath, _ args: [String], input: [UInt8]? = nil) throws -> (status: Int32, out: Data) {
    try runProgram("/usr/bin/git", ["--git-dir", gitDir.string] + args, input: input)
}

/// `git fsck --no-dangling` (with `--full`: packs too) on a store, by the git CLI; its exit status.
public func gitFsck(_ gitDir: FilePath, full: Bool = false) throws -> Int32 {
    try git(gitDir, ["fsck", "--no-dangling"] + (full ? ["--full"] : [])).status
}
