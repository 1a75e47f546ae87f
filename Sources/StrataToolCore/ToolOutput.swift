/// Where a command writes: standard output, batched (a dump writes millions of lines), and
/// standard error, line by line. The `strata` executable hands it the process's streams;
/// tests capture both.
///
/// Not thread-safe: one command on one thread writes to it.
package final class ToolOutput {
    private var pending: [UInt8] = []
    private let writeOutput: ([UInt8]) -> Void
    private let writeError: (String) -> Void
    /// Output is handed on once this many bytes are pending.
    static let batchBytes = 64 << 10

    /// Whether standard error is a terminal: progress bars (`ProgressBar`) are drawn only then.
    let errorIsTerminal: Bool

    /// An output that hands standard output's bytes to `output` in batches and each message
    /// for standard error to `error`. `errorIsTerminal`: whether standard error is a terminal
    /// (the executable asks isatty(3); tests say).
    package init(output: @escaping ([UInt8]) -> Void, error: @escaping (String) -> Void, errorIsTerminal: Bool = false) {
        writeOutput = output
        writeError = error
        self.errorIsTerminal = errorIsTerminal
    }

    /// Writes `text` to standard output.
    func write(_ text: String) {
        pending.append(contentsOf: text.utf8)
        if pending.count >= Self.batchBytes { flush() }
    }

    /// Writes `text` and a line break to standard output.
    func line(_ text: String = "") {
        write(text)
        pending.append(UInt8(ascii: "\n"))
    }

    /// Writes `text` and a line break to standard error (after what standard output holds, so
    /// the two stay in order on a terminal).
    func error(_ text: String) {
        flush()
        writeError(text + "\n")
    }

    /// Writes `text` to standard error as it is, without a line break (a progress bar's
    /// redraw), after what standard output holds.
    func errorText(_ text: String) {
        flush()
        writeError(text)
    }

    /// Hands on what standard output holds.
    package func flush() {
        guard !pending.isEmpty else { return }
        writeOutput(pending)
        pending.removeAll(keepingCapacity: true)
    }
}
