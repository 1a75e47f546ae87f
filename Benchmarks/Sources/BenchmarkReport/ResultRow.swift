import Foundation

/// One row of a results file: one workload against one baseline at one core count (the
/// harness's row contract, issues 2 and 20). Rows written before issue 20 have no `cores`
/// (they ran on two) and no `baseline_settings`.
package struct ResultRow: Sendable, Equatable {
    /// The workload's name, e.g. "insert".
    package var workload: String
    /// How many records (or pages) it handled.
    package var records: Int
    /// Strata's time in seconds.
    package var strataSeconds: Double
    /// The baseline's name ("sqlite", "lmdb", "rocksdb", "copy", "strata-…"), or nil.
    package var baseline: String?
    /// The baseline's time in seconds, when there is a baseline.
    package var baselineSeconds: Double?
    /// Strata's time over the baseline's (below 1: Strata is faster), when there is one.
    package var ratio: Double?
    /// Peak resident memory of the Strata work, in bytes (VmHWM: mapped store pages included).
    package var peakMemoryBytes: Double
    /// Its peak anonymous memory (without mapped files' pages), when the file reports it.
    package var peakAnonymousMemoryBytes: Double?
    /// The harness's remark.
    package var notes: String
    /// The CPU cores the row ran on (1 or 2); 2 when the row does not say.
    package var cores: Int
    /// The whole row as written, for the fields of particular workloads (`sizes`, …).
    package var fields: ReportJSON

    /// Which rows are "the same measurement" when files are merged.
    package var key: String { "\(workload)|\(baseline ?? "-")|\(cores)" }

    /// Reads a row; `path` and `index` only name it in errors.
    package init(json: ReportJSON, path: String, index: Int) throws {
        guard let workload = json["workload"]?.string, let records = json["records"]?.number,
              let strataSeconds = json["strata_seconds"]?.number
        else {
            throw ReportError.malformedResults(path: path, reason: "result \(index) needs workload, records and strata_seconds")
        }
        self.workload = workload
        self.records = Int(records)
        self.strataSeconds = strataSeconds
        baseline = json["baseline"]?.string
        baselineSeconds = json["baseline_seconds"]?.number
        ratio = json["ratio"]?.number ?? baselineSeconds.flatMap { $0 > 0 ? strataSeconds / $0 : nil }
        if baseline != nil, baselineSeconds == nil {
            throw ReportError.malformedResults(path: path, reason: "result \(index) (\(workload)) names a baseline without baseline_seconds")
        }
        peakMemoryBytes = json["strata_peak_memory_bytes"]?.number ?? 0
        peakAnonymousMemoryBytes = json["strata_peak_anon_memory_bytes"]?.number
        notes = json["notes"]?.string ?? ""
        cores = json["cores"]?.number.map { Int($0) } ?? 2
        fields = json
    }

    /// A row made in code (tests, synthetic files).
    package init(workload: String, records: Int, strataSeconds: Double, baseline: String?, baselineSeconds: Double?,
                 peakMemoryBytes: Double = 0, notes: String = "", cores: Int = 2, fields: ReportJSON = .object([:])) {
        self.workload = workload
        self.records = records
        self.strataSeconds = strataSeconds
        self.baseline = baseline
        self.baselineSeconds = baselineSeconds
        self.ratio = baselineSeconds.flatMap { $0 > 0 ? strataSeconds / $0 : nil }
        self.peakMemoryBytes = peakMemoryBytes
        self.notes = notes
        self.cores = cores
        self.fields = fields
    }
}
