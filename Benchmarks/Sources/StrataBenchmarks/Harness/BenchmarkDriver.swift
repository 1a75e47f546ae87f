import Foundation

/// The driver role: runs the selected workloads one after another, each in a process of
/// its own on stores in one temporary folder, then prints the table and writes the JSON
/// file. A workload that fails is reported by name and why, and makes the run exit
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
        StandardError.write("Strata benchmarks (\(options.scale.rawValue)), stores in \(folder.path)\n")

        var results: [WorkloadResult] = []
        var failures: [String] = []
        for workload in workloads {
            StandardError.write("▸ \(workload.name): \(workload.summary)\n")
            do {
                let workFolder = try folder.subfolder(workload.name)
                defer { try? FileManager.default.removeItem(atPath: workFolder) }
                results.append(try WorkloadProcess.spawn(workload, folder: workFolder, options: options))
            } catch {
                StandardError.write("error: \(error)\n")
                failures.append(workload.name)
            }
        }

        print(ResultTable(results: results).text)
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
