import Git
@testable import ObjectStorage
@testable import SyncCore
import SystemPackage
import Testing

/// Settling a record, as a table: the record, the choice and what was looked at in, the steps out
/// (`ResolvePlan`, pure). The store's resolve and e2e/test_sync_resolve.sh check that doing them holds.
@Suite struct ResolvePlanTests {
    static func version(_ device: String, _ text: String?, at time: String, directory: Bool = false) -> ConflictRecord.Version {
        let oid = text.map { Oid.hashing(Array($0.utf8)).hex }
        return .init(device: device, commit: Oid.hashing(Array(device.utf8)).hex, blob: directory ? nil : oid, mode: text == nil ? nil : (directory ? 0o040000 : 0o100644),
                     time: time, tree: directory ? oid : nil)
    }
    static func record(_ versions: [ConflictRecord.Version]) -> ConflictRecord {
        ConflictRecord(id: "c-1", path: "n.txt", pathBytes: ConflictRecord.hex(Array("n.txt".utf8)), kind: .bothModified, status: .open,
                       detectedAt: "2026-11-28T00:00:00Z", detectedBy: "phone", base: nil, versions: versions, current: nil, resolution: nil)
    }
    static let phone = version("phone", "phone's\n", at: "2026-11-28T00:00:10Z")
    static let watch = version("watch", "watch's\n", at: "2026-11-28T00:00:20Z")
    static let two = record([phone, watch])

    static func describe(_ plan: ResolvePlan) -> [String] {
        plan.steps.map { step in
            switch step {
            case .place(let v, let keep): "place \(v.device)\(keep ? " keeping copies" : "")"
            case .writeCopies(let list): "copies \(list.count)"
            case .put(let bytes): "put \(bytes.count)"
            case .remove: "remove"
            case .removeCopies: "remove copies"
            }
        }
    }

    struct Row: Sendable, CustomStringConvertible {
        var description: String
        var choice: ResolutionChoice
        var supersededBy: FilePath? = nil
        var editedSince = false
        var record: ConflictRecord = ResolvePlanTests.two
        var steps: [String]
        var strategy: String
        var touchesPath = true
    }

    static let rows: [Row] = [
        Row(description: "keep a device: its version at the path", choice: .keep(device: "phone"), steps: ["place phone"], strategy: "keep:phone"),
        Row(description: "newest: the winner (the later edit)", choice: .newest, steps: ["place watch"], strategy: "newest"),
        Row(description: "newest after an edit committed since the conflict: that edit stays",
            choice: .newest, editedSince: true, steps: ["remove copies"], strategy: "newest", touchesPath: false),
        Row(description: "keep a device after such an edit: written as asked (the edit stays in the history)",
            choice: .keep(device: "phone"), editedSince: true, steps: ["place phone"], strategy: "keep:phone"),
        Row(description: "both: the others beside the path, the winner at it", choice: .both,
            steps: ["copies 1", "place watch keeping copies"], strategy: "both"),
        Row(description: "both, a file against a directory: the two stand as they are", choice: .both,
            record: record([phone, version("watch", "tree", at: "2026-11-28T00:00:20Z", directory: true)]), steps: [], strategy: "both"),
        Row(description: "with a file's bytes", choice: .with(bytes: Array("merged\n".utf8)), steps: ["put 7", "remove copies"], strategy: "with-file"),
        Row(description: "delete", choice: .delete, steps: ["remove", "remove copies"], strategy: "delete"),
        Row(description: "a directory above is now a file: closed as it is", choice: .keep(device: "phone"), supersededBy: "d",
            steps: [], strategy: "superseded (d is now a file)", touchesPath: false),
    ]

    @Test(arguments: rows) func table(_ row: Row) throws {
        let plan = try ResolvePlan.decide(row.record, row.choice, supersededBy: row.supersededBy, editedSince: row.editedSince)
        #expect(Self.describe(plan) == row.steps)
        #expect(plan.strategy == row.strategy)
        #expect(plan.touchesPath == row.touchesPath)
    }

    @Test func anUnknownDeviceIsRefusedWithTheNearestName() {
        #expect(throws: ResolveError.self) { try ResolvePlan.decide(Self.two, .keep(device: "phnoe"), supersededBy: nil, editedSince: false) }
        do {
            _ = try ResolvePlan.decide(Self.two, .keep(device: "phnoe"), supersededBy: nil, editedSince: false)
        } catch {
            #expect(error.message.contains("did you mean 'phone'"))
        }
    }
}
