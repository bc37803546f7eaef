import FileSystem
import FoundationEssentials
import Glibc
import Platform
import SystemPackage

/// Whether the machine stopped under the store (a power cut, a crash of the system) since a
/// process last used it: `<state>/session` holds the boot id of the process holding the store,
/// made durable when it starts and removed when it stops cleanly. Found at the next start with
/// another boot id, the last one never stopped: the machine did. A `kill -9` leaves it with the
/// same boot id: everything written was in the kernel's cache, and nothing was lost.
public enum AgentSession {
    static func file(state: FilePath) -> FilePath { state.appending("session") }

    /// This boot's id (`/proc/sys/kernel/random/boot_id`); `SYNCAGENT_BOOT_ID` stands in for it in
    /// tests that simulate a power cut without rebooting.
    static func bootID() -> String {
        if let forced = getenv("SYNCAGENT_BOOT_ID") { return String(cString: forced) }
        let bytes = (try? Files.read(FilePath("/proc/sys/kernel/random/boot_id"))) ?? []
        return String(decoding: bytes, as: UTF8.self).trimmed(newlines: true)
    }

    /// Starts a session under the store's lock. True when the one before ended with the machine
    /// rather than with a clean stop or a kill (then files programs wrote without flushing them may
    /// be empty, short or older on disk than what the store recorded).
    /// When it is true, the file keeps the old boot id until `confirm` (the damage check ran): a
    /// process that stops before checking leaves the next one to check.
    public static func begin(state: FilePath, bootID given: String? = nil) -> Bool {
        let boot = given ?? bootID()
        let before = recorded(state: state)
        if let before, before != boot { return true }
        if before == nil { confirm(state: state, bootID: boot) }
        return false
    }

    /// This boot's id in the file, made durable: the check for a stopped machine was done.
    public static func confirm(state: FilePath, bootID given: String? = nil) {
        let path = file(state: state)
        try? Files.remove(path)
        if (try? Files.create(path, bytes: Array("\((given ?? bootID()))\n".utf8), executable: false)) != nil {
            Durability.flushReplaced(FilePath("session"), under: state)
        }
    }

    /// The session ended cleanly (a session whose check is still to come leaves it to the next).
    public static func end(state: FilePath, bootID given: String? = nil) {
        guard recorded(state: state) == (given ?? bootID()) else { return }
        try? Files.remove(file(state: state))
    }

    static func recorded(state: FilePath) -> String? {
        (try? Files.read(file(state: state))).map { String(decoding: $0, as: UTF8.self).trimmed(newlines: true) }
    }

    /// When this boot began, in seconds since the epoch (`btime` of /proc/stat); with
    /// `SYNCAGENT_BOOT_ID` set (a simulated cut), when this process started. A file changed after
    /// it was changed by someone after the machine came back: an edit, not damage.
    public static func bootTime() -> Int64 {
        if getenv("SYNCAGENT_BOOT_ID") != nil { return processStart }
        let text = String(decoding: (try? Files.read(FilePath("/proc/stat"))) ?? [], as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            if let value = Int64(line.dropFirst(6).trimmed()) { return value }
        }
        return Int64.max  // unknown: every file counts
    }

    static let processStart = Int64(time(nil))
}
