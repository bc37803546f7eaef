import SystemPackage
import Testing
import TestSupport
@testable import SyncCore

/// Issue 46.5: `.syncignore` lines as `never` rules, with gitignore's meaning of `/`, `!` and `#`.
@Suite struct IgnoreFileTests {
    func policy(_ text: String) -> PathPolicy {
        PathPolicy(device: "phone", rules: IgnoreFile.rules(Array(text.utf8)))
    }

    @Test(arguments: [
        // (file, path, kept to this device)
        ("*.log", "a.log", true), ("*.log", "deep/down/b.log", true), ("*.log", "a.txt", false),
        ("node_modules/", "node_modules/x.js", true), ("node_modules/", "app/node_modules/y/z.js", true),
        ("node_modules/", "node_modules", false),  // a file of that name: `/` at the end is for directories
        ("/todo.txt", "todo.txt", true), ("/todo.txt", "notes/todo.txt", false),
        ("logs/*.log", "logs/a.log", true), ("logs/*.log", "old/logs/a.log", false),
        ("docs/build/", "docs/build/out.html", true), ("docs/build/", "build/out.html", false),
        ("**/cache/*", "a/b/cache/f", true),
        ("*.log\n!keep.log", "keep.log", false), ("*.log\n!keep.log", "other.log", true),
        ("!keep.log\n*.log", "keep.log", true),  // the last matching line decides
        ("# a comment\n\n\\#hash", "#hash", true), ("# a comment", "# a comment", false),
        ("trailing.txt   ", "trailing.txt", true),
        ("", ".syncignore", true), ("*.md", ".syncignore", true), ("!.syncignore", ".syncignore", true),  // never synced itself
        ("secret/", "notes.txt", false),
        ("build", "build/out.o", true), ("build", "src/build/out.o", true), ("/build", "src/build/out.o", false),
        ("docs/build", "docs/build/index.html", true), ("*.log", "x.log/inner", true),
    ])
    func aLineKeepsWhatGitWouldIgnore(file: String, path: String, kept: Bool) {
        #expect(!policy(file).materializes(FilePath(path)) == kept, "\(file) / \(path)")
    }

    /// A `!` line takes a path back from the file only: the config's rules still decide it.
    @Test func aTakenBackPathIsLeftToTheConfigsRules() {
        let file = IgnoreFile.rules(Array("*.psd\n!keep.psd\n".utf8))
        let policy = PathPolicy(device: "phone", rules: file + [SyncRule(path: "*.psd", sync: .manual)])
        #expect(policy.rule(for: "keep.psd")?.sync == .manual)
        #expect(policy.rule(for: "other.psd")?.sync == .never)
        #expect(policy.rule(for: "notes.txt") == nil)
    }

    @Test func noFileMeansNoRules() throws {
        let dir = try TempDirectory("ignorefile")
        #expect(IgnoreFile.rules(in: dir.root).isEmpty)
        try dir.write(".syncignore", "*.tmp2\n")
        #expect(IgnoreFile.rules(in: dir.root).count == 3)
    }
}
