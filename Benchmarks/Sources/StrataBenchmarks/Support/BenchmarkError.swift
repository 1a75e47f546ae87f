import Foundation

/// Why the harness, a workload or a baseline could not produce a result. Descriptions are
/// written for the person running the benchmarks.
enum BenchmarkError: Error, CustomStringConvertible {
    /// The command line could not be understood.
    case usage(String)
    /// `--only` or `--run-workload` named a workload that is not registered.
    case unknownWorkload(String, available: [String])
    /// A system call failed.
    case system(call: String, path: String, errno: Int32)
    /// A workload process exited without printing a result.
    case workloadProcessFailed(workload: String, reason: String)
    /// A process's output was not what the harness expected.
    case malformedOutput(String)
    /// Data read back differs from what was written.
    case verificationFailed(String)
    /// A workload's setup did not go as planned (e.g. a writer that stopped on its own).
    case setupFailed(String)

    var description: String {
        switch self {
        case .usage(let message):
            return "\(message)\n\(CommandLineOptions.usage)"
        case let .unknownWorkload(name, available):
            return "unknown workload '\(name)'; available: \(available.joined(separator: ", "))"
        case let .system(call, path, errno):
            return "\(call)(\(path)) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        case let .workloadProcessFailed(workload, reason):
            return "workload '\(workload)' failed: \(reason)"
        case .malformedOutput(let message):
            return "unexpected output: \(message)"
        case .verificationFailed(let message):
            return "verification failed: \(message)"
        case .setupFailed(let message):
            return "setup failed: \(message)"
        }
    }
}
