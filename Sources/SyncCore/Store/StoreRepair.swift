import FileSystem
internal import Git
internal import ObjectStorage
import SystemPackage

/// What a power cut can leave in a store that nothing else repairs, found and cleared before
/// libgit2 opens it: a ref or `HEAD` whose file is empty or garbage (its name reached the disk, its
/// bytes did not), an index cut short or failing its checksum, loose objects full of zeros.
/// None of these held anything acknowledged (every ref move that was is flushed with its objects
/// first, and the ref itself after): what is removed comes back from the data directory (the
/// index is rebuilt from `main` and the files read again), from the peers (their refs and the
/// conflict records) or was never pointed at (objects written for a commit the cut stopped).
public enum StoreRepair {
    public struct Report: Sendable, Equatable {
        /// Refs removed (relative to the git dir), each with what was wrong.
        public var removedRefs: [String] = []
        /// Refs set back to the last value their reflog names.
        public var restoredRefs: [String] = []
        public var headRewritten = false
        /// Why the index file was removed (nil: it was fine or absent).
        public var indexRemoved: String?
        /// Packs set aside as damaged (name and why).
        public var removedPacks: [String] = []
        /// Loose objects removed as damaged (their ids).
        public var removedObjects: [String] = []
        public var isEmpty: Bool { removedRefs.isEmpty && restoredRefs.isEmpty && !headRewritten && indexRemoved == nil && removedObjects.isEmpty && removedPacks.isEmpty }

        /// One line per thing repaired, for the log.
        public var lines: [String] {
            var out: [String] = []
            if headRewritten { out.append("HEAD was damaged; it points at refs/heads/main again") }
            for ref in restoredRefs { out.append("the ref \(ref)") }
            if !removedPacks.isEmpty {
                out.append("moved \(removedPacks.count) damaged pack(s) to syncagent/damaged (\(removedPacks.prefix(3).joined(separator: "; "))); a peer that has their objects sends them again")
            }
            for ref in removedRefs { out.append("removed the damaged ref \(ref) (its reflog names no earlier value); it is set again by the next commit, fetch or merge") }
            if let why = indexRemoved { out.append("removed the index file (\(why)); it is rebuilt from main and every file is read again") }
            if !removedObjects.isEmpty {
                out.append("moved \(removedObjects.count) damaged loose object(s) to syncagent/damaged (\(removedObjects.prefix(3).joined(separator: ", "))\(removedObjects.count > 3 ? ", ..." : "")); a peer that has them sends them again")
            }
            return out
        }
    }

    /// - checkObjects: also read every loose object through (after a power cut; costs their bytes).
    public static func repair(gitDir: FilePath, checkObjects: Bool) -> Report {
        var report = Report()
        let head = gitDir.appending("HEAD")
        if let bytes = try? Files.read(head), !isSymbolicRef(bytes), !isObjectID(bytes) {
            try? Files.remove(head)
            if (try? Files.create(head, bytes: Array("ref: refs/heads/main\n".utf8), executable: false)) != nil {
                Durability.flushReplaced("HEAD", under: gitDir)
                report.headRewritten = true
            }
        }
        let refs = gitDir.appending("refs")
        Directory.walk(refs) { rel, kind in
            guard kind == .regular, rel.lastComponent?.extension != "lock" else { return }
            let path = refs.pushing(rel)
            guard let bytes = try? Files.read(path), !isObjectID(bytes), !isSymbolicRef(bytes) else { return }
            let what = bytes.isEmpty ? "empty" : "\(bytes.count) bytes naming no commit"
            // The reflog (core.logAllRefUpdates) names the value it last had.
            if let last = lastLogged(gitDir.appending("logs").appending("refs").pushing(rel)),
               (try? Files.remove(path)) != nil,
               (try? Files.create(path, bytes: Array((last + "\n").utf8), executable: false)) != nil {
                _ = Durability.flushReplaced(FilePath("refs").pushing(rel), under: gitDir)
                report.restoredRefs.append("refs/\(rel) was \(what); set back to \(last.prefix(12)), the last value its reflog names")
                return
            }
            if (try? Files.remove(path)) != nil {
                report.removedRefs.append("refs/\(rel) (\(what))")
            }
        }
        if !report.removedRefs.isEmpty { Durability.flushFileSystem(containing: gitDir) }
        let index = gitDir.appending("index")
        if let bytes = try? Files.read(index), let why = Integrity.indexDamage(bytes), (try? Files.remove(index)) != nil {
            report.indexRemoved = why
            _ = Durability.flushFiles([], andDirectories: [gitDir])
        }
        if checkObjects {
            // Packs whose names reached the disk and whose bytes did not (a fetch's pack in ext4's
            // journal: names and sizes go with any fsync, data only with its own): set aside with
            // their index, as damaged loose objects are. What a ref needed from them comes again
            // from a peer; a peer's ref that named them was written after them and is gone too.
            let packDir = gitDir.appending("objects").appending("pack")
            for entry in (try? Directory.entries(of: packDir)) ?? [] where entry.name.extension == "idx" {
                let idx = packDir.appending(entry.name)
                guard let why = Integrity.packDamage(idx: idx) else { continue }
                let stem = entry.name.stem
                let aside = gitDir.appending("syncagent").appending("damaged")
                try? Files.makeDirectories(aside)
                for ext in ["idx", "pack", "rev", "keep"] {
                    let file = packDir.appending(stem + "." + ext)
                    if ((try? FileStat.of(file)) ?? nil) != nil { try? Files.rename(file, to: aside.appending(stem + "." + ext)) }
                }
                report.removedPacks.append("\(stem) (\(why))")
            }
            if !report.removedPacks.isEmpty { _ = Durability.flushFiles([], andDirectories: [packDir, gitDir.appending("syncagent").appending("damaged")]) }
            let objects = gitDir.appending("objects")
            for fan in (try? Directory.entries(of: objects)) ?? [] where isHex(fan.name.string, count: 2) {
                let dir = objects.appending(fan.name)
                for entry in (try? Directory.entries(of: dir)) ?? [] where isHex(entry.name.string, count: 38) {
                    let file = dir.appending(entry.name)
                    guard Integrity.looseObjectIsDamaged(file) else { continue }
                    // Kept aside, not removed: a read error is not always damage.
                    let aside = gitDir.appending("syncagent").appending("damaged")
                    try? Files.makeDirectories(aside)
                    if (try? Files.rename(file, to: aside.appending(fan.name.string + entry.name.string))) != nil {
                        report.removedObjects.append(fan.name.string + entry.name.string)
                    }
                }
            }
        }
        return report
    }

    /// The newest value a reflog names (the second field of its last intact line), if any.
    static func lastLogged(_ log: FilePath) -> String? {
        guard let bytes = try? Files.read(log) else { return nil }
        for line in bytes.split(separator: UInt8(ascii: "\n")).reversed() {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            guard fields.count >= 2, isObjectID(Array(fields[1])), !fields[1].allSatisfy({ $0 == UInt8(ascii: "0") }) else { continue }
            return String(decoding: fields[1], as: UTF8.self)
        }
        return nil
    }

    /// 40 hex digits and a newline (or none): a ref's whole content.
    static func isObjectID(_ bytes: [UInt8]) -> Bool {
        let body = bytes.last == UInt8(ascii: "\n") ? bytes.dropLast() : bytes[...]
        return body.count == 40 && body.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    static func isSymbolicRef(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: Array("ref: refs/".utf8)) && bytes.last == UInt8(ascii: "\n") && bytes.count > 11
    }

    static func isHex(_ text: String, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

extension Store {
    /// After a power cut: the refs that mirror a peer or a hub (`refs/remotes/`, `refs/hubs/`) whose
    /// commit is not in the store (its pack was set aside as damaged) are removed; the next fetch
    /// sets them again. Returns their names. `main` and the records are never removed here.
    public func dropMirrorRefsToMissingObjects() throws -> [String] {
        var dropped: [String] = []
        for glob in ["refs/remotes/*", "refs/hubs/*"] {
            for (name, target) in try repo.references(matching: glob) where !repo.hasObject(target) {
                try repo.removeReference(name)
                dropped.append(name)
            }
        }
        if !dropped.isEmpty {
            Durability.flushFileSystem(containing: gitDir)
            KnownRefs.forget(gitDir)
        }
        return dropped
    }
}
