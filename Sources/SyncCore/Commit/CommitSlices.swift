import FileSystem
internal import Git
internal import ObjectStorage
import SystemPackage

extension Store {
    /// A batch of new and changed files holding more bytes than this is committed as several
    /// commits of about this size each: a peer takes the first while the rest is hashed.
    public static let commitSliceBytes: Int64 = 64 << 20

    /// `paths` cut into slices to commit one after the other (`slices(_:sliceBytes:)`), or the
    /// batch whole when something in it went away or changed kind (a deletion, a file replaced by
    /// a directory or the reverse: the batch stays one commit, as the deletion guard saw it) or is
    /// neither a file, a link nor a directory. One `lstat` per path, stopping at the first that
    /// says no. Paths this device does not keep (`never`, another device's) count no bytes.
    public func slicesBySize(_ paths: Set<FilePath>, sliceBytes: Int64 = Store.commitSliceBytes) -> [Set<FilePath>] {
        guard paths.count >= 2, let index = try? liveIndex() else { return [paths] }
        var sized: [(path: FilePath, bytes: Int64?)] = []
        sized.reserveCapacity(paths.count)
        for path in paths {
            guard let stat = (try? FileStat.of(data.pushing(path))) ?? nil else { return [paths] }
            switch stat.kind {
            case .regular, .symlink:
                guard !index.hasEntries(under: path, except: path) else { return [paths] }
                sized.append((path, policy.materializes(path) && !PathRules.isIgnored(path: path) ? stat.size : 0))
            case .directory:
                guard index.entry(path) == nil else { return [paths] }
                sized.append((path, nil))
            default:
                return [paths]
            }
        }
        let slices = Self.slices(sized, sliceBytes: sliceBytes)
        return slices.count == 1 ? [paths] : slices.map(Set.init)
    }

    /// The pure step. Files and links (`bytes` given) in path order, a slice closed as soon as it
    /// holds `sliceBytes`; directories (`bytes` nil) go into the last slice, so no commit before
    /// it takes a new directory for an empty one (its files, in earlier slices, make it in `main`).
    /// One slice when the files together hold no more than `sliceBytes`.
    static func slices(_ sized: [(path: FilePath, bytes: Int64?)], sliceBytes: Int64) -> [[FilePath]] {
        let total = sized.reduce(Int64(0)) { $0 + ($1.bytes ?? 0) }
        guard total > sliceBytes else { return [sized.map(\.path)] }
        var slices: [[FilePath]] = []
        var current: [FilePath] = []
        var bytes: Int64 = 0
        for (path, size) in sized.sortedInBytes(by: \.path) {
            guard let size else { continue }
            current.append(path)
            bytes += size
            if bytes >= sliceBytes {
                slices.append(current)
                current = []
                bytes = 0
            }
        }
        let directories = sized.filter { $0.bytes == nil }.map(\.path)
        if !current.isEmpty || !directories.isEmpty || slices.isEmpty { slices.append(current) }
        slices[slices.count - 1] += directories
        return slices
    }

    /// Commits `slices` one after the other (`slicesBySize`), calling `each` with every outcome
    /// as it comes. The next slice's files are hashed on other threads once this one's are,
    /// while this one goes into the index, its trees and its commit. Stops at the first slice
    /// that throws; a hashing job left behind is cancelled (its finished packs made durable).
    public func commit(slices: [Set<FilePath>], send: Set<FilePath> = [], unchanged: Set<FilePath>,
                       each: (CommitOutcome) -> Void) throws {
        var next = prehashAhead(slices.first?.subtracting(unchanged) ?? [], always: true)
        defer { next?.cancel() }
        for (n, slice) in slices.enumerated() {
            let current = next
            next = nil
            _ = current?.result()  // (the commit waits for it first thing anyway)
            if n + 1 < slices.count { next = prehashAhead(slices[n + 1], always: true) }
            do {
                each(try commit(paths: slice, send: send, ahead: current, unchanged: unchanged))
            } catch {
                current?.cancel()  // its packs, if the commit never moved a ref to them
                throw error
            }
        }
    }
}
