import Foundation

/// The workload-process role (`--run-workload NAME`): runs one workload in this process,
/// so the peak memory it reports is the workload's own, and prints one JSON line on
/// standard output: the result, or `{"workload": NAME, "error": "why"}` when it failed.
enum WorkloadProcess {
    /// Runs the workload and returns the process's exit status: 0 with a result line, 1
    /// with an error line.
    static func run(name: String, options: CommandLineOptions) -> Int32 {
        do {
            guard let workload = WorkloadRegistry.workload(named: name) else {
                throw BenchmarkError.unknownWorkload(name, available: WorkloadRegistry.all.map(\.name))
            }
            // Started by hand without --workdir: use (and remove) a temporary folder of its own.
            let temporary = options.workFolder == nil ? try TemporaryFolder(parent: options.parentDirectory) : nil
            defer { try? temporary?.remove() }
            guard let folder = options.workFolder ?? temporary?.path else {
                throw BenchmarkError.setupFailed("no folder to work in")
            }
            let context = WorkloadContext(workloadName: name, scale: options.scale, folder: folder)
            var result = try workload.run(context)
            // A workload whose timed Strata work ran in a part process reports that part's peak.
            result.peakMemoryBytes = max(result.peakMemoryBytes, PeakMemory.currentProcessBytes())
            printLine(result.json)
            return 0
        } catch {
            printLine(.object([("workload", .string(name)), ("error", .string("\(error)"))]))
            return 1
        }
    }

    /// Runs `workload` in a new process of this executable and returns the result it printed.
    /// Throws when the process fails or prints no result.
    static func spawn(_ workload: Workload, folder: String, options: CommandLineOptions) throws -> WorkloadResult {
        let child = try SelfProcess(
            arguments: options.workloadArguments(name: workload.name, folder: folder),
            captureOutput: true
        )
        let (output, termination) = child.waitForExit()
        let line = output.split(separator: "\n").last { $0.hasPrefix("{") }
        let json = try line.map { try JSONValue(parsing: String($0)) }
        if let error = json?["error"]?.stringValue {
            throw BenchmarkError.workloadProcessFailed(workload: workload.name, reason: error)
        }
        guard case .exited(0) = termination else {
            throw BenchmarkError.workloadProcessFailed(workload: workload.name, reason: "its process \(termination)")
        }
        guard let json else {
            throw BenchmarkError.workloadProcessFailed(workload: workload.name, reason: "its process printed no result")
        }
        let result = try WorkloadResult(json: json)
        guard result.workload == workload.name else {
            throw BenchmarkError.malformedOutput("asked for '\(workload.name)', got a result for '\(result.workload)'")
        }
        return result
    }

    private static func printLine(_ json: JSONValue) {
        FileHandle.standardOutput.write(Data((json.compactText + "\n").utf8))
    }
}
