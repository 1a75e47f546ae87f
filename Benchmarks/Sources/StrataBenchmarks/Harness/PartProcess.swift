import Foundation

/// The part-process role (`--run-part WORKLOAD:PART --workdir PATH`): runs one of a
/// workload's `parts` in a process of its own, started by the workload process — the
/// baseline's half (SQLite) or a setup step — so that the workload process's peak memory
/// is that of the Strata work it times, nothing else. The part works in the workload's
/// folder; the process prints one JSON line: what the part reported plus this process's
/// `peak_memory_bytes` and `peak_anon_memory_bytes` (`PeakMemory`), or `{"error": "why"}`.
enum PartProcess {
    /// Runs the part named `"WORKLOAD:PART"` and returns the process's exit status: 0 with a
    /// report line, 1 with an error line.
    static func run(qualifiedName: String, options: CommandLineOptions) -> Int32 {
        do {
            let (workloadName, partName) = try split(qualifiedName)
            guard let workload = WorkloadRegistry.workload(named: workloadName) else {
                throw BenchmarkError.unknownWorkload(workloadName, available: WorkloadRegistry.all.map(\.name))
            }
            guard let part = workload.parts[partName] else {
                let available = workload.parts.keys.sorted().joined(separator: ", ")
                throw BenchmarkError.setupFailed("workload '\(workloadName)' has no part '\(partName)' (it has: \(available))")
            }
            guard let folder = options.workFolder else { throw BenchmarkError.usage("--run-part needs --workdir") }
            if let cores = options.restrictedCores { try CPUAffinity.check(cores: cores) }
            let context = WorkloadContext(workloadName: qualifiedName, scale: options.scale, folder: folder, cores: options.restrictedCores)
            guard case .object(let members) = try part(context) else {
                throw BenchmarkError.malformedOutput("part '\(qualifiedName)' did not return a JSON object")
            }
            printLine(.object(members + [("peak_memory_bytes", .int(Int64(clamping: PeakMemory.currentProcessBytes()))),
                                         ("peak_anon_memory_bytes", .int(Int64(clamping: PeakMemory.anonymousPeakBytes())))]))
            return 0
        } catch {
            printLine(.object([("error", .string("\(error)"))]))
            return 1
        }
    }

    /// Runs part `partName` of `context`'s workload in a new process of this executable, on
    /// the same folder and sizes, and returns its report. Throws when the process fails or
    /// prints no report.
    static func spawn(_ partName: String, of context: WorkloadContext) throws -> PartReport {
        let name = "\(context.workloadName):\(partName)"
        let child = try SelfProcess(
            arguments: CommandLineOptions.partArguments(qualifiedName: name, scale: context.scale, folder: context.folder, cores: context.cores),
            captureOutput: true
        )
        let (output, termination) = child.waitForExit()
        let line = output.split(separator: "\n").last { $0.hasPrefix("{") }
        let json = try line.map { try JSONValue(parsing: String($0)) }
        if let error = json?["error"]?.stringValue {
            throw BenchmarkError.setupFailed("the process of part '\(name)' failed: \(error)")
        }
        guard case .exited(0) = termination, let json else {
            throw BenchmarkError.setupFailed("the process of part '\(name)' \(termination) without a report")
        }
        return PartReport(partName: name, json: json)
    }

    private static func split(_ qualifiedName: String) throws -> (workload: String, part: String) {
        let pieces = qualifiedName.split(separator: ":", maxSplits: 1)
        guard pieces.count == 2 else { throw BenchmarkError.usage("--run-part needs WORKLOAD:PART, not '\(qualifiedName)'") }
        return (String(pieces[0]), String(pieces[1]))
    }

    private static func printLine(_ json: JSONValue) {
        FileHandle.standardOutput.write(Data((json.compactText + "\n").utf8))
    }
}
