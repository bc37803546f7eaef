import CLibgit2

/// The ids an object's raw content names, read straight from git's object formats: a tree's
/// entries (not a submodule's commit, which is not stored here), a commit's tree and parents, a
/// tag's object. Blobs name nothing. Nil when the content is not what its type says (bounds are
/// checked; nothing here is trusted).
enum ObjectLinks {
    static func named(by content: UnsafeRawBufferPointer, type: git_object_t) -> [Oid]? {
        switch type {
        case GIT_OBJECT_BLOB: return []
        case GIT_OBJECT_TREE: return treeEntries(content)
        case GIT_OBJECT_COMMIT: return headerIds(content, keys: ["tree", "parent"])
        case GIT_OBJECT_TAG: return headerIds(content, keys: ["object"])
        default: return nil
        }
    }

    /// `<octal mode> <name>\0<20-byte id>`, repeated.
    static func treeEntries(_ bytes: UnsafeRawBufferPointer) -> [Oid]? {
        var ids: [Oid] = []
        var i = 0
        while i < bytes.count {
            guard let space = bytes[i...].firstIndex(of: UInt8(ascii: " ")),
                  let nul = bytes[space...].firstIndex(of: 0), nul + 21 <= bytes.count else { return nil }
            let mode = bytes[i..<space]
            var raw = git_oid()
            withUnsafeMutableBytes(of: &raw.id) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[(nul + 1)..<(nul + 21)])) }
            // 160000: a submodule's commit, in another repository.
            if !mode.elementsEqual("160000".utf8) { ids.append(Oid(raw)) }
            i = nul + 21
        }
        return ids
    }

    /// 40 lowercase or uppercase hex digits as an id.
    static func oid<Digits: Collection<UInt8>>(hex: Digits) -> Oid? {
        guard hex.count == 40 else { return nil }
        var raw = git_oid()
        var ok = true
        withUnsafeMutableBytes(of: &raw.id) { out in
            var digits = hex.makeIterator()
            for k in 0..<20 {
                guard let high = digits.next().flatMap(value), let low = digits.next().flatMap(value) else { ok = false; return }
                out[k] = high << 4 | low
            }
        }
        return ok ? Oid(raw) : nil
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `<key> <40 hex>` lines of a commit's or tag's header (up to the first empty line).
    static func headerIds(_ bytes: UnsafeRawBufferPointer, keys: [String]) -> [Oid]? {
        var ids: [Oid] = []
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            if end == start { break }  // the header ends
            let line = bytes[start..<end]
            for key in keys where line.starts(with: (key + " ").utf8) {
                let hex = line.dropFirst(key.utf8.count + 1)
                guard let id = oid(hex: hex) else { return nil }
                ids.append(id)
            }
            start = end + 1
        }
        return ids
    }
}
