/// What one workload measured: one row of the table and one element of `results` in the
/// JSON file. A workload process prints it as a single JSON line.
struct WorkloadResult: Sendable {
    /// What Strata was compared with.
    struct Baseline: Sendable {
        /// "sqlite", "lmdb", "rocksdb", "copy" (the same bytes written to a plain file), or a
        /// Strata variant such as "strata-no-history".
        var name: String
        var seconds: Double

        static func copy(seconds: Double) -> Baseline { Baseline(name: "copy", seconds: seconds) }
        static func sqlite(seconds: Double) -> Baseline { Baseline(name: "sqlite", seconds: seconds) }
    }

    var workload: String
    /// How many records (or pages) the workload handled.
    var records: Int
    var strataSeconds: Double
    var baseline: Baseline?
    /// The workload process's peak resident memory (VmHWM), filled in by the harness.
    var peakMemoryBytes: UInt64 = 0
    /// Its peak anonymous resident memory (`PeakMemory`: without the pages of mapped files).
    var peakAnonymousMemoryBytes: UInt64 = 0
    /// A short remark for the table, e.g. sizes and how the figure was taken.
    var notes: String
    /// How many CPUs the workload's processes (Strata's and the baseline's) were allowed to
    /// use; set by the harness.
    var cores: Int?
    /// The baseline's settings (sync, cache, compression…); empty when there are none to say.
    var baselineSettings: [(key: String, value: JSONValue)] = []
    /// Fields specific to the workload, written after the common ones.
    var extra: [(key: String, value: JSONValue)]

    init(
        workload: String, records: Int, strataSeconds: Double, baseline: Baseline?,
        notes: String, extra: [(key: String, value: JSONValue)] = []
    ) {
        self.workload = workload
        self.records = records
        self.strataSeconds = strataSeconds
        self.baseline = baseline
        self.notes = notes
        self.extra = extra
    }

    /// Strata's time over the baseline's: below 1 means Strata is faster.
    var ratio: Double? {
        guard let baseline, baseline.seconds > 0 else { return nil }
        return strataSeconds / baseline.seconds
    }
}

// MARK: - JSON

extension WorkloadResult {
    private static let commonKeys: Set<String> = [
        "workload", "records", "strata_seconds", "baseline", "baseline_seconds", "ratio",
        "strata_peak_memory_bytes", "strata_peak_anon_memory_bytes", "notes", "cores", "baseline_settings",
    ]

    /// The result as written in `results` of the JSON file.
    var json: JSONValue {
        let common: [(key: String, value: JSONValue)] = [
            ("workload", .string(workload)),
            ("records", .int(Int64(records))),
            ("strata_seconds", .double(strataSeconds)),
            ("baseline", baseline.map { .string($0.name) } ?? .null),
            ("baseline_seconds", baseline.map { .double($0.seconds) } ?? .null),
            ("ratio", ratio.map { .double($0) } ?? .null),
            ("strata_peak_memory_bytes", .int(Int64(clamping: peakMemoryBytes))),
            ("strata_peak_anon_memory_bytes", .int(Int64(clamping: peakAnonymousMemoryBytes))),
            ("notes", .string(notes)),
            ("cores", cores.map { .int(Int64($0)) } ?? .null),
            ("baseline_settings", .object(baselineSettings)),
        ]
        return .object(common + extra.filter { !Self.commonKeys.contains($0.key) })
    }

    /// Reads a result back from its JSON form (as printed by a workload process).
    init(json: JSONValue) throws {
        guard let workload = json["workload"]?.stringValue,
              let records = json["records"]?.int64Value,
              let strataSeconds = json["strata_seconds"]?.doubleValue
        else {
            throw BenchmarkError.malformedOutput("a result needs workload, records and strata_seconds: \(json.compactText)")
        }
        var baseline: Baseline?
        if let name = json["baseline"]?.stringValue {
            guard let seconds = json["baseline_seconds"]?.doubleValue else {
                throw BenchmarkError.malformedOutput("baseline '\(name)' has no baseline_seconds: \(json.compactText)")
            }
            baseline = Baseline(name: name, seconds: seconds)
        }
        self.init(
            workload: workload, records: Int(records), strataSeconds: strataSeconds, baseline: baseline,
            notes: json["notes"]?.stringValue ?? ""
        )
        peakMemoryBytes = UInt64(clamping: json["strata_peak_memory_bytes"]?.int64Value ?? 0)
        peakAnonymousMemoryBytes = UInt64(clamping: json["strata_peak_anon_memory_bytes"]?.int64Value ?? 0)
        cores = json["cores"]?.int64Value.map { Int($0) }
        if case .object(let settings)? = json["baseline_settings"] { baselineSettings = settings }
        if case .object(let members) = json {
            extra = members.filter { !Self.commonKeys.contains($0.key) }
        }
    }
}
