import CLibgit2
import ObjectStorage
import Glibc
import SystemPackage

/// A loose object file: `objects/xx/<38 hex>`.
public struct LooseFile: Sendable {
    public let id: Oid
    public let path: FilePath
    /// Bytes on disk (compressed).
    public let bytes: Int
}

extension Repository {
    /// Up to `limit` loose objects, fan-out directory by directory (`objects/00` .. `objects/ff`),
    /// starting at `from` (0...255) and wrapping around. Costs one `readdir` per directory read.
    public func looseObjects(limit: Int, from start: Int = 0) -> [LooseFile] {
        var found: [LooseFile] = []
        forEachLooseObject(from: start) { id, path in
            var st = stat()
            if path.withPlatformString({ lstat($0, &st) }) == 0 {
                found.append(LooseFile(id: id, path: path, bytes: Int(st.st_size)))
            }
            return found.count < limit
        }
        return found
    }

    /// The ids of every loose object (a `readdir` per fan-out directory; nothing else is read).
    func looseObjectIds() -> Set<Oid> {
        var ids = Set<Oid>()
        forEachLooseObject { id, _ in
            ids.insert(id)
            return true
        }
        return ids
    }

    /// Each loose object's id and file, fan-out directory by directory from `start`, until `body`
    /// returns false.
    private func forEachLooseObject(from start: Int = 0, _ body: (Oid, FilePath) -> Bool) {
        let objects = gitDir.appending("objects")
        for step in 0..<256 {
            let fan = String((start + step) % 256, radix: 16).leftPaddedHex
            let dir = objects.appending(fan)
            guard let handle = dir.withPlatformString({ opendir($0) }) else { continue }
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                guard name.count == 38, let id = Oid(hex: fan + name) else { continue }  // tmp_obj_* and the like
                guard body(id, dir.appending(name)) else { return }
            }
        }
    }

    /// An object's type and size, read from its header only (a loose object's first bytes).
    public func objectSize(_ id: Oid) throws(GitError) -> Int {
        var odb: OpaquePointer?
        try check(git_repository_odb(&odb, handle), "git_repository_odb")
        defer { git_odb_free(odb) }
        var raw = id.raw
        var size = 0
        var type = GIT_OBJECT_INVALID
        try check(git_odb_read_header(&size, &type, odb, &raw), "git_odb_read_header(\(id))")
        return size
    }

    /// Writes these objects into one new pack in `objects/pack` (deltas computed by libgit2's pack
    /// builder; `names` are path hints that put versions of one file side by side). Leaves the
    /// loose copies: the caller makes the pack durable, checks it with `pack(_:holds:)`, then
    /// removes them. Returns the pack's name (`pack-<name>.pack`).
    public func writePack(of ids: [Oid], names: [Oid: String] = [:]) throws(GitError) -> String {
        var builder: OpaquePointer?
        try check(git_packbuilder_new(&builder, handle), "git_packbuilder_new")
        defer { git_packbuilder_free(builder) }
        git_packbuilder_set_threads(builder, 1)
        for id in ids {
            var raw = id.raw
            try check(git_packbuilder_insert(builder, &raw, names[id]), "git_packbuilder_insert(\(id))")
        }
        let packDir = gitDir.appending("objects").appending("pack")
        try check(packDir.withPlatformString { git_packbuilder_write(builder, $0, 0, nil, nil) },
                  "git_packbuilder_write(\(packDir))")
        guard let name = git_packbuilder_name(builder) else {
            throw GitError(code: GitError.Code.generic, errorClass: 0, message: "the pack builder gave no name", call: "git_packbuilder_name")
        }
        return String(cString: name)
    }

    /// Which of `ids` the pack `pack-<name>` (its `.idx`, read afresh from disk) holds.
    public func pack(_ name: String, holds ids: [Oid]) throws(GitError) -> Set<Oid> {
        let idx = gitDir.appending("objects").appending("pack").appending("pack-\(name).idx")
        var odb: OpaquePointer?
        try check(git_odb_new(&odb), "git_odb_new")
        defer { git_odb_free(odb) }
        var backend: UnsafeMutablePointer<git_odb_backend>?
        try check(idx.withPlatformString { git_odb_backend_one_pack(&backend, $0) }, "git_odb_backend_one_pack(\(idx))")
        try check(git_odb_add_backend(odb, backend, 1), "git_odb_add_backend(\(idx))")
        var held: Set<Oid> = []
        for id in ids {
            var raw = id.raw
            if git_odb_exists(odb, &raw) == 1 { held.insert(id) }
        }
        return held
    }
}

extension String {
    /// A one- or two-digit hex number as two digits.
    fileprivate var leftPaddedHex: String { count == 1 ? "0" + self : self }
}
