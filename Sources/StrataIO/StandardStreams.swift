/// The process's standard output and error and its exit, for the `strata` tool
/// (Sources/StrataTool): the only system calls a command-line front end needs, kept in the
/// I/O layer with the others. Writes are unbuffered `write(2)` calls; callers batch.
package enum StandardStreams {
    /// Standard output's file descriptor.
    package static let output: Int32 = 1
    /// Standard error's file descriptor.
    package static let error: Int32 = 2

    /// Writes every byte of `bytes` to `descriptor`, retrying after a signal and a partial
    /// write (write(2)). Returns false when a write fails (a closed pipe: the reader went away).
    @discardableResult
    package static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count, let base = buffer.baseAddress {
                let written = Platform.write(descriptor, base + offset, buffer.count - offset)
                if written < 0 {
                    if Platform.errno == Platform.interrupted { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    /// Whether `descriptor` is a terminal (isatty(3)): the `strata` tool draws a progress bar on
    /// standard error only then.
    package static func isTerminal(_ descriptor: Int32) -> Bool {
        Platform.isTerminal(descriptor)
    }

    /// Ends the process with `status` (exit(3)).
    package static func exit(status: Int32) -> Never {
        Platform.exit(status)
    }
}
