/// A progress bar on standard error for a command that can take over a second (verify, dump,
/// export, import, compact, backup):
///
/// ```
/// export [#############.................]  45%  4500/10000
/// copying [#############.................]  45%  12.3 MiB of 27.0 MiB
/// ```
///
/// redrawn in place (carriage return) only when the whole percentage changes — at most 101
/// drawings, however much work — and ended with a line break by `finish()`. Drawn only when
/// standard error is a terminal (`ToolOutput.errorIsTerminal`): piped or redirected, it writes
/// nothing, so logs and scripts see only the command's own lines.
///
/// Not thread-safe: one command on one thread updates it.
final class ProgressBar {
    /// What the units of work are, for the figures after the bar.
    enum Unit {
        /// Records, pages, steps: `4500/10000`.
        case count
        /// Bytes: `12.3 MiB of 27.0 MiB`.
        case bytes
    }

    private let total: UInt64
    private let label: String
    private let unit: Unit
    private let output: ToolOutput
    /// The percentage last drawn (nil: nothing drawn yet).
    private var drawn: Int?
    private var finished = false
    /// Characters of the bar between its brackets.
    static let width = 30

    /// A bar for `total` units of work, shown after `label`, drawn to `output`'s standard
    /// error when that is a terminal.
    init(total: UInt64, label: String, unit: Unit = .count, output: ToolOutput) {
        self.total = total
        self.label = label
        self.unit = unit
        self.output = output
    }

    /// A bar for a count that is an `Int` (negative counts as 0).
    convenience init(total: Int, label: String, output: ToolOutput) {
        self.init(total: UInt64(max(0, total)), label: label, unit: .count, output: output)
    }

    /// Shows that `done` of the total units are done (redrawn only when the whole percentage
    /// changed).
    func update(done: UInt64) {
        guard output.errorIsTerminal, !finished else { return }
        let percent = Self.percent(done: done, total: total)
        guard percent != drawn else { return }
        drawn = percent
        output.errorText("\r" + Self.line(label: label, percent: percent, done: done, total: total, unit: unit))
    }

    /// `update(done:)` for an `Int` count.
    func update(done: Int) { update(done: UInt64(max(0, done))) }

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
    static func line(label: String, percent: Int, done: UInt64, total: UInt64, unit: Unit) -> String {
        let filled = percent * width / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let figure = String(repeating: " ", count: max(0, 3 - String(percent).count)) + "\(percent)%"
        let amounts: String
        switch unit {
        case .count: amounts = "\(min(done, total))/\(total)"
        case .bytes: amounts = "\(mebibytes(min(done, total))) of \(mebibytes(total))"
        }
        return "\(label) [\(bar)] \(figure)  \(amounts)"
    }

    /// `12.3 MiB`.
    static func mebibytes(_ bytes: UInt64) -> String {
        let tenths = (bytes * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}
