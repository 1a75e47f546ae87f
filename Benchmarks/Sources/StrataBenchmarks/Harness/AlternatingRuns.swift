import Foundation

/// Timed runs of Strata and its baselines, each in a fresh process, alternating: round r runs
/// part "time-strata" and part "time-<baseline>" for every baseline — Strata first in even
/// rounds, last in odd ones, so that no side always follows another (the machine's page
/// cache, turbo and neighbours then favour neither). Each timed part reports its `seconds`
/// (and may report `store_bytes` and more); the part's process adds its peak memory.
///
/// The rows (`rows`) compare Strata's runs with each baseline's: medians, ranges, and the
/// ratio of each round's pair.
struct AlternatingRuns {
    /// Each side's reports ("strata", then the baselines' names), in the order run.
    private(set) var reports: [String: [PartReport]] = [:]
    let baselines: [String]

    /// The part that times side `name` once.
    static func timedPartName(_ side: String) -> String { "time-\(side)" }

    /// Runs `rounds` rounds (see the type). `check` gets each side's report and throws when
    /// its answer is wrong.
    static func run(
        _ context: WorkloadContext, rounds: Int, baselines: [String],
        check: (String, PartReport) throws -> Void
    ) throws -> AlternatingRuns {
        var runs = AlternatingRuns(baselines: baselines)
        for round in 0..<rounds {
            let order = round % 2 == 0 ? ["strata"] + baselines : baselines + ["strata"]
            for side in order {
                context.progress("round \(round + 1) of \(rounds): \(side) (a fresh process)")
                let report = try context.runPartProcess(timedPartName(side))
                try check(side, report)
                runs.reports[side, default: []].append(report)
            }
        }
        return runs
    }

    /// The seconds of side `name`'s runs.
    func seconds(_ side: String) throws -> [Double] {
        try (reports[side] ?? []).map { try $0.double("seconds") }
    }

    /// The highest peak memory of side `name`'s processes.
    func peakMemory(_ side: String) throws -> UInt64 {
        try (reports[side] ?? []).map { try $0.peakMemoryBytes }.max() ?? 0
    }

    /// The highest peak anonymous memory of side `name`'s processes.
    func peakAnonymousMemory(_ side: String) -> UInt64 {
        (reports[side] ?? []).map(\.peakAnonymousMemoryBytes).max() ?? 0
    }

    /// One row per baseline: Strata's median against the baseline's, with both ranges, every
    /// pass, the pairs' ratios and the peaks. `settings` gives a baseline's
    /// `baseline_settings`; `storeBytes` a side's size on disk (nil: not reported);
    /// `notes` and `extra` are the workload's own, put first.
    func rows(
        workload: String, records: Int, notes: String, extra: [(key: String, value: JSONValue)],
        settings: (String) -> [(key: String, value: JSONValue)], storeBytes: (String) -> UInt64?
    ) throws -> [WorkloadResult] {
        let strata = try seconds("strata")
        let strataPeak = try peakMemory("strata")
        return try baselines.map { baseline in
            let peer = try seconds(baseline)
            let peerPeak = try peakMemory(baseline)
            let ratios = zip(strata, peer).map { $0 / $1 }
            var sizes = ""
            var sizeFields: [(key: String, value: JSONValue)] = []
            if let strataBytes = storeBytes("strata"), let peerBytes = storeBytes(baseline) {
                sizes = "; on disk Strata \(ByteCount.text(strataBytes)), \(baseline) \(ByteCount.text(peerBytes))"
                sizeFields = [("strata_store_bytes", .int(Int64(clamping: strataBytes))),
                              ("baseline_store_bytes", .int(Int64(clamping: peerBytes)))]
            }
            var row = WorkloadResult(
                workload: workload, records: records,
                strataSeconds: Measurements.median(strata),
                baseline: WorkloadResult.Baseline(name: baseline, seconds: Measurements.median(peer)),
                notes: "\(notes); medians of \(ratios.count) alternating pairs of fresh processes, ratios \(Measurements.range(ratios))"
                    + "\(sizes) (\(baseline) peak \(String(format: "%.0f MB", Double(peerPeak) / 1_048_576)))",
                extra: extra + [
                    ("strata_pass_range_seconds", Self.range(strata)),
                    ("baseline_pass_range_seconds", Self.range(peer)),
                    ("strata_pass_seconds", .array(strata.map { .double($0) })),
                    ("baseline_pass_seconds", .array(peer.map { .double($0) })),
                    ("pair_ratios", .array(ratios.map { .double($0) })),
                    ("baseline_peak_memory_bytes", .int(Int64(clamping: peerPeak))),
                    ("baseline_peak_anon_memory_bytes", .int(Int64(clamping: peakAnonymousMemory(baseline)))),
                ] + sizeFields
            )
            row.peakMemoryBytes = strataPeak
            row.peakAnonymousMemoryBytes = peakAnonymousMemory("strata")
            row.baselineSettings = settings(baseline)
            return row
        }
    }

    /// [lowest, highest].
    private static func range(_ values: [Double]) -> JSONValue {
        .array([.double(values.min() ?? 0), .double(values.max() ?? 0)])
    }
}

extension JSONValue {
    /// The members of an object; empty for any other value.
    var members: [(key: String, value: JSONValue)] {
        if case .object(let members) = self { return members }
        return []
    }
}
