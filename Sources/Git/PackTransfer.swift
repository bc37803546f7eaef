import Platform
import CLibgit2
import ObjectStorage
import FoundationEssentials
import Glibc
import Synchronization
import SystemPackage

/// A pack of a peer's store on this machine, taken whole instead of object by object: its bytes
/// go through libgit2's indexer, which inflates and hashes every object (ids are computed, never
/// trusted), checks the pack's checksum, and with `verify` refuses a pack whose trees and commits
/// name objects that are neither in it nor already here. No object is compressed again: for a big
/// batch of new files that is most of the cost of a copy.
struct PackTransfer {
    /// The pack file (`objects/pack/pack-<id>.pack`) and the ids its index lists.
    let pack: FilePath
    let ids: [Oid]
    /// The pack file's size when it was listed.
    var bytes: Int = 0

    /// The packs of the store at `gitDir` that have an index, with their ids.
    static func packs(of gitDir: FilePath) throws(GitError) -> [PackTransfer] {
        var found: [PackTransfer] = []
        for index in packIndexes(in: gitDir) {
            var pack = index
            pack.extension = "pack"
            var st = stat()
            let bytes = pack.withPlatformString { lstat($0, &st) } == 0 ? Int(st.st_size) : 0
            found.append(PackTransfer(pack: pack, ids: try ids(inIndex: index), bytes: bytes))
        }
        return found
    }

    /// Every id a pack index lists (read through a one-pack object database).
    static func ids(inIndex index: FilePath) throws(GitError) -> [Oid] {
        let odb = try objectDatabase(loose: nil, packIndexes: [index])
        defer { git_odb_free(odb) }
        final class Box { var ids: [Oid] = [] }
        let box = Box()
        // At its size: grown by doubling, 100k ids held 3.9 MB instead of 2.4 at a first sync's peak.
        box.ids.reserveCapacity((try? PackRollUp.Index.count(index)) ?? 0)
        let rc = git_odb_foreach(odb, { raw, payload in
            Unmanaged<Box>.fromOpaque(payload!).takeUnretainedValue().ids.append(Oid(raw!.pointee))
            return 0
        }, Unmanaged.passUnretained(box).toOpaque())
        try check(rc, "git_odb_foreach(\(index))")
        return box.ids
    }

    /// An object database over a store's loose objects and exactly these packs, which never
    /// re-reads the pack directory on a miss (a repository's own database does, and the indexer
    /// asks once per object it is given, most of which are new).
    static func objectDatabase(loose objects: FilePath?, packIndexes: [FilePath]) throws(GitError) -> OpaquePointer {
        var odb: OpaquePointer?
        try check(git_odb_new(&odb), "git_odb_new")
        func add(_ backend: UnsafeMutablePointer<git_odb_backend>?, priority: Int32, _ what: FilePath) throws(GitError) {
            let rc = git_odb_add_backend(odb, backend, priority)
            guard rc == 0 else {
                backend?.pointee.free(backend)
                git_odb_free(odb)
                throw lastError(code: rc, call: "git_odb_add_backend(\(what))")
            }
        }
        if let objects {
            var backend: UnsafeMutablePointer<git_odb_backend>?
            let rc = objects.withPlatformString { git_odb_backend_loose(&backend, $0, -1, 0, 0, 0) }
            guard rc == 0 else {
                git_odb_free(odb)
                throw lastError(code: rc, call: "git_odb_backend_loose(\(objects))")
            }
            try add(backend, priority: 1, objects)
        }
        for index in packIndexes {
            var backend: UnsafeMutablePointer<git_odb_backend>?
            let rc = index.withPlatformString { git_odb_backend_one_pack(&backend, $0) }
            guard rc == 0 else {
                git_odb_free(odb)
                throw lastError(code: rc, call: "git_odb_backend_one_pack(\(index))")
            }
            try add(backend, priority: 2, index)
        }
        return odb!
    }

    /// The pack indexes in a store's `objects/pack`.
    static func packIndexes(in gitDir: FilePath) -> [FilePath] {
        let dir = gitDir.appending("objects").appending("pack")
        guard let handle = dir.withPlatformString({ opendir($0) }) else { return [] }
        defer { closedir(handle) }
        var indexes: [FilePath] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                FilePath.Component(platformString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            guard let name, name.extension == "idx", name.stem.hasPrefix("pack-") else { continue }
            indexes.append(dir.appending(name))
        }
        return indexes
    }

    /// Writes this pack into the store at `gitDir` through the indexer, which resolves what the
    /// pack's trees and commits name against what that store holds now. `progress` is called for each
    /// chunk read; returning false abandons the transfer. Throws when the pack is damaged, is not
    /// complete with what `odb` holds, or cannot be read; nothing of it is left behind then.
    func index(into gitDir: FilePath, progress: @escaping () -> Bool) throws(GitError) -> Int {
        let objects = gitDir.appending("objects")
        let odb = try Self.objectDatabase(loose: objects, packIndexes: Self.packIndexes(in: gitDir))
        defer { git_odb_free(odb) }
        let objectsPack = objects.appending("pack")
        let fd = pack.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else {
            let failed = errno
            throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue), message: "cannot read '\(pack)': \(Errno(rawValue: failed))",
                           call: "open", osError: failed)
        }
        defer { close(fd) }
        final class Box { let progress: () -> Bool; init(_ p: @escaping () -> Bool) { progress = p } }
        let box = Box(progress)
        var options = git_indexer_options()
        git_indexer_options_init(&options, UInt32(GIT_INDEXER_OPTIONS_VERSION))
        options.verify = 1
        options.progress_cb = { _, payload in
            Unmanaged<Box>.fromOpaque(payload!).takeUnretainedValue().progress() ? 0 : -1
        }
        options.progress_cb_payload = Unmanaged.passUnretained(box).toOpaque()
        var indexer: OpaquePointer?
        try check(objectsPack.withPlatformString { git_indexer_new(&indexer, $0, 0, odb, &options) },
                  "git_indexer_new(\(objectsPack))")
        defer { git_indexer_free(indexer) }
        var stats = git_indexer_progress()
        var bytes = 0
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer, 1 << 20)
            if n < 0 {
                if errno == EINTR { continue }
                throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue), message: "cannot read \(pack): \(Errno(rawValue: errno))", call: "read")
            }
            if n == 0 { break }
            try check(git_indexer_append(indexer, buffer, n, &stats), "git_indexer_append(\(pack))")
            bytes += n
            guard box.progress() else {
                throw GitError.cancelled("transfer of \(pack) cancelled", call: "copy")
            }
        }
        try check(git_indexer_commit(indexer, &stats), "git_indexer_commit(\(pack))")
        return bytes
    }
}

extension PackTransfer {
    /// Objects above this size send the pack through the indexer, which streams them (here each
    /// object is read whole).
    static let adoptObjectsUpTo = 16 << 20

    /// Takes this pack and its index as they are, checked once, and returns the bytes taken; nil
    /// when it is not for adopting (an object too big to read whole, a version 1 index, a pack
    /// of that name here already): the indexer's business then.
    ///
    /// Both files are linked or copied (`linkOrCopy`) into a folder of their own (`objects/pack/tmp_pack_adopt_*`, which
    /// no object database scans and start-up clears). There every object the copied index lists
    /// is checked against the copied pack: its bytes against the CRC-32 the index gives (read as
    /// a roll-up reads them, `PackRollUp.Index.forEachObject`), its id by reading it through its deltas and hashing it, and a tree, commit
    /// or tag by libgit2's own parser, each id it names in the pack or already in this store
    /// (`has`). Then the pack and its index are linked into place under the peer's name, pack
    /// first, never over a file that is there. The indexer does the same checks but hashes every
    /// byte twice (each object, and the whole pack for its checksum) and writes both files again.
    /// Throws, leaving nothing behind, when the pack is damaged, names what is neither in it nor
    /// here, or cannot be copied.
    func adopt(into gitDir: FilePath, has: (Oid) -> Bool, progress: () -> Bool) throws(GitError) -> Int? {
        let packDir = gitDir.appending("objects").appending("pack")
        var index = pack
        index.extension = "idx"
        guard let packName = pack.lastComponent, let indexName = index.lastComponent,
              packName.string.hasPrefix("pack-") else { return nil }
        let finalPack = packDir.appending(packName), finalIndex = packDir.appending(indexName)
        if finalPack.withPlatformString({ access($0, F_OK) }) == 0 || finalIndex.withPlatformString({ access($0, F_OK) }) == 0 {
            return nil
        }
        let folder = try Self.temporaryFolder(in: packDir, prefix: "tmp_pack_adopt_")
        let tempPack = folder.appending(packName), tempIndex = folder.appending(indexName)
        defer { Self.removeFolder(folder) }
        let bytes = try Self.linkOrCopy(pack, to: tempPack)
        _ = try Self.linkOrCopy(index, to: tempIndex)

        // The index as a roll-up reads it: version 2, each object's bytes matching its CRC-32.
        // On the way, a whole object's type and size from its header; a delta's come below.
        guard let listed = try? PackRollUp.Index(tempIndex) else { return nil }
        var types = [git_object_t](repeating: GIT_OBJECT_INVALID, count: listed.entries.count)
        var tooBig = false
        try listed.forEachObject(in: tempPack) { i, _, buffer, length in
            guard let (type, size) = PackedObjects.wholeObjectHeader(buffer[..<min(length, 16)]) else { return }
            types[i] = git_object_t(rawValue: type.rawValue)
            if size > Self.adoptObjectsUpTo { tooBig = true }
        }
        if tooBig { return nil }

        let odb = try Self.objectDatabase(loose: nil, packIndexes: [tempIndex])
        defer { git_odb_free(odb) }
        var wrapped: OpaquePointer?
        try check(git_repository_wrap_odb(&wrapped, odb), "git_repository_wrap_odb(\(tempPack))")
        defer { git_repository_free(wrapped) }
        // Each object is read whole below: one too big for that leaves the pack to the indexer,
        // found before any is hashed. Deltas only are asked of libgit2 (its reading maps the pack's
        // windows: 3-4 MB of a 100k-file first sync's peak when every header went through it).
        for (i, entry) in listed.entries.enumerated() where types[i] == GIT_OBJECT_INVALID {
            var raw = entry.id.raw
            var size = 0
            var type = GIT_OBJECT_INVALID
            try check(git_odb_read_header(&size, &type, odb, &raw), "git_odb_read_header(\(entry.id)) in \(pack)")
            if size > Self.adoptObjectsUpTo { return nil }
            types[i] = type
        }
        // Every id computed. A big pack (photos: hashing is most of the cost) is split
        // in two runs of objects in offset order, each read through a handle of its own on a core
        // of its own (a delta whose base is in the other run reads that base itself).
        // A slice of 256 MiB of the pack at a time, progress told between slices.
        let entries = listed.entries
        let failure = FirstFailure()
        var sliceStart = 0
        while sliceStart < entries.count {
            var sliceEnd = sliceStart + 1
            while sliceEnd < entries.count, entries[sliceEnd].offset - entries[sliceStart].offset < 256 << 20 { sliceEnd += 1 }
            let slice = sliceStart..<sliceEnd
            let sliceBytes = (sliceEnd < entries.count ? entries[sliceEnd].offset : UInt64(bytes)) - entries[sliceStart].offset
            // Big objects only (photos): a pack of many small files is cheap to hash, and a second
            // handle on it would map its windows twice (a 100k-file first sync's peak memory).
            let workers = sliceBytes >= UInt64(Self.hashInParallelFrom) && slice.count >= 2
                && sliceBytes / UInt64(slice.count) >= UInt64(Self.hashInParallelAbove) ? 2 : 1
            if workers == 1 {
                Self.hashRun(entries, slice, odb: odb, index: tempIndex, pack: pack, failure: failure)
            } else {
                let tempIndexPath = tempIndex, packPath = pack
                inParallel(workers: workers) { worker in
                    guard let own = try? Self.objectDatabase(loose: nil, packIndexes: [tempIndexPath]) else {
                        return failure.record(GitError(code: GitError.Code.generic, errorClass: 0, message: "cannot open \(tempIndexPath) a second time", call: "adopt"))
                    }
                    defer { git_odb_free(own) }
                    Self.hashRun(entries, (slice.lowerBound + slice.count * worker / workers)..<(slice.lowerBound + slice.count * (worker + 1) / workers),
                                 odb: own, index: tempIndexPath, pack: packPath, failure: failure)
                }
            }
            if let error = failure.error { throw error }
            guard progress() else { throw GitError.cancelled("transfer of \(pack) cancelled", call: "copy") }
            sliceStart = sliceEnd
        }
        // In the pack: asked of its own index (already read whole above), not of a set of its ids
        // (5-7 MB at 100k objects, at a first sync's peak).
        func inPack(_ id: Oid) -> Bool {
            var raw = id.raw
            return git_odb_exists_ext(odb, &raw, GIT_ODB_LOOKUP_NO_REFRESH.rawValue) == 1
        }
        // Each tree is parsed once, through a handle freed below: none is cached meanwhile
        // (`withoutCachingTrees`; the 1,000 trees of a 100k-file first sync held 4 MB there).
        // A whole tree, commit or tag is read here (pread) and checked by libgit2's parser on its
        // bytes; a delta through libgit2's object database.
        let reader = PackedObjects(packDir: folder)
        var content: [UInt8] = []
        try Libgit2.withoutCachingTrees { () throws(GitError) in
            for (n, entry) in entries.enumerated() where types[n] != GIT_OBJECT_BLOB {
                content.removeAll(keepingCapacity: true)
                let read: (type: ObjectType, size: Int)?
                do { read = try reader?.stream(atOffset: entry.offset, maxSize: Self.adoptObjectsUpTo, into: { content.append(contentsOf: $0) }) } catch {
                    throw GitError(code: GitError.Code.generic, errorClass: 0, message: "cannot read \(entry.id) in \(pack): \(error)", call: "adopt")
                }
                let links: [Oid]
                if let read {
                    links = try Self.links(of: entry.id, type: read.type, content: content, pack: pack)
                } else {
                    links = try Self.links(of: entry.id, in: wrapped, pack: pack)
                }
                if let lacking = links.first(where: { !inPack($0) && !has($0) }) {
                    throw GitError(code: GitError.Code.notFound, errorClass: Int32(GIT_ERROR_ODB.rawValue),
                                   message: "\(pack) names object \(lacking), which is neither in it nor in \(gitDir)", call: "adopt")
                }
                if n % 1024 == 1023, !progress() { throw GitError.cancelled("transfer of \(pack) cancelled", call: "copy") }
            }
        }
        // `link` never replaces a file: a pack of that name that came meanwhile stays as it is.
        guard tempPack.withPlatformString({ a in finalPack.withPlatformString { b in link(a, b) } }) == 0 else {
            throw Self.cannotPlace(finalPack, Errno(rawValue: errno))
        }
        guard tempIndex.withPlatformString({ a in finalIndex.withPlatformString { b in link(a, b) } }) == 0 else {
            let why = Errno(rawValue: errno)
            _ = finalPack.withPlatformString { unlink($0) }  // a pack without an index is never read
            throw Self.cannotPlace(finalIndex, why)
        }
        return bytes
    }

    /// A new folder in `packDir`, `prefix` and six random letters (a `tmp_pack_*` a killed agent
    /// left is removed at its next start).
    static func temporaryFolder(in packDir: FilePath, prefix: String) throws(GitError) -> FilePath {
        var template = packDir.appending(prefix + "XXXXXX").withPlatformString { Array(UnsafeBufferPointer(start: $0, count: strlen($0) + 1)) }
        guard mkdtemp(&template) != nil else {
            let why = Errno(rawValue: errno)
            throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                           message: "cannot create a temporary folder in \(packDir): \(why); check that the store's directory is writable and the disk is not full",
                           call: "mkdtemp")
        }
        return template.withUnsafeBufferPointer { FilePath(platformString: $0.baseAddress!) }
    }

    /// Removes a folder of plain files (what it holds, then the folder).
    static func removeFolder(_ folder: FilePath) {
        guard let dir = folder.withPlatformString({ opendir($0) }) else { return }
        var names: [FilePath.Component] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                FilePath.Component(platformString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if let name, name.kind == .regular { names.append(name) }
        }
        closedir(dir)
        for name in names { _ = folder.appending(name).withPlatformString { unlink($0) } }
        _ = folder.withPlatformString { rmdir($0) }
    }

    /// Reads and hashes `entries[range]` through `odb`, in offset order; the first mismatch or
    /// error goes to `failure` (and stops every run).
    static func hashRun(_ entries: [(id: Oid, offset: UInt64, crc: UInt32)], _ range: Range<Int>, odb: OpaquePointer,
                        index: FilePath, pack: FilePath, failure: FirstFailure) {
        let sha: StreamSHA1
        do { sha = try StreamSHA1() } catch { return failure.record(error) }
        // Whole objects are read by `PackedObjects` (libdeflate, or stored blocks as they lie) and
        // hashed as they come; a delta, or what it cannot read, through libgit2.
        let reader = PackedObjects(packDir: index.removingLastComponent())
        for n in range {
            if failure.happened { return }
            let entry = entries[n]
            var began: GitError?
            let read: (type: ObjectType, size: Int)?
            do {
                read = try reader?.stream(atOffset: entry.offset, maxSize: Self.adoptObjectsUpTo, start: { type, size in
                    do throws(GitError) { try sha.beginObject(type: type, size: size) } catch { began = error }
                }, into: { sha.update($0) })
            } catch {
                return failure.record(GitError(code: GitError.Code.generic, errorClass: 0, message: "cannot read \(entry.id) in \(pack): \(error)", call: "adopt"))
            }
            if let began { return failure.record(began) }
            var raw = entry.id.raw
            let computed: Oid
            if read != nil {
                do { computed = try sha.finishObject() } catch { return failure.record(error) }
            } else {
                var object: OpaquePointer?
                guard git_odb_read(&object, odb, &raw) == 0 else {
                    return failure.record(lastError(code: -1, call: "git_odb_read(\(entry.id)) in \(pack)"))
                }
                // (OpenSSL's SHA-1: see `StreamSHA1` on why a peer's objects are checked without
                // libgit2's collision detection.)
                do {
                    computed = try sha.objectID(type: ObjectType(git_odb_object_type(object)),
                                                content: UnsafeRawBufferPointer(start: git_odb_object_data(object), count: git_odb_object_size(object)))
                } catch {
                    git_odb_object_free(object)
                    return failure.record(error)
                }
                git_odb_object_free(object)
            }
            guard computed == entry.id else {
                return failure.record(GitError.damagedObject("object \(entry.id) in \(pack) holds the content of \(computed): the peer's store is damaged",
                                                             call: "adopt \(pack)"))
            }
        }
    }

    /// Packs from this size on, of objects this big on average, are hashed on two cores.
    static let hashInParallelFrom = 8 << 20
    static let hashInParallelAbove = 256 << 10

    /// The first error of the threads hashing one pack.
    final class FirstFailure: @unchecked Sendable {
        private let first = Mutex<GitError?>(nil)
        var happened: Bool { first.withLock { $0 != nil } }
        var error: GitError? { first.withLock { $0 } }
        func record(_ error: GitError) { first.withLock { if $0 == nil { $0 = error } } }
    }

    static func cannotPlace(_ path: FilePath, _ why: Errno) -> GitError {
        GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                 message: "cannot put \(path) in place: \(why); check that the store's directory is writable", call: "link")
    }

    /// What a tree, commit or tag names, as libgit2 parses it (a malformed one is refused, as the
    /// indexer refuses it): a tree's entries (not a submodule's commit, stored elsewhere), a
    /// commit's tree and parents, a tag's target.
    /// The ids a whole tree, commit or tag of the pack names, from its bytes, checked first by
    /// libgit2's parser (`git_object_rawcontent_is_valid`): the same refusal as `links(of:in:pack:)`.
    static func links(of id: Oid, type: ObjectType, content: [UInt8], pack: FilePath) throws(GitError) -> [Oid] {
        var valid: Int32 = 0
        let rc = (content.isEmpty ? [0] : content).withUnsafeBytes {
            git_object_rawcontent_is_valid(&valid, $0.baseAddress!.assumingMemoryBound(to: CChar.self), content.count, git_object_t(rawValue: type.rawValue))
        }
        guard rc == 0, valid == 1 else {
            throw GitError.damagedObject("object \(id) in \(pack) is not a well-formed \(type.name) (\(git_error_last()?.pointee.message.map { String(cString: $0) } ?? "")): the peer's store is damaged",
                                         call: "adopt \(pack)")
        }
        switch type {
        case .tree:
            // "<mode> <name>\0<20 bytes>" each; a submodule's (160000) names no object here.
            var ids: [Oid] = []
            var at = 0
            while at < content.count {
                guard let nul = content[at...].firstIndex(of: 0), nul + 21 <= content.count else { break }
                // The mode in octal, and a submodule as libgit2 tells one (`normalize_filemode`):
                // type 16 with no execute bit.
                let mode = content[at...].prefix { $0 != UInt8(ascii: " ") }.reduce(0) { $0 &* 8 &+ Int($1) - 48 }
                if !(mode & ~0o777 == 0o160000 && mode & 0o100 == 0) {
                    ids.append(content.withUnsafeBytes { Oid(raw: $0.baseAddress! + nul + 1) })
                }
                at = nul + 21
            }
            return ids
        case .commit, .tag:
            // "tree <hex>" and "parent <hex>" lines, or a tag's "object <hex>", up to the first blank line.
            var ids: [Oid] = []
            for line in content.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                if line.isEmpty { break }
                for key in type == .tag ? ["object "] : ["tree ", "parent "] where line.starts(with: Array(key.utf8)) {
                    if let oid = Oid(hex: String(decoding: line.dropFirst(key.utf8.count), as: UTF8.self)) { ids.append(oid) }
                }
            }
            return ids
        case .blob:
            return []
        }
    }

    static func links(of id: Oid, in repo: OpaquePointer?, pack: FilePath) throws(GitError) -> [Oid] {
        var raw = id.raw
        var object: OpaquePointer?
        guard git_object_lookup(&object, repo, &raw, GIT_OBJECT_ANY) == 0 else {
            throw GitError.damagedObject("object \(id) in \(pack) is not well-formed (\(lastError(code: -1, call: "parse").message)): the peer's store is damaged",
                                         call: "adopt \(pack)")
        }
        defer { git_object_free(object) }
        switch git_object_type(object) {
        case GIT_OBJECT_TREE:
            var ids: [Oid] = []
            for i in 0..<git_tree_entrycount(object) {
                guard let entry = git_tree_entry_byindex(object, i), git_tree_entry_filemode(entry) != GIT_FILEMODE_COMMIT else { continue }
                ids.append(Oid(git_tree_entry_id(entry)))
            }
            return ids
        case GIT_OBJECT_COMMIT:
            var ids = [Oid(git_commit_tree_id(object))]
            for i in 0..<git_commit_parentcount(object) { if let parent = git_commit_parent_id(object, i) { ids.append(Oid(parent)) } }
            return ids
        case GIT_OBJECT_TAG:
            return [Oid(git_tag_target_id(object))]
        default:
            return []
        }
    }

    /// A hard link to `source` when both are on one file system, as `git clone --local` links a
    /// local repository's objects: no byte written twice (a pack of photos is hundreds of
    /// megabytes), and a pack file is never changed once it is in place (git and this agent
    /// only ever write new packs and remove old ones, and the link keeps the inode alive). Only a
    /// read-only file this user owns is kept linked: another user's could be made writable and
    /// rewritten under this store. The checks that follow read it all the same. Otherwise
    /// (another file system, another owner, a writable file) a copy. Returns the size.
    static func linkOrCopy(_ source: FilePath, to target: FilePath) throws(GitError) -> Int {
        let linked = source.withPlatformString { a in target.withPlatformString { b in link(a, b) } } == 0
        var st = stat()
        if linked, target.withPlatformString({ lstat($0, &st) }) == 0, (st.st_mode & S_IFMT) == S_IFREG,
           st.st_uid == geteuid(), st.st_mode & 0o222 == 0 {
            return Int(st.st_size)
        }
        if linked { _ = target.withPlatformString { unlink($0) } }
        return try copy(source, to: target)
    }

    /// Copies the file at `source` to a new file `target` (the kernel's copy when it can);
    /// returns the bytes. A copy shorter than the source's size is refused.
    static func copy(_ source: FilePath, to target: FilePath) throws(GitError) -> Int {
        func failed(_ call: String, _ why: Errno) -> GitError {
            GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                     message: "cannot copy \(source) to \(target): \(why); check that the disk is not full", call: call)
        }
        let input = source.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
        guard input >= 0 else { throw failed("open", Errno(rawValue: errno)) }
        defer { close(input) }
        let fd = target.withPlatformString { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o444) }
        guard fd >= 0 else { throw failed("open", Errno(rawValue: errno)) }
        defer { close(fd) }
        var st = stat()
        guard fstat(input, &st) == 0 else { throw failed("fstat", Errno(rawValue: errno)) }
        let size = Int(st.st_size)
        var total = 0
        var kernelCopy = true
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while total < size {
            if kernelCopy {
                let n = syncagent_copy_file_range(input, fd, size - total)
                if n > 0 { total += n; continue }
                let why = errno
                if n == 0 { break }
                if why == EINTR { continue }
                guard total == 0, why == EXDEV || why == ENOSYS || why == EINVAL || why == EOPNOTSUPP else {
                    throw failed("copy_file_range", Errno(rawValue: why))
                }
                kernelCopy = false
            }
            let n = read(input, buffer, min(1 << 20, size - total))
            if n < 0 { let why = errno; if why == EINTR { continue }; throw failed("read", Errno(rawValue: why)) }
            if n == 0 { break }
            var written = 0
            while written < n {
                let w = write(fd, buffer + written, n - written)
                if w < 0 { let why = errno; if why == EINTR { continue }; throw failed("write", Errno(rawValue: why)) }
                written += w
            }
            total += n
        }
        guard total == size else {
            throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                           message: "\(source) changed while it was copied to \(target) (\(total) of its \(size) bytes read): the peer rewrote its pack; what it holds is copied object by object instead",
                           call: "copy")
        }
        if size >= 1 << 20 { PackFileWriter.startWriteback(fd) }  // on its way to the disk before the flush
        return total
    }
}
