import Foundation

/// The workload-process role (`--run-workload NAME`): runs one workload in this process,
/// so the peak memory it reports is the workload's own, and prints one JSON line on
/// standard output: `{"workload": NAME, "rows": [result, …]}` (a row per baseline), or
/// `{"workload": NAME, "error": "why"}` when it failed. Started with `--cores N`, it first
/// checks that it may run on exactly N CPUs and marks its rows with N.
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
            let cpuList = try options.restrictedCores.map { try CPUAffinity.check(cores: $0) }
            let context = WorkloadContext(workloadName: name, scale: options.scale, folder: folder, cores: options.restrictedCores)
            var rows = try workload.run(context)
            for index in rows.indices {
                // A workload whose timed Strata work ran in a part process reports that part's peak.
                rows[index].peakMemoryBytes = max(rows[index].peakMemoryBytes, PeakMemory.currentProcessBytes())
                rows[index].peakAnonymousMemoryBytes = max(rows[index].peakAnonymousMemoryBytes, PeakMemory.anonymousPeakBytes())
                rows[index].cores = options.restrictedCores
                if let cpuList { rows[index].extra.append(("cpus_allowed_list", .string(cpuList))) }
            }
            printLine(.object([("workload", .string(name)), ("rows", .array(rows.map(\.json)))]))
            return 0
        } catch {
            printLine(.object([("workload", .string(name)), ("error", .string("\(error)"))]))
            return 1
        }
    }

    /// Runs `workload` in a new process of this executable on `cores` CPUs and returns the
    /// rows it printed. Throws when the process fails or prints no result.
    static func spawn(_ workload: Workload, folder: String, cores: Int, options: CommandLineOptions) throws -> [WorkloadResult] {
        let child = try SelfProcess(
            arguments: options.workloadArguments(name: workload.name, folder: folder, cores: cores),
            captureOutput: true, cores: cores
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
        guard case .array(let rowValues)? = json?["rows"], !rowValues.isEmpty else {
            throw BenchmarkError.workloadProcessFailed(workload: workload.name, reason: "its process printed no result")
        }
        let rows = try rowValues.map(WorkloadResult.init(json:))
        if let stranger = rows.first(where: { $0.workload != workload.name }) {
            throw BenchmarkError.malformedOutput("asked for '\(workload.name)', got a result for '\(stranger.workload)'")
        }
        return rows
    }

    private static func printLine(_ json: JSONValue) {
        FileHandle.standardOutput.write(Data((json.compactText + "\n").utf8))
    }
}
