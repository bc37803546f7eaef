import CLibgit2
import Glibc
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

    /// The packs of the store at `gitDir` that have an index, with their ids.
    static func packs(of gitDir: FilePath) throws(GitError) -> [PackTransfer] {
        var found: [PackTransfer] = []
        for index in packIndexes(in: gitDir) {
            var pack = index
            pack.extension = "pack"
            found.append(PackTransfer(pack: pack, ids: try ids(inIndex: index)))
        }
        return found
    }

    /// Every id a pack index lists (read through a one-pack object database).
    static func ids(inIndex index: FilePath) throws(GitError) -> [Oid] {
        let odb = try objectDatabase(loose: nil, packIndexes: [index])
        defer { git_odb_free(odb) }
        final class Box { var ids: [Oid] = [] }
        let box = Box()
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
            throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue), message: "cannot read \(pack): \(Errno(rawValue: errno))", call: "open")
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

    /// Takes this pack and its index as they are, checked once: both are copied under temporary
    /// names (`tmp_pack_*`, which start-up clears), every object the copied index lists is read
    /// back from the copied pack and hashed, and every id a tree, commit or tag in it names must be
    /// in it or satisfy `has` (in this store). Then the pack and its index are renamed into place,
    /// pack first. The indexer does the same checks but hashes every byte twice (each object, and
    /// the whole pack for its checksum) and writes both files again. Returns the bytes taken; nil
    /// when an object is too big to read whole (the indexer's business). Throws, leaving nothing
    /// behind, when the pack is damaged, names what is neither in it nor here, or cannot be copied.
    func adopt(into gitDir: FilePath, has: (Oid) -> Bool, progress: () -> Bool) throws(GitError) -> Int? {
        let packDir = gitDir.appending("objects").appending("pack")
        var index = pack
        index.extension = "idx"
        guard let packName = pack.lastComponent, let indexName = index.lastComponent else {
            throw GitError(code: GitError.Code.generic, errorClass: 0, message: "\(pack) is not a pack file", call: "adopt")
        }
        let (packFD, tempPack) = try Self.temporary(in: packDir, suffix: ".pack")
        defer { close(packFD) }
        var tempIndex: FilePath?
        var done = false
        defer {
            if !done {
                _ = tempPack.withPlatformString { unlink($0) }
                if let tempIndex { _ = tempIndex.withPlatformString { unlink($0) } }
            }
        }
        let bytes = try Self.copy(pack, to: packFD, as: tempPack)
        _ = fchmod(packFD, 0o444)  // as git leaves its packs
        // Beside the pack, under the same name: libgit2 finds a pack from its index's name.
        var madeIndex = tempPack
        madeIndex.extension = "idx"
        let indexFD = madeIndex.withPlatformString { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o444) }
        guard indexFD >= 0 else {
            throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                           message: "cannot create \(madeIndex): \(Errno(rawValue: errno)); check that the store's directory is writable and the disk is not full",
                           call: "open")
        }
        tempIndex = madeIndex
        defer { close(indexFD) }
        _ = try Self.copy(index, to: indexFD, as: madeIndex)

        let odb = try Self.objectDatabase(loose: nil, packIndexes: [madeIndex])
        defer { git_odb_free(odb) }
        let inPack = Set(try Self.ids(inIndex: madeIndex))
        for (n, id) in inPack.enumerated() {
            var raw = id.raw
            var size = 0
            var type = GIT_OBJECT_INVALID
            try check(git_odb_read_header(&size, &type, odb, &raw), "git_odb_read_header(\(id)) in \(pack)")
            if size > Self.adoptObjectsUpTo { return nil }
            var object: OpaquePointer?
            try check(git_odb_read(&object, odb, &raw), "git_odb_read(\(id)) in \(pack)")
            defer { git_odb_object_free(object) }
            let content = UnsafeRawBufferPointer(start: git_odb_object_data(object), count: git_odb_object_size(object))
            type = git_odb_object_type(object)
            var computed = git_oid()
            try check(git_odb_hash(&computed, content.baseAddress, content.count, type), "git_odb_hash(\(id))")
            guard Oid(computed) == id else {
                throw GitError.damagedObject("object \(id) in \(pack) holds the content of \(Oid(computed)): the peer's store is damaged",
                                             call: "adopt \(pack)")
            }
            guard let links = ObjectLinks.named(by: content, type: type) else {
                throw GitError.damagedObject("object \(id) in \(pack) is not well-formed: the peer's store is damaged",
                                             call: "adopt \(pack)")
            }
            if let lacking = links.first(where: { !inPack.contains($0) && !has($0) }) {
                throw GitError(code: GitError.Code.notFound, errorClass: Int32(GIT_ERROR_ODB.rawValue),
                               message: "\(pack) names object \(lacking), which is neither in it nor in \(gitDir)", call: "adopt")
            }
            if n % 1024 == 1023, !progress() { throw GitError.cancelled("transfer of \(pack) cancelled", call: "copy") }
        }
        for (from, to) in [(tempPack, packDir.appending(packName)), (madeIndex, packDir.appending(indexName))] {
            let rc = from.withPlatformString { a in to.withPlatformString { b in rename(a, b) } }
            guard rc == 0 else {
                throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                               message: "cannot move \(from) to \(to): \(Errno(rawValue: errno)); check that the store's directory is writable",
                               call: "rename")
            }
        }
        done = true
        return bytes
    }

    /// A new file in `dir` named `tmp_pack_XXXXXX<suffix>`.
    static func temporary(in dir: FilePath, suffix: String) throws(GitError) -> (Int32, FilePath) {
        var template = dir.appending("tmp_pack_XXXXXX" + suffix).withPlatformString { Array(UnsafeBufferPointer(start: $0, count: strlen($0) + 1)) }
        let fd = mkstemps(&template, Int32(suffix.utf8.count))
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        guard fd >= 0 else {
            throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                           message: "cannot create a temporary pack file in \(dir): \(Errno(rawValue: errno)); check that the store's directory is writable and the disk is not full",
                           call: "mkstemps")
        }
        return (fd, template.withUnsafeBufferPointer { FilePath(platformString: $0.baseAddress!) })
    }

    /// Copies the file at `source` into `fd` (the kernel's copy when it can); returns the bytes.
    static func copy(_ source: FilePath, to fd: Int32, as target: FilePath) throws(GitError) -> Int {
        let input = source.withPlatformString { open($0, O_RDONLY | O_CLOEXEC) }
        guard input >= 0 else {
            throw GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                           message: "cannot read \(source): \(Errno(rawValue: errno))", call: "open")
        }
        defer { close(input) }
        func failed(_ call: String) -> GitError {
            GitError(code: GitError.Code.generic, errorClass: Int32(GIT_ERROR_OS.rawValue),
                     message: "cannot copy \(source) to \(target): \(Errno(rawValue: errno)); check that the disk is not full", call: call)
        }
        var total = 0
        var kernelCopy = true
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            if kernelCopy {
                let n = syncagent_copy_file_range(input, fd, 1 << 30)
                if n > 0 { total += n; continue }
                if n == 0 { return total }
                guard errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP, total == 0 else {
                    if errno == EINTR { continue }
                    throw failed("copy_file_range")
                }
                kernelCopy = false
            }
            let n = read(input, buffer, 1 << 20)
            if n < 0 { if errno == EINTR { continue }; throw failed("read") }
            if n == 0 { return total }
            var written = 0
            while written < n {
                let w = write(fd, buffer + written, n - written)
                if w < 0 { if errno == EINTR { continue }; throw failed("write") }
                written += w
            }
            total += n
        }
    }
}
