import CLibgit2
import Foundation
@testable import Git
@testable import ObjectStorage
import Platform
import PropertyBased
import SystemPackage
import Testing
import TestSupport

@Suite struct RepositoryTests {
    let sig = Signature(name: "phone", email: "phone@syncagent", time: 1_700_000_000)

    @Test func newStoreHasUnbornMainAndNoGitInData() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        #expect(try repo.headCommit() == nil)
        #expect(!FileManager.default.fileExists(atPath: t.data.appending(".git").string))
        let head = try String(contentsOfFile: t.gitDir.appending("HEAD").string, encoding: .utf8)
        #expect(head == "ref: refs/heads/main\n")
    }

    /// A new store whose index holds `a.txt`, and the tree written from it.
    func storeWithOneFile() throws -> (TempDevice, Repository, tree: Oid) {
        let t = try TempDevice()
        try t.write("a.txt", "hello\n")
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        _ = try index.add("a.txt")
        return (t, repo, try index.writeTree())
    }

    /// A system call that fails under libgit2 comes up with its errno, so a full disk is known by
    /// `ENOSPC`: here the ref log libgit2 appends to is /dev/full.
    @Test func aFullDiskUnderLibgit2IsKnownByItsErrno() throws {
        let (t, repo, tree) = try storeWithOneFile()
        try FileManager.default.createDirectory(atPath: t.gitDir.appending("logs").string, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: t.gitDir.appending("logs/HEAD").string, withDestinationPath: "/dev/full")
        do {
            _ = try repo.createCommit(tree: tree, parents: [], author: sig, committer: sig, message: "first\n", updateRef: "HEAD")
            Issue.record("a ref log was written to /dev/full")
        } catch {
            #expect(error.osError == ENOSPC, "\(error)")
            #expect(error.isDiskFull)
        }
        #expect(osError(endingMessage: "disk full, says the server") == nil)
    }

    /// Inside `withoutCachingTrees` no tree enters libgit2's object cache: the same small tree
    /// looked up twice is parsed twice (two objects), also after a nested scope has ended (the
    /// outer one still holds). Outside, libgit2 hands out its cached object again (judged only
    /// when no other test's scope ran meanwhile: the switch is process-wide).
    @Test func treesReadInsideTheScopeAreNotCached() throws {
        let (t, _, tree) = try storeWithOneFile()
        // A handle of its own, whose cache holds nothing yet (writing the tree may have cached it
        // in `repo`'s).
        let reader = try Repository.open(gitDir: t.gitDir, workdir: t.data)
        func lookedUpTwice() throws -> Bool {
            var raw = tree.raw
            var first: OpaquePointer?, second: OpaquePointer?
            try check(git_tree_lookup(&first, reader.handle, &raw), "git_tree_lookup")
            defer { git_tree_free(first) }
            try check(git_tree_lookup(&second, reader.handle, &raw), "git_tree_lookup")
            defer { git_tree_free(second) }
            return first == second
        }
        let inside = try Libgit2.withoutCachingTrees { () throws -> [Bool] in
            let outer = try lookedUpTwice()
            let nested = try Libgit2.withoutCachingTrees { () throws -> Bool in try lookedUpTwice() }
            return [outer, nested, try lookedUpTwice()]
        }
        #expect(inside == [false, false, false])
        // Outside: only judged when no other test's scope ran at any time around the lookups.
        let before = Libgit2.treeCaching
        let same = try lookedUpTwice()
        let after = Libgit2.treeCaching
        if before.running == 0, after.running == 0, before.begun == after.begun { #expect(same) }
    }

    /// The stamped mark lives in the entry (a bit libgit2 keeps in memory only): set by a stamped
    /// add, gone when the entry is replaced, removed, under a removed directory, or the index is
    /// read again (changed on disk or not), and never written: the file stays version 2 with no
    /// extended flags, and git reads it.
    @Test func aStampedMarkGoesWithItsEntryAndNeverReachesTheFile() throws {
        let t = try TempDevice()
        try t.write("a.txt", "hello\n")
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        #expect(try index.add("a.txt") == .added)
        let blob = try #require(index.entry("a.txt")).oid
        let stat = IndexStat(size: 6, mtimeSeconds: 1_700_000_000, mtimeNanoseconds: 1, ctimeSeconds: 1_700_000_000,
                             ctimeNanoseconds: 1, inode: 7, device: 1)
        for path: FilePath in ["a.txt", "d/b.txt", "d/c.txt", "e.txt", "f.txt"] {
            try index.add(path, blob: blob, mode: 0o100644, stat: stat, stamped: true)
        }
        try index.add("g.txt", blob: blob, mode: 0o100644, stat: stat)
        #expect(index.isStamped("a.txt") && index.isStamped("d/b.txt") && index.isStamped("e.txt"))
        #expect(!index.isStamped("g.txt") && !index.isStamped("missing.txt"))
        try index.add("e.txt", blob: blob, mode: 0o100644, stat: stat)  // replaced, not stamped
        try index.add("f.txt", blob: blob, mode: 0o100644)
        try index.removeDirectory("d")
        #expect(!index.isStamped("d/b.txt") && !index.isStamped("d/c.txt"), "gone with their directory")
        try index.add("d/b.txt", blob: blob, mode: 0o100644, stat: stat)
        #expect(index.isStamped("a.txt"))
        #expect(!index.isStamped("e.txt") && !index.isStamped("f.txt") && !index.isStamped("d/b.txt"))
        try index.remove("a.txt")
        #expect(!index.isStamped("a.txt"))
        try index.add("a.txt", blob: blob, mode: 0o100644, stat: stat)
        #expect(!index.isStamped("a.txt"))

        try index.add("h.txt", blob: blob, mode: 0o100644, stat: stat, stamped: true)
        try index.write()
        #expect(index.isStamped("h.txt"))
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: t.gitDir.appending("index").string)))
        #expect(Array(bytes[0..<8]) == Array("DIRC".utf8) + [0, 0, 0, 2], "an index with extended flags would be version 3")
        try index.read()  // the file did not change: libgit2 keeps the entries, the marks go
        #expect(!index.isStamped("h.txt") && index.entry("h.txt") != nil)
        try index.add("h.txt", blob: blob, mode: 0o100644, stat: stat, stamped: true)
        try index.read(force: true)
        #expect(!index.isStamped("h.txt"))
        let listed = try git(t.gitDir, ["ls-files", "--stage", "--", "h.txt"])
        #expect(listed.status == 0 && String(decoding: listed.out, as: UTF8.self).contains("h.txt"), "git reads the index")
    }

    @Test func addWriteTreeCommitAndReopen() throws {
        let t = try TempDevice()
        try t.write("a.txt", "hello\n")
        try t.write("dir/b.txt", "world\n")
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        #expect(try index.add("a.txt") == .added)
        #expect(try index.add("dir/b.txt") == .added)
        #expect(try index.add("missing.txt") == .missing)
        let tree = try index.writeTree()
        let id = try repo.createCommit(tree: tree, parents: [], author: sig, committer: sig, message: "first\n", updateRef: "HEAD")
        try index.write()

        let reopened = try Repository.open(gitDir: t.gitDir, workdir: t.data)
        #expect(try reopened.headCommit() == id)
        let info = try reopened.commit(id)
        #expect(info.author == sig)
        #expect(info.parents.isEmpty)
        let files = try reopened.treeFiles(info.tree)
        #expect(files.map(\.path) == ["a.txt", "dir/b.txt"])
        #expect(try reopened.blobData(files[0].oid) == Array("hello\n".utf8))
        #expect(try reopened.index().entry("dir/b.txt") != nil)
    }

    @Test func indexRemovesDirectoriesAndListsPrefixes() throws {
        let t = try TempDevice()
        try t.write("d/x", "1")
        try t.write("d/y/z", "2")
        try t.write("d-other", "3")
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        for p in ["d/x", "d/y/z", "d-other"] { _ = try index.add(FilePath(p)) }
        #expect(index.entries(under: "d").map(\.path) == ["d/x", "d/y/z"])
        try index.removeDirectory("d")
        #expect(index.entries().map(\.path) == ["d-other"])
        try index.remove("d-other")
        try index.remove("never-there")
        #expect(index.count == 0)
    }

    /// `diffTrees` walks both trees in git's order (a subtree sorts as "name/"), so names that
    /// sort differently as entries and as paths ("a", "a.b", "a/") come out in path byte order,
    /// the same set libgit2's diff finds. A tree a peer made out of order gives the same answer.
    @Test func treeDiffInGitOrderAndOutOfOrder() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let x = try repo.createBlob(Array("x\n".utf8)), y = try repo.createBlob(Array("y\n".utf8))
        func tree(_ lines: String) throws -> Oid {
            let file = t.root.appending("tree.txt")
            try Data(lines.utf8).write(to: URL(fileURLWithPath: file.string))
            let made = try runProgram("/bin/sh", ["-c", "git --git-dir='\(t.gitDir)' mktree < '\(file)'"])
            return try #require(Oid(hex: String(decoding: made.out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        let sub = try tree("100644 blob \(x)\tin\n")
        let subChanged = try tree("100644 blob \(y)\tin\n100644 blob \(x)\tnew\n")
        let old = try tree("100644 blob \(x)\ta\n100644 blob \(x)\ta.b\n040000 tree \(sub)\ta-\n100644 blob \(x)\tz\n")
        // "a" becomes a directory, "a.b" changes, "a-/" changes inside, "z" goes, "b" comes.
        let new = try tree("040000 tree \(subChanged)\ta\n100644 blob \(y)\ta.b\n040000 tree \(subChanged)\ta-\n100644 blob \(x)\tb\n")
        let changes = try repo.diffTrees(old, new)
        #expect(changes.map(\.path) == ["a", "a-/in", "a-/new", "a.b", "a/in", "a/new", "b", "z"])
        #expect(changes == (try repo.diffTreesReadingEverything(old, new)))
        // The same entries as `new`, listed in reverse (git mktree would sort them): raw bytes.
        var raw: [UInt8] = []
        for (mode, name, id) in [("100644", "b", x), ("40000", "a-", subChanged), ("100644", "a.b", y), ("40000", "a", subChanged)] {
            raw += Array("\(mode) \(name)".utf8) + [0] + withUnsafeBytes(of: id.raw.id) { Array($0) }
        }
        let file = t.root.appending("tree.raw")
        try Data(raw).write(to: URL(fileURLWithPath: file.string))
        let hashed = try git(t.gitDir, ["hash-object", "-t", "tree", "--literally", "-w", file.string])
        let unordered = try #require(Oid(hex: String(decoding: hashed.out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(unordered != new)
        #expect(try repo.diffTrees(old, unordered) == changes)
        // A blob and a subtree of one name (hand-made): one of them, never a file and a directory
        // at one path.
        let both = try tree("100644 blob \(x)\ta\n100644 blob \(x)\ta.b\n040000 tree \(sub)\ta\n")
        let paths = try repo.diffTrees(nil, both).map(\.path)
        #expect(!(paths.contains("a") && paths.contains("a/in")))
    }

    /// The trees a step from one tree to another wrote: the new root and each subtree whose id
    /// differs at its path (a merge flushes exactly these), none that both share.
    @Test func treesDifferingAreTheNewRootAndTheSubtreesAlongTheChanges() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let x = try repo.createBlob(Array("x\n".utf8)), y = try repo.createBlob(Array("y\n".utf8))
        let file = { (id: Oid) in TreeEdit.entry(ConflictSide(oid: id, mode: 0o100644)) }
        let base = try repo.updateTree(nil, edits: [("a/deep/x", file(x)), ("b/y", file(y)), ("c/z", file(x))])
        let next = try repo.updateTree(base, edits: [("b/y", file(x)), ("d/new/w", file(y)), ("c/z", .remove)])
        let differing = try repo.treesDiffering(base, next)
        var expected = [next]
        for dir in ["b", "d", "d/new"] { expected.append(try #require(try repo.entry(at: FilePath(dir), inTree: next)).oid) }
        #expect(Set(differing) == Set(expected))
        #expect(differing.count == expected.count)
        #expect(!differing.contains(try #require(try repo.entry(at: "a", inTree: next)).oid), "a is the same tree on both sides")
        #expect(try repo.treesDiffering(base, base).isEmpty)
        #expect(try repo.treesDiffering(nil, base).count == 5)  // root, a, a/deep, b, c
    }

    @Test func commitWithStaleParentIsRefused() throws {
        let t = try TempDevice()
        try t.write("a", "1")
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        _ = try index.add("a")
        let tree = try index.writeTree()
        let first = try repo.createCommit(tree: tree, parents: [], author: sig, committer: sig, message: "1", updateRef: "HEAD")
        _ = try repo.createCommit(tree: tree, parents: [first], author: sig, committer: sig, message: "2", updateRef: "HEAD")
        // HEAD moved past `first`: a commit claiming `first` as its parent must not move it.
        #expect(throws: GitError.self) {
            try repo.createCommit(tree: tree, parents: [first], author: sig, committer: sig, message: "3", updateRef: "HEAD")
        }
    }

    @Test func symlinkIsStoredAsLink() throws {
        let t = try TempDevice()
        try FileManager.default.createSymbolicLink(atPath: t.data.appending("etc").string, withDestinationPath: "/etc")
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        #expect(try index.add("etc") == .added)
        let entry = try #require(index.entry("etc"))
        #expect(entry.isLink)
        #expect(try repo.blobData(entry.oid) == Array("/etc".utf8))
    }

    @Test func byteExactNames() throws {
        let t = try TempDevice()
        let names: [[UInt8]] = [Array("line\nbreak".utf8), [0xff, 0xfe, 0x41], Array(repeating: UInt8(ascii: "n"), count: 250)]
        for name in names {
            let path = t.data.pushing(FilePath(bytes: name))
            let created = path.withPlatformString { creat($0, 0o644) }
            #expect(created >= 0)
            close(created)
        }
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        for name in names { #expect(try index.add(FilePath(bytes: name)) == .added) }
        let tree = try index.writeTree()
        let stored = Set(try repo.treeFiles(tree).map(\.path.bytes))
        #expect(stored == Set(names))
    }

    /// Reading a file for a commit leaves its access time alone (`O_NOATIME`): relatime would set
    /// it on the first read after each write, a journal entry per committed file. A plain read of
    /// the same file first shows that this file system keeps access times.
    @Test func readingAFileForACommitLeavesItsAccessTime() throws {
        let t = try TempDevice()
        try t.write("photo.jpg", "bytes\n")
        let path = t.data.appending("photo.jpg")
        func setAccessTime(_ seconds: Int) {
            var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
            #expect(path.withPlatformString { utimensat(AT_FDCWD, $0, &times, 0) } == 0)
        }
        func accessTime() -> Int {
            var st = stat()
            _ = path.withPlatformString { stat($0, &st) }
            return st.st_atim.tv_sec
        }
        setAccessTime(1_000_000_000)  // older than the file's last write: relatime sets it on the next read
        _ = FileManager.default.contents(atPath: path.string)
        #expect(accessTime() != 1_000_000_000, "a plain read did not set the access time: is \(t.root) mounted noatime?")
        setAccessTime(1_000_000_000)
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        guard case .written = try repo.writeBlob(fromFile: path) else {
            Issue.record("photo.jpg was not read")
            return
        }
        #expect(accessTime() == 1_000_000_000)
    }

    /// A file of another owner (readable by all) is still read: `O_NOATIME` is refused (EPERM)
    /// to anyone but the owner, and `openToRead` goes on without it. Run as root, the thread takes
    /// the file-system identity of `nobody` (setfsuid drops CAP_FOWNER with it), then its own back.
    @Test func aFileOfAnotherOwnerIsReadWithoutNoAtime() throws {
        let t = try TempDevice()
        try t.write("shared.txt", "bytes\n")
        // nobody must reach it: the test's own directories only (the temporary directory above
        // them lets anyone through)
        for dir in [t.root, t.data] { _ = dir.withPlatformString { chmod($0, 0o755) } }
        let path = t.data.appending("shared.txt")
        _ = path.withPlatformString { chmod($0, 0o644) }
        let previous = linuxSetfsuid(65534)
        let refused = path.withPlatformString { open($0, O_RDONLY | O_CLOEXEC | 0o1000000 /* O_NOATIME */) }
        let refusedWith = errno
        let fd = path.withPlatformString { openToRead($0, flags: O_RDONLY | O_CLOEXEC) }
        _ = linuxSetfsuid(UInt32(bitPattern: previous))
        #expect(linuxSetfsuid(UInt32.max) == previous)  // (asks without changing: back as before)
        #expect(refused < 0 && refusedWith == EPERM, "O_NOATIME was not refused to another owner: the test proves nothing here")
        #expect(fd >= 0, "a file readable by all was not opened under another owner's identity: errno \(errno)")
        if refused >= 0 { close(refused) }
        if fd >= 0 { close(fd) }
    }

    @Test func errorsNameTheCallAndPath() throws {
        let t = try TempDevice()
        do {
            _ = try Repository.open(gitDir: t.root.appending("nowhere.git"), workdir: t.data)
            Issue.record("opening a missing store must fail")
        } catch {
            #expect(error.call.contains("git_repository_open_ext"))
            #expect(error.call.contains("nowhere.git"))
            #expect(error.code == GitError.Code.notFound)
            #expect(!error.message.isEmpty)
        }
    }
}

/// `isReachable` answers from memory (`CommitGraph`); libgit2's own walk is the reference it is
/// held to, on random histories with merges (octopus joins and unrelated roots included).
@Suite struct CommitGraphTests {
    @Test func reachabilityAgreesWithLibgit2() async throws {
        await propertyCheck(count: 25, input: Gen.int(in: 0...1_000_000).array(of: 400...400)) { draws in
            do {
                try Self.check(draws)
            } catch {
                Issue.record("draws \(draws): \(error)")
            }
        }
    }

    /// A history longer than the memory limit: each question may go past it (the memory is given
    /// back between questions), and every answer stays right.
    @Test(.timeLimit(.minutes(1))) func aHistoryLongerThanTheLimitIsStillAnswered() throws {
        let (t, repo, tree) = try Self.storeWithOneTree()
        defer { withExtendedLifetime(t) {} }  // its directory lives as long as the test
        var chain: [Oid] = []
        for i in 0..<40 { chain.append(try Self.commit(i, parents: chain.suffix(1), tree: tree, in: repo)) }
        repo.graph = SharedCommitGraph(limit: 10)
        for _ in 0..<3 {
            #expect(try repo.isReachable(chain[0], fromAny: [chain[39]]))
            #expect(try !repo.isReachable(chain[39], fromAny: [chain[0]]))
            #expect(try repo.isReachable(chain[17], fromAny: [chain[25]]))
        }
    }

    /// A history that grows past the limit, asked about its newest commits as it grows (what an
    /// agent does for months): past the limit the older half is forgotten, not everything, so
    /// each question reads only the commits new since the last one; an old commit is still
    /// answered right (read again).
    @Test func aGrowingHistoryPastTheLimitIsNotReadAgainAtEachQuestion() throws {
        let (t, repo, tree) = try Self.storeWithOneTree()
        defer { withExtendedLifetime(t) {} }
        let graph = CommitGraph(limit: 40)
        var reads = 0
        let read: (Oid) throws(GitError) -> [Oid] = { id throws(GitError) in
            reads += 1
            return try repo.commit(id).parents
        }
        var chain: [Oid] = []
        for i in 0..<300 {
            chain.append(try Self.commit(i, parents: chain.suffix(1), tree: tree, in: repo))
            if i >= 3 {
                #expect(try graph.isReachable(chain[i - 3], fromAny: [chain[i]], read: read))
                #expect(try !graph.isReachable(chain[i], fromAny: [chain[i - 1]], read: read))
            }
        }
        // Each commit read about once (forgetting everything read the chain again at each question).
        #expect(reads < 2 * chain.count, "\(reads) commit reads for a chain of \(chain.count)")
        #expect(try graph.isReachable(chain[5], fromAny: [chain[299]], read: read))
        #expect(try !graph.isReachable(chain[299], fromAny: [chain[5]], read: read))
    }

    /// A new store whose one tree (a file `f`) every test commit uses: the histories are the point.
    static func storeWithOneTree() throws -> (TempDevice, Repository, Oid) {
        let t = try TempDevice()
        try t.write("f", "x\n")
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        _ = try index.add("f")
        return (t, repo, try index.writeTree())
    }

    /// Commit number `i` of a test history (its own time and message, so ids differ).
    static func commit(_ i: Int, parents: [Oid], tree: Oid, in repo: Repository) throws -> Oid {
        let sig = Signature(name: "d\(i % 5)", email: "d@syncagent", time: 1_700_000_000 + Int64(i))
        return try repo.createCommit(tree: tree, parents: parents, author: sig, committer: sig, message: "c\(i)\n", updateRef: nil)
    }

    /// 60 commits whose parents come from `draws`, then 6 questions per commit.
    static func check(_ draws: [Int]) throws {
        var next = draws.makeIterator()
        func draw(_ n: Int) -> Int { (next.next() ?? 0) % n }
        let (t, repo, tree) = try Self.storeWithOneTree()
        var commits: [Oid] = []
        for i in 0..<60 {
            var parents: Set<Oid> = []
            if !commits.isEmpty, draw(8) != 0 {  // a few roots: unrelated histories too
                for _ in 0..<(1 + draw(draw(4) == 0 ? 5 : 2)) { parents.insert(commits[draw(commits.count)]) }
            }
            commits.append(try Self.commit(i, parents: Array(parents).sorted(), tree: tree, in: repo))
        }
        // A handle of its own for libgit2's answers (libgit2 keeps no graph between calls).
        let reference = try Repository.open(gitDir: t.gitDir, workdir: t.data)
        for target in commits {
            for _ in 0..<6 {
                let from = (0..<(1 + draw(3))).map { _ in commits[draw(commits.count)] }
                #expect(try repo.isReachable(target, fromAny: from) == reference.isReachableByLibgit2(target, fromAny: from),
                        "is \(target) reachable from \(from)")
                let other = commits[draw(commits.count)]
                #expect(try repo.isDescendant(other, of: target) == reference.isDescendantByLibgit2(other, of: target),
                        "is \(other) a descendant of \(target)")
            }
        }
        #expect(try !repo.isReachable(commits[0], fromAny: []))
        // The walks for many at once (`reachable`, `independent`) against libgit2, one question
        // each. (The draws are used up by now: a generator seeded from them picks the commits.)
        var state = UInt64(truncatingIfNeeded: draws.reduce(17) { $0 &* 31 &+ $1 })
        func pick(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        for _ in 0..<20 {
            let targets = (0..<(2 + pick(10))).map { _ in commits[pick(commits.count)] }
            let from = (0..<(1 + pick(4))).map { _ in commits[pick(commits.count)] }
            let expected = Set(try targets.filter { try reference.isReachableByLibgit2($0, fromAny: from) })
            #expect(try repo.reachable(targets, fromAny: from) == expected, "which of \(targets) are reachable from \(from)")
            var once: [Oid] = []
            for t in targets where !once.contains(t) { once.append(t) }
            let independent = try once.filter { t in try !once.contains { try $0 != t && reference.isDescendantByLibgit2($0, of: t) } }
            #expect(try repo.independent(targets) == independent, "the independent ones of \(targets)")
        }
        #expect(try repo.reachable([commits[0]], fromAny: []).isEmpty)
    }
}

/// `resolveReference` reads loose refs itself and remembers them by their files' identity: every
/// way a ref moves (libgit2, this module's writes, git's CLI, a rewrite in place, packing, a
/// symbolic `HEAD` moved) is seen at the next question.
@Suite struct LooseRefMemoTests {
    @Test func everyMoveOfARefIsSeen() throws {
        let (t, repo, tree) = try CommitGraphTests.storeWithOneTree()
        defer { withExtendedLifetime(t) {} }
        var c: [Oid] = []
        for i in 0..<6 { c.append(try CommitGraphTests.commit(i, parents: c.suffix(1), tree: tree, in: repo)) }
        try repo.setReference("refs/heads/main", to: c[0], message: "t")
        #expect(try repo.headCommit() == c[0])
        #expect(try repo.headCommit() == c[0])  // (remembered)
        try repo.setReference("refs/heads/main", to: c[1], message: "t")  // libgit2
        #expect(try repo.headCommit() == c[1])
        try repo.writeLooseRef("refs/heads/main", to: c[2])  // this module
        #expect(try repo.resolveReference("refs/heads/main") == c[2])
        #expect(try git(t.gitDir, ["update-ref", "refs/heads/main", c[3].hex]).status == 0)  // git
        #expect(try repo.headCommit() == c[3])
        // Rewritten in place, same inode and size (no git does so): its times tell.
        let main = t.gitDir.appending("refs/heads/main")
        let fd = open(main.string, O_WRONLY)
        #expect(fd >= 0)
        _ = Array((c[4].hex + "\n").utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        close(fd)
        #expect(try repo.headCommit() == c[4])
        // Packed, the loose file gone: libgit2 answers from packed-refs.
        #expect(try git(t.gitDir, ["pack-refs", "--all"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: main.string))
        #expect(try repo.headCommit() == c[4])
        // HEAD moved to another branch; then a damaged loose ref is libgit2's to refuse.
        try repo.writeLooseRef("refs/heads/other", to: c[5])
        #expect(try git(t.gitDir, ["symbolic-ref", "HEAD", "refs/heads/other"]).status == 0)
        #expect(try repo.headCommit() == c[5])
        try TempDirectory.write("not an id\n", at: t.gitDir.appending("refs/heads/other"))
        #expect(throws: GitError.self) { try repo.headCommit() }
        #expect(try repo.resolveReference("refs/heads/none") == nil)
    }

    /// The memo itself, with every file counted as settled: each move is still seen, a rewrite in
    /// place (same inode and size) by its times. With git's rule against racy files (the
    /// default), a ref written a moment ago is not remembered at all.
    @Test func theMemoSeesEveryMoveAndKeepsNoFreshFile() throws {
        let (t, repo, tree) = try CommitGraphTests.storeWithOneTree()
        defer { withExtendedLifetime(t) {} }
        var c: [Oid] = []
        for i in 0..<4 { c.append(try CommitGraphTests.commit(i, parents: c.suffix(1), tree: tree, in: repo)) }
        var memo = LooseRefMemo(settledNanoseconds: 0)
        try repo.writeLooseRef("refs/heads/main", to: c[0])
        #expect(memo.resolve("HEAD", in: t.gitDir) == c[0])
        #expect(memo.count == 2)  // HEAD and main
        #expect(memo.resolve("HEAD", in: t.gitDir) == c[0])
        try repo.writeLooseRef("refs/heads/main", to: c[1])
        #expect(memo.resolve("HEAD", in: t.gitDir) == c[1])
        let main = t.gitDir.appending("refs/heads/main")
        let fd = open(main.string, O_WRONLY)
        _ = Array((c[2].hex + "\n").utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        close(fd)
        #expect(memo.resolve("refs/heads/main", in: t.gitDir) == c[2])
        var fresh = LooseRefMemo()
        try repo.writeLooseRef("refs/heads/main", to: c[3])
        #expect(fresh.resolve("refs/heads/main", in: t.gitDir) == c[3])
        #expect(fresh.count == 0)
    }
}

/// `writePackedRefs`: many refs in one rewrite of `packed-refs`; git and libgit2 read what it wrote.
@Suite struct PackedRefsTests {
    private func hex(_ c: Character) -> [UInt8] { Array(String(repeating: c, count: 40).utf8) }

    @Test func aRewriteKeepsEveryOtherLineAndSortsByName() {
        let old = Array(("# pack-refs with: peeled \n" + String(repeating: "a", count: 40) + " refs/tags/v1\n^" + String(repeating: "b", count: 40)
            + "\n" + String(repeating: "c", count: 40) + " refs/remotes/hub/d02/main\n^" + String(repeating: "d", count: 40) + "\n").utf8)
        let out = PackedRefs.rewrite(old, with: [(Array("refs/remotes/hub/d02/main".utf8), hex("e")),
                                                 (Array("refs/hubs/hub/heads/d01".utf8), hex("f"))])
        let expected = "# pack-refs with: peeled \n" + String(repeating: "f", count: 40) + " refs/hubs/hub/heads/d01\n"
            + String(repeating: "e", count: 40) + " refs/remotes/hub/d02/main\n"
            + String(repeating: "a", count: 40) + " refs/tags/v1\n^" + String(repeating: "b", count: 40) + "\n"
        #expect(String(decoding: out, as: UTF8.self) == expected)
        // An old file out of order, with no header: sorted, no header claimed; the last of two moves wins.
        let unsorted = Array((String(repeating: "1", count: 40) + " refs/b\n" + String(repeating: "2", count: 40) + " refs/a").utf8)
        #expect(String(decoding: PackedRefs.rewrite(unsorted, with: [(Array("refs/c".utf8), hex("3")), (Array("refs/c".utf8), hex("4"))]), as: UTF8.self)
                == String(repeating: "2", count: 40) + " refs/a\n" + String(repeating: "1", count: 40) + " refs/b\n"
                + String(repeating: "4", count: 40) + " refs/c\n")
        // No file yet: git's header, then the refs.
        #expect(PackedRefs.rewrite([], with: [(Array("refs/a".utf8), hex("1"))])
                == PackedRefs.header + hex("1") + Array(" refs/a\n".utf8))
    }

    @Test func manyRefsAreWrittenAtOnceOverLooseOnesAndReadByGitAndLibgit2() throws {
        let (t, repo, tree) = try CommitGraphTests.storeWithOneTree()
        defer { withExtendedLifetime(t) {} }
        var commits: [Oid] = []
        for i in 0..<4 { commits.append(try CommitGraphTests.commit(i, parents: commits.suffix(1), tree: tree, in: repo)) }
        // A loose ref hides a packed one: the packed write removes it.
        try repo.writeLooseRef("refs/hubs/h/heads/d01", to: commits[0])
        try repo.writePackedRefs([("refs/hubs/h/heads/d01", commits[1]), ("refs/remotes/h/d01/main", commits[1])])
        #expect(!FileManager.default.fileExists(atPath: t.gitDir.appending("refs/hubs/h/heads/d01").string))
        #expect(try repo.resolveReference("refs/hubs/h/heads/d01") == commits[1])
        // Rewritten at once again and again: libgit2's cache of the file follows every rewrite.
        for (i, c) in commits.enumerated() {
            try repo.writePackedRefs([("refs/hubs/h/heads/d01", c), ("refs/hubs/h/heads/d0\(i + 2)", c)])
            #expect(try repo.resolveReference("refs/hubs/h/heads/d01") == c)
            #expect(try repo.resolveReference("refs/remotes/h/d01/main") == commits[1])
        }
        #expect(try repo.references(matching: "refs/hubs/h/heads/*").count == 5)
        let shown = try git(t.gitDir, ["for-each-ref", "--format=%(objectname) %(refname)", "refs/hubs/", "refs/remotes/"])
        #expect(String(decoding: shown.out, as: UTF8.self) == ([commits[3].hex + " refs/hubs/h/heads/d01"]
            + (0..<4).map { "\(commits[$0].hex) refs/hubs/h/heads/d0\($0 + 2)" } + [commits[1].hex + " refs/remotes/h/d01/main"])
            .joined(separator: "\n") + "\n")
        #expect(try git(t.gitDir, ["pack-refs", "--all"]).status == 0)  // git takes the file as its own
        #expect(try repo.resolveReference("refs/hubs/h/heads/d03") == commits[1])
        // Another writer's lock: nothing written, the lock left to its owner.
        let lock = t.gitDir.appending("packed-refs.lock")
        try TempDirectory.write("x", at: lock)
        let refused = #expect(throws: GitError.self) { try repo.writePackedRefs([("refs/hubs/h/heads/d01", commits[0])]) }
        #expect(refused?.message.contains("remove \(lock)") == true, "the error names the lock to remove: \(String(describing: refused))")
        #expect(try repo.resolveReference("refs/hubs/h/heads/d01") == commits[3])
        #expect(FileManager.default.fileExists(atPath: lock.string))
        try FileManager.default.removeItem(atPath: lock.string)
        // A name git would refuse never reaches the file.
        #expect(throws: GitError.self) { try repo.writePackedRefs([("refs/hubs/h/../../x", commits[0])]) }
    }
}

/// setfsuid(2) (Swift's Glibc module does not declare it): this thread's file-system user id.
@_silgen_name("setfsuid")
private func linuxSetfsuid(_ uid: UInt32) -> Int32

/// `writeLooseRef`: git's lock protocol without libgit2's machinery; git reads what it wrote.
@Suite struct LooseRefTests {
    @Test func aLooseRefIsWrittenReadAndRefusedWhenLockedOrMisnamed() throws {
        let (t, repo, tree) = try CommitGraphTests.storeWithOneTree()
        defer { withExtendedLifetime(t) {} }
        let a = try CommitGraphTests.commit(1, parents: [], tree: tree, in: repo)
        let b = try CommitGraphTests.commit(2, parents: [a], tree: tree, in: repo)
        try repo.writeLooseRef("refs/hubs/h/heads/d01", to: a)  // (its directories made)
        #expect(try repo.resolveReference("refs/hubs/h/heads/d01") == a)
        try repo.writeLooseRef("refs/hubs/h/heads/d01", to: b)
        #expect(try repo.resolveReference("refs/hubs/h/heads/d01") == b)
        let shown = try git(t.gitDir, ["rev-parse", "refs/hubs/h/heads/d01"])
        #expect(String(decoding: shown.out, as: UTF8.self) == b.hex + "\n")
        // Another writer's lock: nothing written, the lock left to its owner.
        let lock = t.gitDir.appending("refs/hubs/h/heads/d01.lock")
        try TempDirectory.write("x", at: lock)
        let refused = #expect(throws: GitError.self) { try repo.writeLooseRef("refs/hubs/h/heads/d01", to: a) }
        #expect(refused?.message.contains("remove \(lock)") == true, "the error names the lock to remove: \(String(describing: refused))")
        #expect(try repo.resolveReference("refs/hubs/h/heads/d01") == b)
        #expect(FileManager.default.fileExists(atPath: lock.string))
        // A name git would refuse (a hostile hub's ref name) never reaches the file system.
        for bad in ["refs/hubs/h/records/../../../../x", "refs/hubs/h/x.lock", "refs//x", "HEAD2"] {
            #expect(throws: GitError.self) { try repo.writeLooseRef(bad, to: a) }
        }
        #expect(!FileManager.default.fileExists(atPath: t.gitDir.appending("x").string))
    }
}
