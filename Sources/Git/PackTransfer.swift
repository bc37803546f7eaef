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
