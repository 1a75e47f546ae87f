import Foundation

/// The driver role: runs the selected workloads one after another, each in a process of
/// its own on stores in one temporary folder — once per CPU count of `--cores` (2, then 1
/// by default), the process restricted with `taskset` — then prints the table and writes
/// the JSON file. A quick run without `--cores` skips the one-core run of a workload whose
/// rows have no baseline (no ratio to measure again), which keeps it near ten minutes. A workload that fails is reported by name and why, and makes the run exit
/// non-zero; the others still run and are written (no file is written without results).
struct BenchmarkDriver {
    let options: CommandLineOptions

    /// Runs everything; returns the exit status.
    func run() throws -> Int32 {
        let workloads = try WorkloadRegistry.select(options.only)
        let folder = try TemporaryFolder(parent: options.parentDirectory)
        let cleanup = InterruptCleanup(folder: folder)
        defer {
            cleanup.cancel()
            do { try folder.remove() } catch {
                StandardError.write("warning: could not remove \(folder.path): \(error)\n")
            }
        }
        StandardError.write("Strata benchmarks (\(options.scale.rawValue), cores \(options.coreCounts.map(String.init).joined(separator: " then "))), stores in \(folder.path)\n")
        let runStart = Stopwatch()

        var results: [WorkloadResult] = []
        var failures: [String] = []
        for workload in workloads {
            var rowsAtMoreCores: [WorkloadResult] = []
            for cores in options.coreCounts {
                if cores == 1, !options.coresGiven, options.scale == .quick,
                   !rowsAtMoreCores.isEmpty, rowsAtMoreCores.allSatisfy({ $0.baseline == nil }) {
                    StandardError.write("▸ \(workload.name) (1 core): skipped, no baseline to compare with (--cores both runs it)\n")
                    continue
                }
                StandardError.write("▸ \(workload.name) (\(cores) core\(cores == 1 ? "" : "s")): \(workload.summary)\n")
                do {
                    let workFolder = try folder.subfolder("\(workload.name)-\(cores)core")
                    defer { try? FileManager.default.removeItem(atPath: workFolder) }
                    let rows = try WorkloadProcess.spawn(workload, folder: workFolder, cores: cores, options: options)
                    results += rows
                    rowsAtMoreCores = rows
                } catch {
                    StandardError.write("error: \(error)\n")
                    failures.append("\(workload.name) (\(cores) cores)")
                }
            }
        }
        StandardError.write(String(format: "The run took %.0f s.\n", runStart.elapsedSeconds))

        print(ResultTable(results: results).text)
        print("\nSettings per engine:")
        for engine in PeerEngine.allCases { print("  \(engine.rawValue): \(engine.settings.compactText)") }
        if !results.isEmpty {
            let path = options.jsonPath ?? ResultsFile.defaultPath
            try ResultsFile(machine: MachineDescription.current(), results: results).write(to: path)
            print("Results written to \(path)")
        }
        guard failures.isEmpty else {
            StandardError.write("\(failures.count) workload(s) failed: \(failures.joined(separator: ", "))\n")
            return 1
        }
        return 0
    }
}
