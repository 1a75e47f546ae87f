/// A progress bar on standard error for a command that can take over a second (`backup`):
/// `label [#########...........]  45%  12.3 MiB of 27.0 MiB`, redrawn in place (carriage
/// return) when the whole percentage changes, and ended with a line break by `finish()`.
/// Drawn only when standard error is a terminal (`ToolOutput.errorIsTerminal`): piped or
/// redirected, it writes nothing, so logs and scripts see only the command's own lines.
///
/// Not thread-safe: one command on one thread updates it.
final class ProgressBar {
    private let total: UInt64
    private let label: String
    private let output: ToolOutput
    /// The percentage last drawn (nil: nothing drawn yet).
    private var drawn: Int?
    private var finished = false
    /// Characters of the bar between its brackets.
    static let width = 30

    /// A bar for `total` units (bytes) of work, shown after `label`, drawn to `output`'s
    /// standard error when that is a terminal.
    init(total: UInt64, label: String, output: ToolOutput) {
        self.total = total
        self.label = label
        self.output = output
    }

    /// Shows that `done` of the total units are done (redrawn only when the whole percentage
    /// changed).
    func update(done: UInt64) {
        guard output.errorIsTerminal, !finished else { return }
        let percent = Self.percent(done: done, total: total)
        guard percent != drawn else { return }
        drawn = percent
        output.errorText("\r" + Self.line(label: label, percent: percent, done: done, total: total))
    }

    /// Draws the bar full and ends its line; later updates draw nothing.
    func finish() {
        guard output.errorIsTerminal, !finished else { return }
        update(done: total)
        finished = true
        output.errorText("\n")
    }

    /// The whole percentage of `done` in `total` (100 for an empty total), 0…100.
    static func percent(done: UInt64, total: UInt64) -> Int {
        total == 0 ? 100 : Int(min(100, Double(done) * 100 / Double(total)))
    }

    /// One drawing of the bar (without the carriage return).
    static func line(label: String, percent: Int, done: UInt64, total: UInt64) -> String {
        let filled = percent * width / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let figure = String(repeating: " ", count: max(0, 3 - String(percent).count)) + "\(percent)%"
        return "\(label) [\(bar)] \(figure)  \(mebibytes(min(done, total))) of \(mebibytes(total))"
    }

    /// `12.3 MiB`.
    static func mebibytes(_ bytes: UInt64) -> String {
        let tenths = (bytes * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}
