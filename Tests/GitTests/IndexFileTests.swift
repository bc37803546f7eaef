import FileSystem
import Foundation
@testable import Git
@testable import ObjectStorage
import PropertyBased
import SystemPackage
import Testing
import TestSupport

/// The store's own index (`IndexEntries` in memory, `IndexFile` on disk), judged by references it
/// did not write: a sorted dictionary for the storage, the git CLI for the file (git reads what it
/// writes, it reads what git writes in versions 2, 3 and 4), and `git diff-index` for the diff.
@Suite struct IndexFileTests {
    let sig = Signature(name: "phone", email: "phone@syncagent", time: 1_700_000_000)

    /// Paths built to meet the order's traps: a directory `a` beside `a-b`, `a.txt` and `a0`
    /// (before and after `a/` in byte order), bytes above 0x7f, deep and shallow.
    static let pool: [[UInt8]] = {
        let names = ["a/x", "a/y/z", "a/y-z", "a-b", "a.txt", "a0", "b", "b0/c", "c/\u{e9}t\u{e9}", "c/d e", "c/d/e/f/g",
                     "d/1", "d/10", "d/2", "d.x/y", "e", "f/f/f", "zz"]
        return names.map { Array($0.utf8) } + [[0x67, 0xff], [0x67, 0x2f, 0x80]]  // "g\xff", "g/\x80": not UTF-8
    }()

    static func record(_ seed: Int, mode: UInt32 = 0o100644) -> IndexRecord {
        IndexRecord(oid: Oid(bytes: (0..<20).map { UInt8(truncatingIfNeeded: seed &* 31 &+ $0) }), mode: mode,
                    size: UInt32(seed), mtimeSeconds: Int32(seed), mtimeNanoseconds: UInt32(seed % 1000),
                    ctimeSeconds: Int32(seed + 1), ctimeNanoseconds: 7, inode: UInt32(seed * 3))
    }

    /// Every record and path, in order.
    static func listing(_ e: IndexEntries) -> [([UInt8], IndexRecord)] {
        var out: [([UInt8], IndexRecord)] = []
        e.forEach { r, p in out.append((Array(p), r)) }
        return out
    }

    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.lexicographicallyPrecedes(b)  // not the code under test
    }

    /// Random sets, removals and directory removals, with chunks of 1 to 9 records so that every
    /// split, empty chunk and compaction happens: the same content and order as a dictionary
    /// sorted by bytes, and every path's position and location agree.
    @Test func randomEditsMatchASortedDictionary() async {
        let op = Gen.int(in: 0...99).array(of: 3...3)
        await propertyCheck(count: 60, input: op.array(of: 50...400)) { ops in
            let limit = ops.count % 9 + 1
            var entries = IndexEntries(chunkLimit: limit)
            var reference: [[UInt8]: IndexRecord] = [:]
            for (n, o) in ops.enumerated() {
                // Paths from the pool and numbered ones, so there are many of them.
                let path = o[1] < 40 ? Self.pool[o[1] % Self.pool.count] : Array("n/\(o[1] % 50)/\(o[2])".utf8)
                switch o[0] % 10 {
                case 0...5:
                    entries.set(Self.record(n), path: path)
                    reference[path] = Self.record(n)
                case 6...8:
                    let (at, found) = entries.locate(path)
                    #expect(found == (reference[path] != nil))
                    if found { entries.remove(at: at) }
                    reference[path] = nil
                default:
                    let dir = Array(path.split(separator: UInt8(ascii: "/")).first!) + [UInt8(ascii: "/")]
                    let removed = entries.removeAll(withPrefix: dir)
                    let gone = reference.keys.filter { $0.starts(with: dir) }
                    #expect(removed == gone.count)
                    for key in gone { reference[key] = nil }
                }
            }
            let want = reference.sorted { Self.precedes($0.key, $1.key) }
            let got = Self.listing(entries)
            #expect(got.map(\.0) == want.map(\.key))
            #expect(got.map(\.1) == want.map(\.value))
            #expect(entries.count == want.count)
            for (position, item) in want.enumerated() {
                let (at, found) = entries.locate(item.key)
                #expect(found && entries.record(at: at) == item.value)
                #expect(entries.position(of: at) == position)
                #expect(entries.location(ofPosition: position) == at)
            }
        }
    }

    /// A file git wrote, in each version it writes, with its tree cache (an optional extension):
    /// read with every entry git lists (`ls-files --stage`), and back in version 2 that git lists
    /// the same way, its stat data as written (`ls-files --debug`).
    @Test(arguments: [2, 3, 4]) func readsWhatGitWritesAndGitReadsWhatItWrites(version: Int) throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        for (i, path) in Self.pool.enumerated() {
            let file = t.data.pushing(FilePath(bytes: path))
            try Files.makeDirectories(file.removingLastComponent())
            try Files.create(file, bytes: Array("content \(i)\n".utf8), executable: i == 3)  // one 100755
        }
        try Files.createLink(t.data.appending("ln"), target: Array("a.txt".utf8))  // and a 120000
        func g(_ args: [String]) throws -> Data {
            let r = try git(t.gitDir, ["--work-tree", t.data.string] + args)
            #expect(r.status == 0, "git \(args)")
            return r.out
        }
        _ = try g(["add", "-A"])
        // The tree cache extension (TREE); and git's tree of the index, which ours must be.
        let gitsTree = Oid(hex: String(decoding: try g(["write-tree"]), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        if version == 3 {
            try Data("later\n".utf8).write(to: URL(fileURLWithPath: t.data.appending("later.txt").string))
            _ = try g(["add", "--intent-to-add", "later.txt"])  // an extended flag: version 3
        }
        if version == 4 { _ = try g(["update-index", "--index-version", "4"]) }
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: t.gitDir.appending("index").string)))
        #expect(Int(bytes[7]) == version)
        var entries = IndexEntries()
        try bytes.withUnsafeBytes { try IndexFile.read($0, into: &entries) }
        let listed = try g(["ls-files", "--stage", "-z"])
        func lines(_ d: Data) -> [[UInt8]] { d.split(separator: 0).map { Array($0) } }
        let mine = Self.listing(entries).map { path, r in
            Array("\(String(r.mode, radix: 8)) \(r.oid.hex) 0\t".utf8) + path
        }
        // An intent-to-add entry (version 3) is staged as nothing yet: not read.
        let theirs = lines(listed).filter { !$0.reversed().starts(with: Array("\tlater.txt".utf8).reversed()) }
        #expect(mine == theirs)
        #expect(entries.count == Self.pool.count + 1)

        // Written back (version 2, no extension): git lists the same entries and stat data.
        let index = try repo.index()
        try index.read(force: true)
        if version != 3 { #expect(try index.writeTree() == gitsTree) }  // (3: git's tree leaves the intent-to-add out)
        try index.write()
        let again = try [UInt8](Data(contentsOf: URL(fileURLWithPath: t.gitDir.appending("index").string)))
        #expect(Array(again[0..<8]) == Array("DIRC".utf8) + [0, 0, 0, 2])
        #expect(lines(try g(["ls-files", "--stage", "-z"])) == theirs)
        let st = try #require(try FileStat.of(t.data.pushing(FilePath(bytes: Self.pool[0]))))
        let debug = String(decoding: try g(["ls-files", "--debug", "--", "a/x"]), as: UTF8.self)
        #expect(debug.contains("mtime: \(st.mtimeSeconds):\(st.mtimeNanoseconds)"), "\(debug)")
        #expect(debug.contains("ino: \(UInt32(truncatingIfNeeded: st.inode))") && debug.contains("size: \(st.size)"), "\(debug)")
        // The work tree against the index: every file as the index has it.
        let status = try g(["diff-files", "--name-only"])
        #expect(status.isEmpty, "git finds every file as the index has it: \(String(decoding: status, as: UTF8.self))")
    }

    /// A damaged file is refused with the file's name and what to do, and the index keeps what it
    /// had: a flipped byte, a file cut short, an empty one, a required extension git would refuse
    /// too, entries out of order.
    @Test func aDamagedFileIsRefusedByNameAndLosesNothing() throws {
        let t = try TempDevice()
        try t.write("a.txt", "hello\n")
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        #expect(try index.add("a.txt") == .added)
        try index.write()
        let file = t.gitDir.appending("index")
        let good = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file.string)))
        func sealed(_ body: [UInt8]) throws -> [UInt8] {
            let sha = try StreamSHA1()
            body.withUnsafeBytes { sha.update($0) }
            return body + (try sha.finish())
        }
        var flipped = good
        flipped[20] ^= 1
        var reordered = Array(good.dropLast(20))  // two entries, the second before the first
        let entry = Array(reordered[12...])
        reordered = Array(reordered[..<8]) + [0, 0, 0, 2] + entry + entry
        let damaged: [(String, [UInt8])] = [
            ("checksum", flipped), ("cut short", Array(good.prefix(40))), ("empty", []),
            ("required extension", try sealed(Array(good.dropLast(20)) + Array("link".utf8) + [0, 0, 0, 0])),
            ("out of order", try sealed(reordered)),
            ("zero trailer", Array(good.dropLast(20)) + [UInt8](repeating: 0, count: 20)),
            ("path", try sealed(Array(good.dropLast(20)).replacing(Array("a.txt".utf8), with: Array("../xy".utf8)))),
        ]
        for (what, bytes) in damaged {
            try Data(bytes).write(to: URL(fileURLWithPath: file.string))
            do {
                try index.read(force: true)
                Issue.record("a file with a damaged \(what) was read")
            } catch {
                #expect(error.message.contains(file.string) && error.message.contains("remove it"), "\(what): \(error)")
            }
            #expect(index.entry("a.txt") != nil && index.count == 1, "\(what): the entries are kept")
        }
        // An optional extension is read past.
        try Data(try sealed(Array(good.dropLast(20)) + Array("ZZZZ".utf8) + [0, 0, 0, 2, 1, 2])).write(to: URL(fileURLWithPath: file.string))
        try index.read(force: true)
        #expect(index.count == 1)
    }

    /// Staging follows git's index: a file where one of the new path's directories would be goes,
    /// every entry under a path that becomes a file goes, and a path with an empty, `.`, `..` or
    /// `.git` part is refused.
    @Test func stagingReplacesFilesAndDirectoriesInTheWayAndRefusesBadPaths() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        let blob = try repo.createBlob(Array("x".utf8))
        for p: FilePath in ["a", "b/c", "b/d/e", "b-c", "c"] { try index.add(p, blob: blob, mode: 0o100644) }
        try index.add("a/inner", blob: blob, mode: 0o100644)  // `a` was a file
        try index.add("b", blob: blob, mode: 0o120000)  // `b/...` was a directory
        #expect(index.entries().map(\.path) == ["a/inner", "b", "b-c", "c"])
        for bad: FilePath in ["", "./x", "x/../y", ".git/config", "d/.GIT/x", "GIT~1/x", "x/."] {
            #expect(throws: GitError.self, "\(bad)") { try index.add(bad, blob: blob, mode: 0o100644) }
        }
        #expect(throws: GitError.self) { try index.add("d", blob: blob, mode: 0o040000) }
        #expect(index.count == 4)
        #expect(index.hasEntries(under: "a", except: "a/other") && !index.hasEntries(under: "a", except: "a/inner"))
        #expect(index.entries(under: "b").isEmpty && index.entries(under: "a").map(\.path) == ["a/inner"])
        #expect(index.find("c")?.position == 3 && index.path(at: 1) == "b")
    }

    /// Staging as git's index does, whether the paths come in order (a first commit: appended,
    /// looking up only the directories the last entry does not lie under) or not: a file where a
    /// directory of the path was goes, so does everything under the path, and the index ends as
    /// a model of those two rules says, in path order.
    @Test func stagingInOrderOrNotMatchesAModel() async throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let blob = try repo.createBlob(Array("x".utf8))
        // Short names over three levels: files and directories of one name meet often.
        let names = ["a", "a.b", "a-", "b", "ab"]
        let part = Gen.int(in: 0...(names.count - 1))
        let path = part.array(of: 1...3).map { $0.map { names[$0] }.joined(separator: "/") }
        await propertyCheck(count: 80, input: path.array(of: 1...60)) { list in
            for sorted in [true, false] {
                let index = try! Index(repository: repo)  // no index file: empty
                let order = sorted ? list.sorted { Self.precedes(Array($0.utf8), Array($1.utf8)) } : list
                var model: Set<String> = []
                for p in order {
                    try! index.add(FilePath(p), blob: blob, mode: 0o100644)
                    model = model.filter { !p.hasPrefix($0 + "/") && !$0.hasPrefix(p + "/") }
                    model.insert(p)
                }
                let want = model.map { Array($0.utf8) }.sorted(by: Self.precedes)
                #expect(index.entries().map(\.path.bytes) == want, "sorted: \(sorted), \(order)")
            }
        }
    }

    /// `diffIndex` (one pass over a tree walk and the index) gives what `git diff-index --cached`
    /// gives for the same tree and index file: random trees from the pool, random indexes from
    /// them (removed, added, changed content, changed mode, file to link).
    @Test func theDiffAgainstATreeIsGits() async throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let blobs = try (0..<4).map { try repo.createBlob(Array("blob \($0)\n".utf8)) }
        let modes: [UInt32] = [0o100644, 0o100755, 0o120000]
        // The pool has no path that is a directory of another.
        await propertyCheck(count: 40, input: Gen.int(in: 0...11).array(of: Self.pool.count...Self.pool.count).array(of: 2...2)) { draws in
            let (base, staged) = (draws[0], draws[1])
            do {
                var edits: [(path: FilePath, edit: TreeEdit)] = []
                for (i, d) in base.enumerated() where d < 8 {
                    edits.append((FilePath(bytes: Self.pool[i]), .entry(ConflictSide(oid: blobs[d % 4], mode: modes[d % 2]))))
                }
                let tree = edits.isEmpty ? nil : try repo.updateTree(nil, edits: edits)
                let index = try repo.index()
                try index.read(force: true)
                for p in index.entries().map(\.path) { try index.remove(p) }
                for (i, d) in staged.enumerated() where d < 9 {
                    // Mostly the tree's entry, else another blob or mode.
                    let same = base[i] < 8 && d < 5
                    let side = same ? ConflictSide(oid: blobs[base[i] % 4], mode: modes[base[i] % 2]) : ConflictSide(oid: blobs[d % 4], mode: modes[d % 3])
                    try index.add(FilePath(bytes: Self.pool[i]), blob: side.oid, mode: side.mode)
                }
                try index.write()
                let mine = try repo.diffIndex(index, against: tree)
                let against = tree?.hex ?? "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  // the empty tree
                if tree == nil { _ = try repo.updateTree(nil, edits: []) }
                let out = try git(t.gitDir, ["diff-index", "--cached", "-r", "--no-renames", "-z", against])
                #expect(out.status == 0)
                // ":old new oldid newid X\0path\0" each.
                let fields = out.out.split(separator: 0, omittingEmptySubsequences: false).map { Array($0) }
                var theirs: [TreeChange] = []
                var i = 0
                while i + 1 < fields.count, !fields[i].isEmpty {
                    let head = String(decoding: fields[i].dropFirst(), as: UTF8.self).split(separator: " ")
                    func side(_ mode: Substring, _ id: Substring) -> ConflictSide? {
                        mode == "000000" ? nil : ConflictSide(oid: Oid(hex: String(id))!, mode: UInt32(mode, radix: 8)!)
                    }
                    theirs.append(TreeChange(path: FilePath(bytes: fields[i + 1]), old: side(head[0], head[2]), new: side(head[1], head[3])))
                    i += 2
                }
                #expect(mine == theirs)
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    /// The commit path's tree along edited paths (`updateTree` on the parent's tree) is the tree
    /// the index gives for the same changes (`writeTree`, built another way and held to
    /// `git write-tree` above): random trees, then random sets and removals of files and of whole
    /// directories, files replacing directories and the reverse.
    @Test func theTreeAlongEditsIsTheIndexsTree() async throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let blobs = try (0..<3).map { try repo.createBlob(Array("blob \($0)\n".utf8)) }
        let paths = ["a", "a/x", "a/y/z", "a-b", "a.txt", "b/c/d", "b/c", "b", "c/d e", "c/f", "d/1", "d/10", "d/2/3"].map { FilePath($0) }
        await propertyCheck(count: 60, input: Gen.int(in: 0...9).array(of: 0...12).array(of: 2...2)) { draws in
            do {
                let index = try repo.index()
                try index.read(force: true)
                for p in index.entries().map(\.path) { try index.remove(p) }
                for (i, d) in draws[0].enumerated() where d < 6 {
                    try index.add(paths[i % paths.count], blob: blobs[d % 3], mode: d % 2 == 0 ? 0o100644 : 0o100755)
                }
                let base = try index.writeTree()
                // Every path changed, as the commit path knows them: those set or removed, and a
                // file that a new path's directory replaced.
                var touched: Set<FilePath> = []
                for (i, d) in draws[1].enumerated() {
                    let path = paths[(i * 7 + d) % paths.count]
                    touched.insert(path)
                    if d < 6 {
                        var up = path.removingLastComponent()
                        while !up.isEmpty {
                            if index.entry(up) != nil { touched.insert(up) }
                            up = up.removingLastComponent()
                        }
                        try index.add(path, blob: blobs[d % 3], mode: 0o100644)
                    } else {
                        try index.remove(path)
                        try index.removeDirectory(path)
                    }
                }
                // Each set to what the index holds at the end; none under a path that is a file now.
                let edits = touched.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
                    .filter { path in !touched.contains { $0 != path && path.starts(with: $0) && index.entry($0) != nil } }
                    .map { path -> (path: FilePath, edit: TreeEdit) in
                        index.entry(path).map { (path, .entry(ConflictSide(oid: $0.oid, mode: $0.mode))) } ?? (path, .remove)
                    }
                let along = try repo.updateTree(base, edits: edits)
                #expect(along == (try index.writeTree()), "\(draws)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    /// What a first sync's lists of ids and the index's records cost per item: an id 20 bytes (not
    /// 24), a record 56 (not 64), and an id's bytes, order and hash as they were.
    @Test func idsAndRecordsTakeTheirSize() {
        #expect(MemoryLayout<Oid>.stride == 20)
        #expect(MemoryLayout<IndexRecord>.stride == 56)
        let x = Oid(bytes: (0..<20).map { UInt8($0) }), y = Oid(bytes: (0..<20).map { UInt8($0 == 19 ? 20 : $0) })
        #expect(x.bytes == (0..<20).map { UInt8($0) } && x < y && !(y < x) && x != y)
        #expect(Set([x, y, Oid(bytes: x.bytes)]).count == 2)
        #expect(Oid(hex: x.hex) == x && x.prefix64 == UInt64(bigEndian: 0x0001020304050607))
    }

    /// Paths added in ascending or descending order (directory markers come deepest first), or
    /// from both ends, after a full chunk of paths before them, leave chunks at least half full:
    /// 2,000 paths in at most 33 chunks of 128, besides the first.
    @Test func chunksStayFullWhateverTheOrder() {
        let before = (0..<128).map { Array(String(format: "a/%05d", $0).utf8) }
        let paths = (0..<2000).map { Array(String(format: "d/%05d", $0).utf8) }
        for order in [paths, Array(paths.reversed()), zip(paths.prefix(1000), paths.suffix(1000).reversed()).flatMap { [$0, $1] }] {
            var entries = IndexEntries()
            for (n, path) in (before + order).enumerated() { entries.set(Self.record(n), path: path) }
            #expect(entries.count == 2128 && entries.chunks.count <= 34, "\(entries.chunks.count) chunks")
            #expect(Self.listing(entries).map(\.0) == before + paths)
        }
    }

    /// A path longer than the 12 bits git's entry has for its length (4,000 bytes, deep and with
    /// names of 200 bytes, some not UTF-8) goes to the file and back whole, and git lists it.
    @Test func aLongPathGoesToTheFileAndBack() throws {
        let t = try TempDevice()
        let repo = try Repository.create(gitDir: t.gitDir, workdir: t.data)
        let index = try repo.index()
        let blob = try repo.createBlob(Array("x".utf8))
        let part = Array(repeating: UInt8(ascii: "n"), count: 198) + [0xe9, 0xff]
        let long = FilePath(bytes: Array(Array(repeating: part, count: 20).joined(separator: [UInt8(ascii: "/")])))
        #expect(long.bytes.count == 4019)
        try index.add(long, blob: blob, mode: 0o100644)
        try index.add("a", blob: blob, mode: 0o100644)
        try index.write()
        try index.read(force: true)
        #expect(index.entries().map(\.path) == ["a", long])
        let listed = try git(t.gitDir, ["ls-files", "-z"])
        #expect(listed.status == 0 && [UInt8](listed.out) == Array("a".utf8) + [0] + long.bytes + [0])
    }
}
