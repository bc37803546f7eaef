import Foundation
import SystemPackage
import Testing

@testable import FileSystem
@testable import SyncCore
import TestSupport

/// The pure parts of the notify channel: which ssh command reaches a hub, what `notify` accepts,
/// and what counts as a ref move.
@Suite struct SSHTargetTests {
    @Test(arguments: [
        ("ssh://git@hub.example/srv/family.git", SSHTarget(user: "git", host: "hub.example", port: nil, path: "/srv/family.git")),
        ("ssh://me@127.0.0.1:2222/tmp/x y.git", SSHTarget(user: "me", host: "127.0.0.1", port: 2222, path: "/tmp/x y.git")),
        ("ssh://nas/~/family.git", SSHTarget(user: nil, host: "nas", port: nil, path: "~/family.git")),
        ("ssh://[::1]:22/r.git", SSHTarget(user: nil, host: "::1", port: 22, path: "/r.git")),
        ("git+ssh://h/r.git", SSHTarget(user: nil, host: "h", port: nil, path: "/r.git")),
        ("me@nas.local:family.git", SSHTarget(user: "me", host: "nas.local", port: nil, path: "family.git")),
        ("nas:/srv/family.git", SSHTarget(user: nil, host: "nas", port: nil, path: "/srv/family.git")),
    ])
    func parsesSSHURLs(url: String, expected: SSHTarget) {
        #expect(SSHTarget(url: url) == expected)
    }

    @Test(arguments: ["/srv/family.git", "./family.git", "~/family.git", "file:///srv/x.git", "git://h/x.git",
                      "https://h/x.git", "ssh://h", "ssh://h:99999/x", "ssh://:22/x"])
    func refusesOtherURLs(url: String) {
        #expect(SSHTarget(url: url) == nil)
    }

    @Test func notifyCommandUsesThePeersKeyAndKnownHosts() {
        let target = SSHTarget(url: "ssh://me@127.0.0.1:2222/srv/it's.git")!
        let args = target.notifyCommand(identity: FilePath("/k/id"), knownHosts: FilePath("/k/known"))
        #expect(args.prefix(5) == ["ssh", "-p", "2222", "-i", "/k/id"])
        #expect(args.contains("BatchMode=yes"))
        #expect(args.contains("UserKnownHostsFile=/k/known"))
        #expect(args.suffix(2) == ["me@127.0.0.1", "syncagent notify-changes '/srv/it'\\''s.git'"])
    }

    @Test func homeRelativePathsStayForTheServersShell() {
        #expect(SSHTarget.shellQuoted("~/family.git") == "~/'family.git'")
        #expect(SSHTarget.shellQuoted("~git/a b") == "~git/'a b'")
        #expect(SSHTarget.shellQuoted("family.git") == "'family.git'")
        #expect(SSHTarget.shellQuoted("$(rm -rf /)") == "'$(rm -rf /)'")
        // A quote followed by a combining mark is one Character, still one quote to the shell.
        #expect(SSHTarget.shellQuoted("a'\u{301}; rm x") == "'a'\\''\u{301}; rm x'")
    }
}

@Suite struct NotifyConfigTests {
    private let file = FilePath("/home/u/syncagent.toml")
    private func parse(_ peer: String) throws -> PeerConfig {
        let text = "device = \"phone\"\ndata = \"/d\"\n[[peer]]\nname = \"hub\"\n" + peer
        return try Config.parse(text, file: file, environment: ["HOME": "/home/u"]).peers[0]
    }

    @Test func sshNotifyOnAnSSHURL() throws {
        let peer = try parse("url = \"ssh://git@h/f.git\"\nnotify = \"ssh\"\n")
        #expect(peer.notify == .ssh)
        #expect(try parse("url = \"ssh://git@h/f.git\"\n").notify == .poll)
    }

    @Test func sshNotifyOnAnotherURLIsRefusedWithTheFix() {
        #expect {
            try parse("url = \"https://h/f.git\"\nnotify = \"ssh\"\n")
        } throws: { error in
            "\(error)".contains("needs an ssh url") && "\(error)".contains("notify_command")
        }
    }

    @Test func notifyCommandForAnyURL() throws {
        let peer = try parse("url = \"https://h/f.git\"\nnotify_command = [\"watch-refs\", \"f\"]\n")
        #expect(peer.notify == .command)
        #expect(peer.notifyCommand == ["watch-refs", "f"])
    }

    @Test func bothWaysAtOnceIsRefused() {
        #expect(throws: ConfigError.self) {
            try parse("url = \"ssh://h/f.git\"\nnotify = \"ssh\"\nnotify_command = [\"x\"]\n")
        }
        #expect(throws: ConfigError.self) { try parse("url = \"ssh://h/f.git\"\nnotify = \"push\"\n") }
    }
}

@Suite struct RefSnapshotTests {
    private func bareRepository() throws -> TempDirectory {
        let repo = try TempDirectory("refsnap")
        for dir in ["refs/heads/devices", "objects"] { try repo.mkdir(dir) }
        return repo
    }

    private func id(_ c: Character) -> [UInt8] { Array(String(repeating: c, count: 40).utf8) }

    @Test func looseRefsOverPackedOnesAndLocksSkipped() throws {
        let temp = try bareRepository()
        let repo = temp.root
        let packed = "# pack-refs with: peeled\n\(String(repeating: "a", count: 40)) refs/heads/devices/phone\n"
            + "\(String(repeating: "b", count: 40)) refs/heads/devices/watch\n^\(String(repeating: "c", count: 40))\n"
        try packed.write(toFile: repo.appending("packed-refs").string, atomically: true, encoding: .utf8)
        try "\(String(repeating: "d", count: 40))\n".write(toFile: repo.appending("refs/heads/devices/phone").string, atomically: true, encoding: .utf8)
        try "\(String(repeating: "e", count: 40))\n".write(toFile: repo.appending("refs/heads/devices/car.lock").string, atomically: true, encoding: .utf8)
        let snap = RefSnapshot.read(gitDir: repo)
        #expect(snap.refs == [Array("refs/heads/devices/phone".utf8): id("d"), Array("refs/heads/devices/watch".utf8): id("b")])
    }

    /// A hub's refs are read at every round and remembered by their files' identity
    /// (`RememberedReads`): every way a ref moves is still seen at the next read: renamed over
    /// (git's way), rewritten in place with another length, removed, or packed.
    @Test func everyMoveIsSeenThroughTheMemo() throws {
        let temp = try bareRepository()
        let repo = temp.root
        let phone = repo.appending("refs/heads/devices/phone")
        func write(_ c: Character, atomically: Bool = true) throws {
            try "\(String(repeating: c, count: 40))\n".write(toFile: phone.string, atomically: atomically, encoding: .utf8)
        }
        func read() -> [UInt8]? { RefSnapshot.readHub(gitDir: repo).snapshot.refs[Array("refs/heads/devices/phone".utf8)] }
        try write("a")
        #expect(read() == id("a"))
        // Remembered once settled; read with no settling here so the memo is what answers next.
        _ = try RememberedReads.read(phone, root: repo, settledNanoseconds: 0)
        #expect(RememberedReads.remembers(phone) == LocalFileSystem.seesEveryChange(at: repo))
        #expect(read() == id("a"))
        try write("b")  // a new file renamed over it
        #expect(read() == id("b"))
        _ = try RememberedReads.read(phone, root: repo, settledNanoseconds: 0)
        try "\(String(repeating: "c", count: 40))\n\n".write(toFile: phone.string, atomically: false, encoding: .utf8)  // in place, longer
        #expect(read() == id("c"))
        _ = try RememberedReads.read(phone, root: repo, settledNanoseconds: 0)
        try FileManager.default.removeItem(atPath: phone.string)
        #expect(read() == nil)
        try "\(String(repeating: "d", count: 40)) refs/heads/devices/phone\n".write(toFile: repo.appending("packed-refs").string, atomically: true, encoding: .utf8)
        #expect(read() == id("d"))
    }

    /// The memo keeps no file written a moment ago (git's rule against racy files: a rewrite
    /// within the file system's clock tick could show the same inode and times), and answers as
    /// `Files.read` does for what is not a regular file.
    @Test func aFreshFileIsNotRememberedAndOddFilesFailAsBefore() throws {
        let temp = try TempDirectory("remembered")
        let file = temp.root.appending("ref")
        try "fresh\n".write(toFile: file.string, atomically: true, encoding: .utf8)
        let root = temp.root
        // (Written within the hour: not settled by that window, whatever the machine's load.)
        #expect(try RememberedReads.read(file, root: root, settledNanoseconds: 3_600_000_000_000) == Array("fresh\n".utf8))
        #expect(!RememberedReads.remembers(file))
        #expect(try RememberedReads.read(file, root: root, settledNanoseconds: 0) == Array("fresh\n".utf8))
        // Only where `lstat` tells a change (this machine's own file systems) is anything kept.
        #expect(RememberedReads.remembers(file) == LocalFileSystem.seesEveryChange(at: root))
        try FileManager.default.createSymbolicLink(atPath: root.appending("link").string, withDestinationPath: file.string)
        #expect(throws: Errno.tooManySymbolicLinkLevels) { try RememberedReads.read(root.appending("link"), root: root) }
        #expect(throws: Errno.noSuchFileOrDirectory) { try RememberedReads.read(root.appending("none"), root: root) }
        let big = [UInt8](repeating: 7, count: 200_000)
        try Data(big).write(to: URL(fileURLWithPath: root.appending("big").string))
        #expect(try RememberedReads.read(root.appending("big"), root: root, settledNanoseconds: 0) == big)
        #expect(!RememberedReads.remembers(temp.root.appending("big")))
    }

    /// A hub's round reads only the devices' refs (`Store.hubRefs`): the named directories and the
    /// packed refs under them, nothing else; a directory not there is no failure.
    @Test func onlyTheNamedDirectoriesAreRead() throws {
        let temp = try bareRepository()
        let repo = temp.root
        try temp.mkdir("refs/syncagent/devices/phone")
        try temp.mkdir("refs/heads/other")
        let packed = "\(String(repeating: "a", count: 40)) refs/heads/devices/watch\n\(String(repeating: "b", count: 40)) refs/heads/main\n"
        try packed.write(toFile: repo.appending("packed-refs").string, atomically: true, encoding: .utf8)
        for (name, c) in [("refs/heads/devices/phone", "c"), ("refs/syncagent/devices/phone/conflicts", "d"), ("refs/heads/other/x", "e")] {
            try "\(String(repeating: c, count: 40))\n".write(toFile: repo.appending(name).string, atomically: true, encoding: .utf8)
        }
        let read = RefSnapshot.read(gitDir: repo, under: ["refs/heads/devices/", "refs/syncagent/devices/", "refs/tags/none/"])
        #expect(read.whole)
        #expect(read.snapshot.refs == [Array("refs/heads/devices/watch".utf8): id("a"), Array("refs/heads/devices/phone".utf8): id("c"),
                                       Array("refs/syncagent/devices/phone/conflicts".utf8): id("d")])
        #expect(RefSnapshot.read(gitDir: repo).refs.count == 5)  // everything, as before
        // A packed-refs that cannot be read (here a directory): the read is not whole.
        let broken = try bareRepository()
        try broken.mkdir("packed-refs")
        #expect(!RefSnapshot.read(gitDir: broken.root, under: ["refs/heads/devices/"]).whole)
    }

    /// A hub's round (`Store.hubRefs`): the branches listed, each branch's records read by name
    /// (a loose file over its packed line), records of no branch left unread; what it gives is
    /// what libgit2 gives for those refs.
    @Test func aHubsRecordsAreReadByTheirBranchesNames() throws {
        let temp = try bareRepository()
        let repo = temp.root
        try "ref: refs/heads/main\n".write(toFile: repo.appending("HEAD").string, atomically: true, encoding: .utf8)
        try temp.mkdir("refs/syncagent/devices/phone")
        try temp.mkdir("refs/syncagent/devices/ghost")
        let packed = "# pack-refs with: peeled fully-peeled sorted \n"
            + "\(String(repeating: "a", count: 40)) refs/heads/devices/watch\n"
            + "\(String(repeating: "b", count: 40)) refs/syncagent/devices/phone/conflicts\n"
            + "\(String(repeating: "c", count: 40)) refs/syncagent/devices/watch/conflicts\n"
        try packed.write(toFile: repo.appending("packed-refs").string, atomically: true, encoding: .utf8)
        for (name, c) in [("refs/heads/devices/phone", "d"), ("refs/syncagent/devices/phone/conflicts", "e"),
                          ("refs/syncagent/devices/ghost/conflicts", "f")] {
            try "\(String(repeating: c, count: 40))\n".write(toFile: repo.appending(name).string, atomically: true, encoding: .utf8)
        }
        let refs = try Store.hubRefs(repo)
        let seen = Dictionary(uniqueKeysWithValues: refs.map { ($0.name, $0.tip.hex) })
        #expect(seen == ["refs/heads/devices/phone": String(repeating: "d", count: 40),
                         "refs/heads/devices/watch": String(repeating: "a", count: 40),
                         "refs/syncagent/devices/phone/conflicts": String(repeating: "e", count: 40),
                         "refs/syncagent/devices/watch/conflicts": String(repeating: "c", count: 40)])
        // A records file that cannot be read (a directory in its place): not whole, so libgit2 reads the hub.
        let broken = try bareRepository()
        try "\(String(repeating: "a", count: 40))\n".write(toFile: broken.root.appending("refs/heads/devices/phone").string, atomically: true, encoding: .utf8)
        try broken.mkdir("refs/syncagent/devices/phone/conflicts")
        var read = RefSnapshot.read(gitDir: broken.root, under: ["refs/heads/devices/"], packedUnder: ["refs/syncagent/devices/"])
        #expect(read.whole)
        let readRecords = read.snapshot.readLoose(gitDir: broken.root, names: [Array("refs/syncagent/devices/phone/conflicts".utf8)])
        #expect(!readRecords)
    }

    @Test func changesAreMovesNewRefsAndDeletions() {
        let before = RefSnapshot(refs: [Array("refs/a".utf8): id("a"), Array("refs/b".utf8): id("b")])
        let after = RefSnapshot(refs: [Array("refs/a".utf8): id("a"), Array("refs/c".utf8): id("c"), [0x72, 0xff]: id("f")])
        let moved = after.changes(since: before)
        #expect(moved.map(\.name) == [Array("refs/b".utf8), Array("refs/c".utf8), [0x72, 0xff]])
        #expect(moved[0].id == Array(String(repeating: "0", count: 40).utf8))
        #expect(after.changes(since: after).isEmpty)
    }
}
