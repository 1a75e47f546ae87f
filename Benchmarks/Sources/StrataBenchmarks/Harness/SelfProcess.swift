import Foundation
import Synchronization

/// This same executable, started again in another role: a workload process
/// (`--run-workload`) whose peak memory is its own, or a writer to be killed (`--run-writer`).
///
/// Standard error is shared with this process, so progress and error messages show up;
/// standard output is either captured (`waitForExit()` returns it) or discarded.
/// Not thread-safe; one owner at a time.
final class SelfProcess {
    /// How a process ended.
    enum Termination: CustomStringConvertible {
        case exited(Int32)
        case killed(signal: Int32)

        var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .killed(let signal): "was killed by signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    private let process = Process()
    private let output: Pipe?

    /// The processes started and not yet waited for, so an interrupted run can stop them.
    private static let running = Mutex<Set<Int32>>([])

    /// Starts the executable with `arguments`; `captureOutput` keeps its standard output.
    /// `cores`: run it (and the processes it starts) on CPUs 0...cores-1 only, through
    /// `taskset` (util-linux).
    init(arguments: [String], captureOutput: Bool, cores: Int? = nil) throws {
        if let cores {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = CPUAffinity.tasksetPrefix(cores: cores) + [try Self.executablePath()] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: try Self.executablePath())
            process.arguments = arguments
        }
        output = captureOutput ? Pipe() : nil
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        process.standardError = FileHandle.standardError
        try process.run()
        let pid = process.processIdentifier
        Self.running.withLock { _ = $0.insert(pid) }
    }

    /// The process id.
    var processIdentifier: Int32 { process.processIdentifier }

    /// Whether the process has not exited yet.
    var isRunning: Bool { process.isRunning }

    /// Sends `signal` (e.g. SIGKILL) to the process.
    func send(signal: Int32) throws {
        guard kill(process.processIdentifier, signal) == 0 else {
            throw BenchmarkError.system(call: "kill", path: "pid \(process.processIdentifier)", errno: errno)
        }
    }

    /// Waits until the process exits; returns its standard output (empty when not captured).
    func waitForExit() -> (output: String, termination: Termination) {
        // Read before waiting: a child blocked on a full pipe would never exit.
        let data = output?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        let pid = process.processIdentifier
        Self.running.withLock { _ = $0.remove(pid) }
        let termination: Termination = process.terminationReason == .uncaughtSignal
            ? .killed(signal: process.terminationStatus)
            : .exited(process.terminationStatus)
        return (String(decoding: data, as: UTF8.self), termination)
    }

    /// Sends SIGKILL to every process started here and not yet waited for.
    static func killAll() {
        for pid in running.withLock({ $0 }) { kill(pid, SIGKILL) }
    }

    /// The path of the running executable (`/proc/self/exe` resolved), so a child runs
    /// exactly this build.
    static func executablePath() throws -> String {
        if let resolved = realpath("/proc/self/exe", nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        if let path = Bundle.main.executablePath { return path }
        throw BenchmarkError.system(call: "realpath", path: "/proc/self/exe", errno: errno)
    }
}
