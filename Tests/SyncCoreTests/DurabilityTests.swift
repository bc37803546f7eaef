@testable import FileSystem
import Foundation
import Glibc
import SystemPackage
import Testing
import TestSupport

/// `Durability.flushFiles` is what stands between new objects and a ref that points at them: it
/// must say false whenever it could not flush one of them (the caller then flushes the whole file
/// system), and a store that commits for months must not leak a descriptor on either way out.
@Suite struct DurabilityTests {
    /// Descriptors this process holds on anything under `root` (other tests run alongside).
    func openDescriptors(under root: FilePath) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"))?.hasPrefix(root.string) ?? false
        }
    }

    /// More files than it holds open at once, in several directories, one listed directory gone.
    func files(_ t: TempDirectory, count: Int) throws -> [FilePath] {
        try (0 ..< count).map { i in
            let rel = "d\(i % 7)/f\(i)"
            try t.write(rel, "object \(i)")
            return t.root.appending(rel)
        }
    }

    @Test func everyFileAndDirectoryFlushedWithoutLeavingDescriptors() throws {
        let t = try TempDirectory()
        let all = try files(t, count: 3 * Durability.filesOpenAtOnce + 5)
        #expect(Durability.flushFiles(all, andDirectories: [t.root, t.root.appending("pruned")]))
        #expect(try openDescriptors(under: t.root) == 0)
        for i in all.indices { #expect(t.read("d\(i % 7)/f\(i)") == "object \(i)") }
    }

    @Test func aMissingFileOrALinkIsAFailureAndLeavesNoDescriptor() throws {
        let t = try TempDirectory()
        var all = try files(t, count: Durability.filesOpenAtOnce + 10)
        // In the middle of the second chunk: the first chunk's files are open when it is met.
        all.insert(t.root.appending("d1/gone"), at: Durability.filesOpenAtOnce + 3)
        #expect(!Durability.flushFiles(all))
        #expect(try openDescriptors(under: t.root) == 0)
        // A link in a file's place is not followed (O_NOFOLLOW): the object is not flushed.
        try FileManager.default.createSymbolicLink(atPath: t.path("link"), withDestinationPath: all[0].string)
        #expect(!Durability.flushFiles([all[0], t.root.appending("link")]))
        #expect(try openDescriptors(under: t.root) == 0)
        // A listed directory that is a file, not a directory, cannot be flushed as one.
        #expect(!Durability.flushFiles([all[0]], andDirectories: [all[1]]))
    }
    /// Objects and packs never change once written: one flushed by this process is not flushed
    /// again (a fetch relied on two minutes of young objects, and flushed each at every fetch),
    /// unless the file at that name is another one now (removed and written again).
    @Test func anImmutableFileFlushedOnceIsSkippedUntilItIsWrittenAgain() throws {
        let t = try TempDirectory()
        let all = try files(t, count: 5)
        #expect(DurableFiles.pending(all).files == all)
        #expect(Durability.flushImmutable(all, andDirectories: [t.root]))
        #expect(DurableFiles.pending(all).files.isEmpty)
        #expect(try openDescriptors(under: t.root) == 0)
        // Written again under the same name (a loose object packed away, then written loose again):
        // another inode, flushed again.
        try FileManager.default.removeItem(atPath: all[2].string)
        try t.write("d2/f2", "object 2")
        #expect(DurableFiles.pending(all).files == [all[2]])
        #expect(Durability.flushImmutable(all))
        #expect(DurableFiles.pending(all).files.isEmpty)
        // A file that cannot be flushed is a failure, and nothing of that call is remembered.
        let more = try (5 ..< 8).map { i in
            try t.write("e/f\(i)", "object \(i)")
            return t.root.appending("e/f\(i)")
        }
        #expect(!Durability.flushImmutable(more + [t.root.appending("e/gone")]))
        #expect(DurableFiles.pending(more).files == more)
        #expect(Durability.flushExistingImmutable(more + [t.root.appending("e/gone")]))
        #expect(DurableFiles.pending(more).files.isEmpty)
        // Only a missing path is left out: a link where an object should be is a failure (the
        // callers then flush the whole file system), not a file skipped as flushed.
        #expect(symlink("f5", t.root.appending("e/link").string) == 0)
        #expect(!Durability.flushExistingImmutable(more + [t.root.appending("e/link")]))
        // Another writer renames its own copy over the path while the flush runs: what the flush
        // reached is not known, so the path is not remembered.
        try t.write("e/raced", "object 9")
        let raced = t.root.appending("e/raced")
        let before = DurableFiles.pending([raced]).stamps
        try t.write("e/raced.tmp", "object 9")
        #expect(rename(t.root.appending("e/raced.tmp").string, raced.string) == 0)
        DurableFiles.remember([raced], before: before)
        #expect(DurableFiles.pending([raced]).files == [raced])
    }
}
