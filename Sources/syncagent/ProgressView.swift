import Agent
import Glibc
import SyncCore
import SystemPackage

/// How a task looks on one line: a bar, then `ProgressReport.line`.
enum ProgressLine {
    /// "[########------------]", or a moving "[   <=>   ]" while the total is unknown.
    static func bar(_ r: ProgressReport, width: Int) -> String {
        guard let total = r.total, total > 0 else {
            let at = r.done % max(1, width - 3)
            return "[" + String(repeating: " ", count: at) + "<=>" + String(repeating: " ", count: max(0, width - 3 - at)) + "]"
        }
        let filled = min(width, r.done * width / total)
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
    }
}

/// Draws long work on stderr while a command waits: on a terminal a live bar per task, redrawn in
/// place; piped, a plain line per task at most once a second and when it ends. Prints nothing for
/// work that ends before it is worth a line (`ProgressBoard` keeps only such work).
final class ProgressView: @unchecked Sendable {  // one caller at a time: the poller thread, then its stop
    private let terminal: Bool
    private var drawn = 0  // lines drawn last time (terminal)
    private var lastPrinted: [String: (done: Int, at: Double)] = [:]  // per task (piped)
    private var ended: Set<String> = []

    private let output: FileDescriptor

    init(terminal: Bool = isatty(STDERR_FILENO) == 1, output: FileDescriptor = .standardError) {
        self.terminal = terminal
        self.output = output
    }

    /// Shows the tasks as they are now.
    func show(_ tasks: [ProgressReport]) {
        terminal ? draw(tasks) : print(tasks)
    }

    /// The last picture stays (the cursor is below it already); what follows starts afresh.
    func end() {
        drawn = 0
    }

    private func key(_ r: ProgressReport) -> String { r.title + "@" + r.since }

    private func draw(_ tasks: [ProgressReport]) {
        var out = ""
        if drawn > 0 { out += "\u{1B}[\(drawn)A" }  // back to the first line drawn
        let columns = Self.columns()
        for r in tasks {
            var line = ProgressLine.bar(r, width: 20) + " " + r.line
            if line.count > columns - 1 { line = String(line.prefix(columns - 1)) }
            out += "\r\u{1B}[2K" + line + "\n"
        }
        for _ in tasks.count..<max(tasks.count, drawn) { out += "\r\u{1B}[2K\n" }  // lines a finished task left
        if drawn > tasks.count { out += "\u{1B}[\(drawn - tasks.count)A" }
        drawn = tasks.count
        write(out)
    }

    private func print(_ tasks: [ProgressReport]) {
        let now = Self.now()
        var out = ""
        for r in tasks where r.done > 0 {
            let k = key(r)
            if r.complete {
                guard !ended.contains(k) else { continue }
                ended.insert(k)
            } else if let last = lastPrinted[k], last.done == r.done || now - last.at < 1 {
                continue
            }
            lastPrinted[k] = (r.done, now)
            out += r.line + "\n"
        }
        if !out.isEmpty { write(out) }
    }

    private func write(_ text: String) {
        _ = try? output.writeAll(text.utf8)
    }

    private static func columns() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 else { return 80 }
        return Int(size.ws_col)
    }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
