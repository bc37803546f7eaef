import FoundationEssentials
import Glibc
import SystemPackage

/// Where the config file is: `--config PATH`, else `$SYNCAGENT_CONFIG`, else `./syncagent.toml` when it
/// exists, else `$XDG_CONFIG_HOME/syncagent/config.toml` (`$XDG_CONFIG_HOME` defaulting to `~/.config`).
public enum ConfigLocator {
    /// The config file to read; throws a `ConfigError` saying where it looked when there is none.
    public static func locate(
        explicit: String?, environment: [String: String], currentDirectory: FilePath
    ) throws -> FilePath {
        let advice = "run `syncagent init --device NAME --data DIR` to create one, or pass --config PATH"
        if let named = named(explicit, environment, currentDirectory) {
            guard exists(named.path) else {
                throw ConfigError(file: named.path, message: "no such config file (named by \(named.origin)); \(advice)")
            }
            return named.path
        }
        let candidates = searched(environment, currentDirectory)
        if let found = candidates.first(where: exists) { return found }
        let looked = candidates.map(\.string).joined(separator: ", ")
        throw ConfigError(file: candidates.last!, message: "no config file found (looked at \(looked)); \(advice)")
    }

    /// The config file `syncagent init` writes: the same order, without requiring that the file exists.
    public static func target(explicit: String?, environment: [String: String], currentDirectory: FilePath) -> FilePath {
        if let named = named(explicit, environment, currentDirectory) { return named.path }
        let candidates = searched(environment, currentDirectory)
        return candidates.first(where: exists) ?? candidates.last!
    }

    /// `text` as an absolute, normalized path: a leading `~` is `home`, other relative paths start at `base`.
    /// Nil when `text` starts with `~` and there is no home directory.
    static func resolve(_ text: String, relativeTo base: FilePath, home: String?) -> FilePath? {
        var text = text
        if text == "~" || text.hasPrefix("~/") {
            guard let home, FilePath(home).isAbsolute else { return nil }
            text = home + text.dropFirst()
        }
        return base.pushing(FilePath(text)).lexicallyNormalized()
    }

    /// The XDG base directory rule: `$<variable>` when it is an absolute path, else `$HOME/<fallback>`.
    static func xdgDirectory(_ variable: String, fallback: String, environment: [String: String]) -> FilePath? {
        if let value = environment[variable], FilePath(value).isAbsolute { return FilePath(value) }
        if let home = environment["HOME"], FilePath(home).isAbsolute { return FilePath(home).appending(fallback) }
        return nil
    }

    /// The path given by `--config` or `$SYNCAGENT_CONFIG`, and which of the two gave it.
    private static func named(
        _ explicit: String?, _ environment: [String: String], _ currentDirectory: FilePath
    ) -> (path: FilePath, origin: String)? {
        let choices = [("--config", explicit), ("$SYNCAGENT_CONFIG", environment["SYNCAGENT_CONFIG"])]
        for case let (origin, text?) in choices where !text.isEmpty {
            let path = resolve(text, relativeTo: currentDirectory, home: environment["HOME"])
                ?? currentDirectory.pushing(FilePath(text)).lexicallyNormalized()
            return (path, origin)
        }
        return nil
    }

    /// The places searched when no path is named, in order; never empty.
    private static func searched(_ environment: [String: String], _ currentDirectory: FilePath) -> [FilePath] {
        let local = currentDirectory.appending("syncagent.toml").lexicallyNormalized()
        guard let config = xdgDirectory("XDG_CONFIG_HOME", fallback: ".config", environment: environment) else {
            return [local]
        }
        return [local, config.appending("syncagent/config.toml").lexicallyNormalized()]
    }

    private static func exists(_ path: FilePath) -> Bool {
        FileManager.default.fileExists(atPath: path.string)
    }
}
