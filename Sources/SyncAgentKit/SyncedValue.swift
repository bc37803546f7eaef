import Agent
import FileSystem
import FoundationEssentials
import Glibc
import SyncCore
import SystemPackage

/// A typed value at a key of the data directory, synced like any file: read it, `set` it (written
/// atomically, committed, then sent to the peers), delete it, or follow it with ``updates()``.
public struct SyncedValue<T: Codable & Sendable>: Sendable {
    /// The path relative to the data directory.
    public let key: String
    let agent: SyncAgent
    let coder: ValueCoder<T>

    var file: FilePath { agent.config.data.pushing(FilePath(key)) }

    /// The value the data directory holds now; nil when there is none.
    /// - Throws: `SyncAgentError` (`no-such-path` is never thrown: absent is nil) when the bytes
    ///   there are not a `T` — ``raw()`` still has them — or the file cannot be read.
    public func get() throws -> T? {
        guard let bytes = try raw() else { return nil }
        do { return try coder.decode(bytes) } catch {
            throw SyncError(.other, "\(key) holds \(bytes.count) bytes that are not a \(T.self) (\(error)); raw() has them, set() replaces them",
                            subject: key)
        }
    }

    /// The bytes at the key as they are (nil: nothing there), whatever they hold.
    public func raw() throws -> [UInt8]? {
        try Self.read(file)
    }

    /// Writes the value atomically (a temporary beside it, then a rename) and returns once it is
    /// committed; the peers get it on their next round (at once where they listen).
    /// - Returns: the commit that holds it; nil when the rules hold the key back (`manual`, over
    ///   `max_bytes`, a receive-only device: ``SyncAgent/send(_:)`` shares it) or keep it on this
    ///   device only (`never`).
    @discardableResult
    public func set(_ value: T) async throws -> String? {
        let bytes: [UInt8]
        do { bytes = try coder.encode(value) } catch {
            throw SyncError(.other, "cannot encode the value for \(key): \(error); nothing was written", subject: key)
        }
        let file = self.file
        try await blocking("syncagent-kit-write") { try Self.write(bytes, to: file, key: key) }
        let result = try await agent.connection.commit([key])
        return result.held.contains(key) || result.local.contains(key) ? nil : result.commit
    }

    /// Removes the value, committed like any deletion (the peers remove it too).
    public func delete() async throws {
        let (file, key) = (self.file, self.key)
        try await blocking("syncagent-kit-delete") {
            do throws(Errno) { try Files.remove(file) } catch {
                if error != .noSuchFileOrDirectory { throw SyncError(.io, "cannot delete \(key): \(error)", subject: key) }
            }
        }
        _ = try await agent.connection.commit([key])
    }

    /// The current value first, then every change of it, local or received, with where it came
    /// from, until the iteration ends (which releases everything). A slow observer never holds the
    /// agent back: it gets the value as it is when it asks for the next one.
    public func updates() -> AsyncStream<ValueUpdate<T>> {
        KeyObservation(key: key, agent: agent, coder: coder).stream()
    }

    /// Where the key stands: synced, pending (changed, not committed yet), held, conflicted, and
    /// when each peer last synced.
    public func status() async throws -> KeyStatus {
        try await KeyStatus.of(key, agent: agent)
    }

    static func read(_ file: FilePath) throws -> [UInt8]? {
        do { return try Files.read(file) } catch {
            if error == .noSuchFileOrDirectory || error == .notDirectory { return nil }
            throw SyncError(.io, "cannot read \(file.display): \(error)", subject: file.display)
        }
    }

    static func write(_ bytes: [UInt8], to file: FilePath, key: String) throws {
        let dir = file.removingLastComponent()
        do throws(Errno) {
            try Files.makeDirectories(dir)
            var counter: UInt64 = 0
            let temp = AgentTemporary.path(in: dir, counter: &counter)
            try Files.create(temp, bytes: bytes, executable: false)
            // On disk before it takes the key's name: a crash never leaves an empty value there.
            _ = Durability.flushFiles([temp])
            do { try Files.rename(temp, to: file) } catch {
                try? Files.remove(temp)
                throw error
            }
            _ = Durability.flushFiles([], andDirectories: [dir])
        } catch {
            throw SyncError(error == .noSpace ? .diskFull : .io, "cannot write \(key) into \(dir.display): \(error); the value was not changed",
                            subject: key)
        }
    }
}
