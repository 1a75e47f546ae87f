import Foundation
@testable import BenchmarkReport

/// Results files made up for the tests: the harness's row contract after issue 20 (LMDB and
/// RocksDB rows, one and two cores, `baseline_settings`) and before it (no `cores`).
enum SyntheticResults {
    /// Peers at one and two cores; migrations with `sizes` (10M included).
    static let peers = """
        {"machine": {"cores": 2, "cpu": "Test CPU", "date": "2026-12-02T05:00:00Z"},
         "results": [
          {"workload": "read-by-id", "records": 1000000, "strata_seconds": 0.2, "baseline": "sqlite", "baseline_seconds": 0.25,
           "ratio": 0.8, "strata_peak_memory_bytes": 104857600, "strata_peak_anon_memory_bytes": 41943040,
           "notes": "fair | sqlite", "cores": 2,
           "baseline_settings": {"mmap_size": 268435456}},
          {"workload": "read-by-id", "records": 1000000, "strata_seconds": 0.3, "baseline": "sqlite", "baseline_seconds": 0.25,
           "ratio": 1.2, "strata_peak_memory_bytes": 104857600, "notes": "", "cores": 1},
          {"workload": "read-by-id", "records": 1000000, "strata_seconds": 0.2, "baseline": "lmdb", "baseline_seconds": 0.1,
           "ratio": 2.0, "strata_peak_memory_bytes": 104857600, "notes": "", "cores": 2},
          {"workload": "read-by-id", "records": 1000000, "strata_seconds": 0.2, "baseline": "rocksdb", "baseline_seconds": 0.4,
           "ratio": 0.5, "strata_peak_memory_bytes": 104857600, "notes": "", "cores": 1},
          {"workload": "migrate-split", "records": 1000000, "strata_seconds": 0.4, "baseline": "sqlite", "baseline_seconds": 1.0,
           "ratio": 0.4, "strata_peak_memory_bytes": 30000000, "notes": "", "cores": 2, "launch_seconds": 0.4,
           "total_work_seconds": 1.1, "launch_ratio": 0.4, "total_work_ratio": 1.1,
           "sizes": [{"records": 100000, "seconds": 0.05, "sqlite_seconds": 0.1, "total_work_seconds": 0.12},
                     {"records": 1000000, "seconds": 0.4, "sqlite_seconds": 1.0, "total_work_seconds": 1.1},
                     {"records": 10000000, "seconds": 4.5, "sqlite_seconds": 11.0, "total_work_seconds": 12.0}]},
          {"workload": "migrate-lightweight", "records": 1000000, "strata_seconds": 0.003, "baseline": null,
           "baseline_seconds": null, "ratio": null, "strata_peak_memory_bytes": 25000000, "notes": "",
           "sizes": [{"records": 1000000, "seconds": 0.003}, {"records": 100000, "seconds": 0.002}]},
          {"workload": "count", "records": 1000000, "strata_seconds": 0.0000005, "baseline": "sqlite", "baseline_seconds": 0.02,
           "ratio": 0.000025, "strata_peak_memory_bytes": 25000000, "notes": ""}
         ]}
        """

    /// A file of the harness before issue 20: no `cores`.
    static let beforeIssue20 = """
        {"machine": {"cores": 2, "cpu": "Old CPU", "date": "2026-11-30T00:00:00Z"},
         "results": [
          {"workload": "read-by-id", "records": 1000000, "strata_seconds": 0.19, "baseline": "sqlite", "baseline_seconds": 0.2,
           "ratio": 0.95, "strata_peak_memory_bytes": 150000000, "notes": "old"},
          {"workload": "page-append", "records": 65536, "strata_seconds": 2.4, "baseline": "copy", "baseline_seconds": 2.0,
           "ratio": 1.2, "strata_peak_memory_bytes": 130000000, "notes": "old"}
         ]}
        """

    static func document(_ text: String, path: String) throws -> ResultsDocument {
        try ResultsDocument.parse(Data(text.utf8), path: path)
    }

    /// A new empty folder for files a test writes.
    static func temporaryFolder() throws -> String {
        let path = NSTemporaryDirectory() + "benchmark-report-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
