import FileSystem
import Foundation
import Git
@testable import ObjectStorage
import PropertyBased
import Synchronization
import SystemPackage
import Testing
@testable import SyncCore
import TestSupport

/// A hub on a path (a bare store under the test's root) that devices push to and fetch from.
struct HubOnAPath {
    let path: FilePath
    init(under root: FilePath) throws {
        path = root.appending("hub.git")
        #expect(try runProgram("/usr/bin/git", ["init", "-q", "--bare", path.string]).status == 0)
    }
    func push(_ d: TwoDevices.Device) throws {
        _ = try Store.hubPush(gitDir: d.gitDir, data: d.data, hub: "hub", url: "file://\(path)", device: d.name, localGitDir: path)
    }
    /// The other devices the hub has, by name.
    func fetch(_ d: TwoDevices.Device) throws -> [String] {
        try Store.hubFetch(gitDir: d.gitDir, data: d.data, hub: "hub", url: "file://\(path)", device: d.name, localGitDir: path).map(\.name)
    }
}

/// `FoldPlan`: which tips a fold may take without a three-way merge.
@Suite struct FoldPlanTests {
    static let blob = ConflictSide(oid: Oid(hex: String(repeating: "ab", count: 20))!, mode: 0o100644)
    static let tree = ConflictSide(oid: Oid(hex: String(repeating: "cd", count: 20))!, mode: 0o040000)

    func added(_ paths: String...) -> [TreeChange] { paths.map { TreeChange(path: FilePath($0), old: nil, new: Self.blob) } }

    @Test(arguments: [
        // (changed by the fold so far, the tip's new files, disjoint)
        (["a/1", "b/2"], ["c/3", "a/4", "5"], true),    // other files, in the same directories too
        (["a/1"], ["a/1"], false),                      // the same file
        (["a"], ["a/1"], false),                        // under a path changed (a file that was, or is, there)
        (["a/b/1"], ["a/b"], false),                    // a file where a changed path's directory is
        (["a/b/1"], ["a"], false),                      // ... at any depth
        ([], [".syncagent-keep", "d/.syncagent-keep"], false),  // a directory's marker: a merge decides
        ([String](), [String](), true),
    ] as [([String], [String], Bool)])
    func aTipIsDisjointOnlyClearOfEveryChangedPath(changed: [String], tip: [String], disjoint: Bool) {
        let plan = FoldPlan(changed.map { FilePath($0) })
        #expect(plan.isDisjoint(tip.map { TreeChange(path: FilePath($0), old: nil, new: Self.blob) }) == disjoint)
    }

    @Test func aDeletionOrADirectoryIsNeverTakenWithoutAMerge() {
        let plan = FoldPlan([])
        #expect(!plan.isDisjoint([TreeChange(path: "gone.txt", old: Self.blob, new: nil)]))
        #expect(!plan.isDisjoint([TreeChange(path: "dir", old: nil, new: Self.tree)]))
        #expect(plan.isDisjoint([TreeChange(path: "kept.txt", old: Self.blob, new: Self.blob)]))
    }

    /// A device's join, or its commit made on one, repeats files other tips brought: the same
    /// entry at the same path goes in with nothing to merge (and is not added twice); another
    /// entry there, or one where a merge decided, needs the merge.
    @Test func theSameFileBroughtByTwoTipsIsNoClash() {
        let other = ConflictSide(oid: Oid(hex: String(repeating: "ef", count: 20))!, mode: 0o100644)
        var plan = FoldPlan(changes: added("x/1", "y"))
        #expect(plan.newChanges(added("x/1", "x/2"))?.map(\.path) == [FilePath("x/2")])
        #expect(plan.newChanges(added("y"))?.isEmpty == true)
        #expect(plan.newChanges([TreeChange(path: "x/1", old: nil, new: other)]) == nil)
        #expect(plan.newChanges([TreeChange(path: "x/1", old: Self.blob, new: Self.blob)])?.isEmpty == true)
        #expect(plan.newChanges(added("y/under")) == nil)
        plan.add([FilePath("x/1")])  // decided by a merge: its entry is not known
        #expect(plan.newChanges(added("x/1")) == nil)
    }

    @Test func whatATipAddsIsChangedForTheNextTip() {
        var plan = FoldPlan([])
        #expect(plan.isDisjoint(added("x/1")))
        plan.add([FilePath("x/1")])
        #expect(!plan.isDisjoint(added("x/1")))
        #expect(!plan.isDisjoint(added("x")))
        #expect(plan.isDisjoint(added("x/2")))
    }
}

/// `Store.foldJoins` takes tips that only add or rewrite files no one else changed without a
/// three-way merge each: on random bursts of devices through a hub on this machine (files made,
/// rewritten and deleted, directories deleted whole, emptied or made empty, the same file changed
/// by two devices), it folds the same tips into the same tree as merging each tip in turn does.
@Suite struct FoldTests {
    enum Op {
        case write(String), remove(String), removeDirectory(String), makeDirectory(String)
    }

    @Test func aFoldMakesWhatMergingEachTipInTurnMakes() async throws {
        await propertyCheck(count: 12, input: Gen.int(in: 0...1_000_000).array(of: 80...80)) { draws in
            do {
                try Self.check(Self.ops(from: draws), takes: Self.takes(from: draws))
            } catch {
                Issue.record("draws \(draws): \(error)")
            }
        }
    }

    /// A burst that comes in two parts: the second fold is made on the first one's join, and
    /// taking it is a fast-forward of content (no three-way merge of two joins). It ends on the
    /// very join a device that merges every tip in turn makes, with every file.
    @Test func aSecondFoldOnTheFirstIsTakenWholeAndEndsOnTheSameJoin() throws {
        let t = try TwoDevices()
        let hub = try HubOnAPath(under: t.root)
        let (push, fetch) = (hub.push, hub.fetch)
        let first = t.phone
        let others = try Self.devicesSharingABase(t, hub, count: 4)
        try Self.change(first)
        try push(first)
        func foldAndTake() throws -> SyncOutcome {
            let peer = try #require(try first.store.foldJoins(hub: "hub", devices: try fetch(first)))
            return try first.store.integrate(peer: peer)
        }
        for d in others.prefix(2) { try Self.change(d); try push(d) }
        #expect(try foldAndTake().action == .fastForward)  // its parents hold `main`
        for d in others.suffix(2) { try Self.change(d); try push(d) }
        let second = try foldAndTake()
        #expect(second.action == .fastForward)
        #expect(second.applied.touchedCount == 2)
        for d in [first] + others { #expect(first.read("\(d.name).txt") == "from \(d.name)\n") }
        // The reference: one device merging every other device's tip in turn.
        let reference = others[0]
        _ = try fetch(reference)
        for d in [first] + others.dropFirst() { _ = try reference.store.integrate(peer: Store.hubPeer("hub", device: d.name)) }
        #expect(try first.store.head() == reference.store.head())
        #expect(try first.store.repo.commit(#require(try first.store.head())).parents.count == 5)
        #expect(try gitFsck(first.gitDir) == 0)
    }

    /// `count` devices besides the phone, each holding the phone's first commit (`base.txt`), taken
    /// through the hub.
    static func devicesSharingABase(_ t: TwoDevices, _ hub: HubOnAPath, count: Int) throws -> [TwoDevices.Device] {
        let others = try (1...count).map { try TwoDevices.Device("d\($0)", root: t.root) }
        try t.phone.write("base.txt", "base\n")
        try t.phone.commit("base.txt")
        try hub.push(t.phone)
        for d in others {
            _ = try hub.fetch(d)
            _ = try d.store.integrate(peer: Store.hubPeer("hub", device: t.phone.name))
        }
        return others
    }

    /// A file of the device's own, `<name>.txt`, written and committed.
    static func change(_ d: TwoDevices.Device) throws {
        try d.write("\(d.name).txt", "from \(d.name)\n")
        try d.commit(FilePath("\(d.name).txt"))
    }

    /// The fold's join commit and the trees it adds are written here (not copied from the hub,
    /// whose objects are flushed as they come): they must be on the disk before the tracking ref
    /// names the join, or a power cut could leave `main` naming a commit that is not there
    /// (the fast-forward that takes a fold flushes nothing of its own).
    @Test(.enabled(if: !Durability.disabled, "SYNCAGENT_UNSAFE_NO_FSYNC=1 flushes nothing"))
    func aFoldsJoinAndNewTreesAreFlushedBeforeItsRefNamesThem() throws {
        let t = try TwoDevices()
        let hub = try HubOnAPath(under: t.root)
        let first = t.phone
        for d in try Self.devicesSharingABase(t, hub, count: 2) { try Self.change(d); try hub.push(d) }
        let names = try hub.fetch(first)
        // At every flush: whether the fold's tracking ref already names something (a loose ref,
        // as libgit2 writes it, or a line of packed-refs).
        let tracking = Store.trackingRef(Store.foldedPeer("hub"))
        let gitDir = first.gitDir
        let refNamedAtAFlush = Atomic(false)
        let log = Durability.FlushLog {
            let packed = (try? String(contentsOfFile: gitDir.appending("packed-refs").string, encoding: .utf8)) ?? ""
            if FileManager.default.fileExists(atPath: gitDir.appending(tracking).string) || packed.contains(" \(tracking)\n") {
                refNamedAtAFlush.store(true, ordering: .relaxed)
            }
        }
        let peer = try #require(try Durability.$log.withValue(log) { try first.store.foldJoins(hub: "hub", devices: names) })
        let namedEarly = refNamedAtAFlush.load(ordering: .relaxed)
        #expect(!namedEarly, "\(tracking) named the join before its flush")
        let repo = first.store.repo
        let join = try #require(try repo.resolveReference(Store.trackingRef(peer)))
        let tree = try repo.commit(join).tree
        let new = [join, tree]
        #expect(new.allSatisfy { FileManager.default.fileExists(atPath: repo.looseObjectPath($0).string) })  // written loose
        let flushed = Set(log.files)
        #expect(new.allSatisfy { flushed.contains(repo.looseObjectPath($0)) } || !log.fileSystems.isEmpty,
                "flushed \(log.files), file systems \(log.fileSystems)")
        #expect(try first.store.integrate(peer: peer).action == .fastForward)
        #expect(first.read("d1.txt") == "from d1\n" && first.read("d2.txt") == "from d2\n")
    }

    /// A directory this device made empty (its marker) gets a file from another device: the
    /// merge drops the marker, and so must the fold.
    @Test func aMarkerAboveAnotherDevicesNewFileGoesAsInAMerge() throws {
        try Self.check([[.makeDirectory("a/m")], [.write("a/m/x")], [.write("z")], [.write("c/y")], [.write("a/m/w")]])
        try Self.check([[.write("q")], [.makeDirectory("k")], [.write("k/x")], [.write("z")], [.makeDirectory("a/m")]])
    }

    static let baseFiles = ["a/1", "a/2", "a/b/3", "c/4", "5", "e/6", "e/f/7"]

    /// When a device takes in the tips pushed before its own: never, before its changes (its tip is
    /// a commit made on a merge or a join of theirs), or after (its tip is that merge or join).
    enum Take { case none, before, after }

    static func takes(from draws: [Int]) -> [Take] {
        draws.suffix(5).map { [Take.none, .before, .after][$0 % 3] }
    }

    static func ops(from draws: [Int]) -> [[Op]] {
        var next = draws.makeIterator()
        func draw(_ n: Int) -> Int { (next.next() ?? 0) % n }
        return (0..<5).map { i in
            (0..<(1 + draw(3))).map { k -> Op in
                let dirs = ["", "a/", "a/b/", "c/", "e/", "x\(i)/", "a/m/"]
                switch draw(7) {
                case 0, 1: return .write(dirs[draw(dirs.count)] + "n\(i)-\(k)")
                case 2: return .write(baseFiles[draw(baseFiles.count)])
                case 3: return .remove(baseFiles[draw(baseFiles.count)])
                case 4: return .removeDirectory(["e", "a/b", "c"][draw(3)])
                case 5: return .makeDirectory(["a/m", "m\(i)", "e/f"][draw(3)])
                default: return .write("c/4")  // the same file on many devices: a conflict, merged on its own
                }
            }
        }
    }

    /// Five devices through a hub on a path: the first commits the base files, the others take
    /// them; each then does its `ops` and commits, the others push, and the first folds what it
    /// fetched both ways. With `takes`, a device first takes in the tips pushed before its own, or
    /// does so after its commit: tips that are commits on a merge or a join, or that join itself
    /// (a fold takes the real tips behind a join, and the files they repeat).
    static func check(_ ops: [[Op]], takes: [Take] = []) throws {
        let t = try TwoDevices()
        let hub = try HubOnAPath(under: t.root)
        let (push, fetch) = (hub.push, hub.fetch)
        let devices = [t.phone] + (1..<ops.count).map { try! TwoDevices.Device("d\($0)", root: t.root) }
        let first = devices[0]
        for file in baseFiles { try first.write(file, "base \(file)\n") }
        _ = try first.store.commit(paths: Set(baseFiles.map { FilePath($0) }))
        try push(first)
        for d in devices.dropFirst() {
            _ = try fetch(d)
            _ = try d.store.integrate(peer: Store.hubPeer("hub", device: first.name))
        }
        // Each device's burst (the first one's stays its own: the fold's `ours`).
        // Device i takes in the tips devices 1..<i pushed, through merges (a join when clean).
        func takeEarlier(_ i: Int, _ d: TwoDevices.Device) throws {
            guard i > 1 else { return }
            _ = try fetch(d)
            for earlier in devices[1..<i] { _ = try d.store.integrate(peer: Store.hubPeer("hub", device: earlier.name)) }
        }
        for (i, d) in devices.enumerated() {
            let take = i < takes.count ? takes[i] : .none
            if take == .before { try takeEarlier(i, d) }
            var paths: Set<FilePath> = []
            for op in ops[i] {
                switch op {
                case .write(let rel):
                    try d.write(rel, "\(rel) from \(d.name) (\(paths.count))\n")
                    paths.insert(FilePath(rel))
                case .remove(let rel):
                    if d.read(rel) != nil { try d.dirs.remove(rel) }
                    paths.insert(FilePath(rel))
                case .removeDirectory(let dir):
                    if (try? FileManager.default.contentsOfDirectory(atPath: d.data.appending(dir).string)) != nil { try d.dirs.remove(dir) }
                    paths.insert(FilePath(dir))
                case .makeDirectory(let dir):
                    try FileManager.default.createDirectory(atPath: d.data.appending(dir).string, withIntermediateDirectories: true)
                    paths.insert(FilePath(dir))
                }
            }
            _ = try d.store.commit(paths: paths)
            if take == .after { try takeEarlier(i, d) }
            if i > 0 { try push(d) }
        }
        let names = try fetch(first)
        #expect(names.count == devices.count - 1)
        let repo = first.store.repo
        func folded(byMerges: Bool) throws -> CommitInfo? {
            guard let peer = try first.store.foldJoins(hub: "hub", devices: names, byMerges: byMerges),
                  let tip = try repo.resolveReference(Store.trackingRef(peer)) else { return nil }
            return try repo.commit(tip)
        }
        let reference = try folded(byMerges: true)
        let quick = try folded(byMerges: false)
        #expect(quick?.tree == reference?.tree, "\(ops)")
        #expect(quick?.parents == reference?.parents, "\(ops)")
        #expect(try gitFsck(first.gitDir) == 0)
    }
}

/// What the tests ask of a plan: paths whose entries are not known, and whether a tip goes in whole.
extension FoldPlan {
    init(_ changed: [FilePath]) {
        self.init(changes: [])
        add(changed)
    }

    func isDisjoint(_ changes: [TreeChange]) -> Bool { newChanges(changes) != nil }
}
