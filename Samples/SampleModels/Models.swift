// What the phone app and the watch app share: their data, and how a settings conflict is merged.
import Foundation
import SyncAgentKit

/// The app's settings, one JSON value at `settings.json`.
public struct Settings: Codable, Sendable, Equatable, CustomStringConvertible {
    public var theme: String
    public var units: String
    public var goalMinutes: Int

    public init(theme: String = "light", units: String = "km", goalMinutes: Int = 30) {
        self.theme = theme
        self.units = units
        self.goalMinutes = goalMinutes
    }

    public var description: String { "theme=\(theme) units=\(units) goal=\(goalMinutes)" }

    /// Field by field: a field one device changed from the base takes that change; a field both
    /// changed takes the later one (by time, then device name). The same answer on every device.
    public static func merge(_ conflict: Conflict<Settings>) -> Resolution<Settings> {
        let base = conflict.base?.value ?? Settings()
        let changed = conflict.versions.filter { $0.value != nil }.sorted { ($0.time, $0.device) < ($1.time, $1.device) }
        guard !changed.isEmpty else { return .decideLater }
        var merged = base
        for version in changed {
            guard let v = version.value else { continue }
            if v.theme != base.theme { merged.theme = v.theme }
            if v.units != base.units { merged.units = v.units }
            if v.goalMinutes != base.goalMinutes { merged.goalMinutes = v.goalMinutes }
        }
        return .value(merged)
    }
}

extension Settings {
    /// These settings with `--theme`, `--units` and `--goal` from the command line applied; nil
    /// when none of them is given.
    public func applyingOptions() -> Settings? {
        guard option("--theme") != nil || option("--units") != nil || option("--goal") != nil else { return nil }
        var next = self
        if let theme = option("--theme") { next.theme = theme }
        if let units = option("--units") { next.units = units }
        if let goal = option("--goal").flatMap(Int.init) { next.goalMinutes = goal }
        return next
    }
}

/// One logged workout, one key each under `workouts/`: devices never write the same one.
public struct Workout: Codable, Sendable, Equatable {
    public var kind: String
    public var minutes: Int
    public var device: String

    public init(kind: String, minutes: Int, device: String) {
        self.kind = kind
        self.minutes = minutes
        self.device = device
    }
}

/// Where an update came from, in words.
public func words(_ origin: Origin) -> String {
    switch origin {
    case .current: "current"
    case .thisDevice: "this device"
    case .peer(let name): "from \(name)"
    case .conflict(let id): "conflict \(id) opened"
    case .resolution(let by): "resolved by \(by ?? "?")"
    }
}

/// One line on stdout, at once (the demo and the tests read it while the app runs).
public func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// `--name value` from the command line.
public func option(_ name: String) -> String? {
    let args = CommandLine.arguments
    guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
    return args[i + 1]
}

public func flag(_ name: String) -> Bool { CommandLine.arguments.contains(name) }
