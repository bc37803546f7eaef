import ArgumentParser
import Glibc
import HubSeal
import SyncCore
import SystemPackage

/// `syncagent key`: an encrypted hub's key (issue 48).
struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Make an encrypted hub's key, or name a device's branch on it.",
        discussion: """
            A hub peer with `key_file = "FILE"` stores only ciphertext on the hub: names, contents, \
            sizes (rounded up), commit messages, times and device names. Make the key once with \
            `syncagent key new FILE`, copy FILE to every device of the hub (it is printable: type \
            it in if need be), and set key_file in each one's [[peer]] hub table. A file holding \
            `passphrase: WORDS` instead derives the key from the words (scrypt).

            Example: syncagent key new ~/.config/syncagent/family.key
            """,
        subcommands: [KeyNew.self, KeyRef.self]
    )
}

struct KeyNew: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new", abstract: "Write a new random hub key to FILE (mode 0600; never over an existing file).",
        discussion: "Example: syncagent key new ~/.config/syncagent/family-hub.key")

    @Argument(help: "Where to write it.") var file: String

    func run() throws {
        let secret = HubKey.random()
        let path = FilePath(file)
        let text = HubKey.text(secret) + "\n"
        do {
            let fd = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate], permissions: [.ownerReadWrite])
            try fd.closeAfter { _ = try fd.writeAll(text.utf8) }
        } catch Errno.fileExists {
            throw UserFacingError("\(file) exists already; a key is never overwritten (the hub's data would be lost with it). Choose another name.")
        }
        print("""
            wrote the hub key to \(file):
              \(text.dropLast())
            Copy it to every device of the hub and add to each one's hub [[peer]]:
              key_file = "\(file)"
            Keep a copy somewhere safe: without it nothing on the hub can be read.
            """)
    }
}

struct KeyRef: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ref", abstract: "Print the branch a device pushes to on the encrypted hub (for gitolite rules).",
        discussion: "Example: syncagent key ref --key-file hub.key --device phone")

    @Option(name: .long, help: "The hub's key file.") var keyFile: String
    @Option(name: .long, help: "The device's name.") var device: String

    func run() throws {
        // Read as the agent reads a hub's key_file: the key's text, or `passphrase: WORDS`.
        let key = try PeerLink.loadKey(FilePath(keyFile), peer: "(key ref)").mapError { UserFacingError($0.message) }.get()
        print("refs/heads/devices/\(key.deviceBranch(device))")
    }
}
