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
    public static func begin(state: FilePath, bootID given: String? = nil) -> Bool {
        let path = file(state: state)
        let boot = given ?? bootID()
        let before = (try? Files.read(path)).map { String(decoding: $0, as: UTF8.self).trimmed(newlines: true) }
        if before != boot {
            try? Files.remove(path)
            if (try? Files.create(path, bytes: Array("\(boot)\n".utf8), executable: false)) != nil {
                Durability.flushReplaced(FilePath("session"), under: state)
            }
        }
        guard let before else { return false }
        return before != boot
    }

    /// The session ended cleanly.
    public static func end(state: FilePath) {
        try? Files.remove(file(state: state))
    }
}
