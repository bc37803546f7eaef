import Glibc

/// The bytes of a `packed-refs` file, git's format: an optional `# pack-refs with: ...` line, then
/// `<40 hex> <name>` lines sorted by name, each possibly followed by `^<40 hex>` (the id an
/// annotated tag peels to). Pure: no file is read or written here.
enum PackedRefs {
    /// What git writes when it makes the file: the ids are peeled where they can be (a line with
    /// no `^` after it is no tag), and the lines are sorted.
    static let header = Array("# pack-refs with: peeled fully-peeled sorted \n".utf8)

    /// `old` with each name of `updates` pointing at its id: a ref not there is added, the peeled
    /// line of one that moves is dropped (the refs written here are never tags), every other
    /// line is kept byte for byte. The refs come out sorted by name, bytewise, as git sorts them.
    /// A new file starts with git's `# pack-refs` line; an old one keeps its own, or none.
    /// One pass over the old file and a merge with the sorted updates: it runs every round of a
    /// hub's fetch, with hundreds of refs in the file.
    static func rewrite(_ old: [UInt8], with updates: [(name: [UInt8], hex: [UInt8])]) -> [UInt8] {
        let newline = UInt8(ascii: "\n")
        // By name, then in the order given (the last of two moves of one ref wins).
        let moves = updates.enumerated().sorted { a, b in
            a.element.name == b.element.name ? a.offset < b.offset : a.element.name.lexicographicallyPrecedes(b.element.name)
        }.map(\.element)
        return old.withUnsafeBufferPointer { buf -> [UInt8] in
            // Each ref: its name and its lines (the ref's, then any `^` line after it), as ranges of `old`.
            var head: Range<Int>?
            var refs: [(name: Range<Int>, lines: Range<Int>)] = []
            var i = 0
            while i < buf.count {
                var end = i
                while end < buf.count, buf[end] != newline { end += 1 }
                let next = min(end + 1, buf.count)
                if end > i {
                    if buf[i] == UInt8(ascii: "#"), head == nil, refs.isEmpty {
                        head = i..<next
                    } else if buf[i] == UInt8(ascii: "^"), let last = refs.last {
                        refs[refs.count - 1].lines = last.lines.lowerBound..<next
                    } else {
                        // A line git would not have written is kept as it is, under its own bytes.
                        var space = i
                        while space < end, buf[space] != UInt8(ascii: " ") { space += 1 }
                        refs.append((space < end ? (space + 1)..<end : i..<end, i..<next))
                    }
                }
                i = next
            }
            func compare(_ a: Range<Int>, _ b: UnsafeBufferPointer<UInt8>) -> Int32 {
                let n = min(a.count, b.count)
                let c = n == 0 ? 0 : memcmp(buf.baseAddress! + a.lowerBound, b.baseAddress!, n)
                return c != 0 ? c : Int32(a.count) - Int32(b.count)
            }
            // git keeps the file sorted; one that is not (an old or a hand-made one) is sorted here.
            if zip(refs, refs.dropFirst()).contains(where: { compare($0.name, buf.extracting($1.name)) > 0 }) {
                refs.sort { compare($0.name, buf.extracting($1.name)) < 0 }
            }
            var out: [UInt8] = []
            out.reserveCapacity(buf.count + moves.count * 100)
            func append(_ range: Range<Int>) {
                out.append(contentsOf: buf.extracting(range))
                if out.last != newline { out.append(newline) }
            }
            // A file without the line says nothing of peeled ids: none is claimed for it either.
            if let head { append(head) } else if buf.isEmpty { out += header }
            var r = 0
            for (k, move) in moves.enumerated() {
                if k + 1 < moves.count, moves[k + 1].name == move.name { continue }  // the last one given wins
                var same = false
                move.name.withUnsafeBufferPointer { name in
                    while r < refs.count {
                        let c = compare(refs[r].name, name)
                        if c > 0 { break }
                        if c == 0 { same = true } else { append(refs[r].lines) }
                        r += 1
                        if same { break }
                    }
                }
                out += move.hex
                out.append(UInt8(ascii: " "))
                out += move.name
                out.append(newline)
            }
            while r < refs.count {
                append(refs[r].lines)
                r += 1
            }
            return out
        }
    }
}
