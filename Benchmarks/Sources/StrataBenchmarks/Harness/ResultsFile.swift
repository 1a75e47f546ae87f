import Foundation

/// The JSON results file (`Benchmarks/results/latest.json` by default):
///
///     {"machine": {"cores": N, "memory_bytes": M, "os": "...", "cpu": "...", "swift": "...", "date": "ISO8601"},
///      "results": [{"workload": "...", "records": N, "strata_seconds": x,
///                   "baseline": "sqlite" | "lmdb" | "rocksdb" | "copy" | "strata-…" | null, "baseline_seconds": y | null,
///                   "ratio": x/y | null, "strata_peak_memory_bytes": m,
///                   "strata_peak_anon_memory_bytes": a, "notes": "...",
///                   "cores": 1 | 2, "baseline_settings": {...}, ...extra fields}]}
///
/// One row per workload × baseline × CPU count. Rows measured in alternating pairs of fresh
/// processes also carry `strata_pass_range_seconds` and `baseline_pass_range_seconds`
/// ([lowest, highest]) beside the medians. A ratio below 1 means Strata was faster than the
/// baseline.
struct ResultsFile {
    let machine: MachineDescription
    let results: [WorkloadResult]

    /// `results/latest.json` in the benchmarks package, wherever the command is run from.
    static var defaultPath: String {
        // This file is Benchmarks/Sources/StrataBenchmarks/Harness/ResultsFile.swift.
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return packageRoot.appendingPathComponent("results/latest.json").path
    }

    var json: JSONValue {
        .object([
            ("machine", machine.json),
            ("results", .array(results.map(\.json))),
        ])
    }

    /// Writes the file, creating its folder when missing.
    func write(to path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        try Data((json.prettyText + "\n").utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
