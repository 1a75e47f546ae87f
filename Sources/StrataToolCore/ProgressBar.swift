import StrataIO

/// A progress bar on standard error, for a command that may take more than a second
/// (verify, dump, export, import, compact): drawn only when standard error is a terminal,
/// only once the work has run for a second, and redrawn at most ten times a second, so
/// scripts and pipes see nothing of it and quick commands none either.
///
/// ```
/// export [##########----------]  50%  5000/10000
/// ```
///
/// Not thread-safe: the thread doing the work updates it.
package final class ProgressBar {
    /// How much work there is (records, pages, bytes), and what is being done.
    let total: Int
    let label: String
    private let sink: ((String) -> Void)?
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var lastDrawn: ContinuousClock.Instant?
    private var drawn = false
    /// Shown once the work has run this long; redrawn at most this often.
    static let delay = Duration.seconds(1)
    static let interval = Duration.milliseconds(100)
    static let width = 20

    /// A bar for `total` units of work labelled `label`, drawn on standard error when it is a
    /// terminal (isatty(3)); otherwise it draws nothing.
    package convenience init(total: Int, label: String) {
        let sink: ((String) -> Void)? = StandardStreams.isTerminal(StandardStreams.error)
            ? { StandardStreams.write(Array($0.utf8), to: StandardStreams.error) } : nil
        self.init(total: total, label: label, sink: sink)
    }

    /// A bar drawing into `sink` (nil: nowhere).
    init(total: Int, label: String, sink: ((String) -> Void)?) {
        self.total = max(0, total)
        self.label = label
        self.sink = sink
        start = clock.now
    }

    /// Records that `done` units of `total` are done, redrawing when it is time.
    package func update(done: Int) {
        guard let sink else { return }
        let now = clock.now
        guard now - start >= Self.delay else { return }
        if let lastDrawn, now - lastDrawn < Self.interval { return }
        lastDrawn = now
        drawn = true
        sink("\r" + Self.line(label: label, done: done, total: total) + "\u{1B}[K")
    }

    /// Clears the bar (when drawn); call once the work is done.
    package func finish() {
        guard drawn, let sink else { return }
        drawn = false
        sink("\r\u{1B}[K")
    }

    /// `label [#####---------------]  25%  250/1000`: the bar's text for `done` of `total`.
    static func line(label: String, done: Int, total: Int) -> String {
        let fraction = total > 0 ? min(1, Double(max(0, done)) / Double(total)) : 1
        let filled = Int((fraction * Double(width)).rounded(.down))
        let percent = String(Int((fraction * 100).rounded(.down)))
        return "\(label) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            + String(repeating: " ", count: 3 - percent.count) + percent + "%  \(done)/\(total)"
    }
}
