import Foundation

/// How the insert workloads (tree-insert, insert) compare Strata with each peer: the
/// persons 1...N inserted in ONE durable transaction into a new store, timed from opening
/// it to closing it (generating each person included), in `AlternatingRuns` — each run a
/// fresh process on a new store. Afterwards each side's last store is checked in a process
/// of its own (parts "verify-strata", "verify-<peer>": count, sample field by field).
enum PeerInsertComparison {
    /// Creates Strata's store at a path, inserts persons 1...count durably, closes it.
    typealias StrataInsert = @Sendable (_ path: String, _ count: Int) throws -> InsertPhases

    /// Alternating pairs per row.
    static let rounds = 3

    /// An insert workload. `values`: what the peers are handed (`.records` for the record
    /// API rows, as Strata's side makes a `PersonRecord` of each person); `verifyStrata`
    /// the part that checks Strata's store (reporting `sample_checksum`).
    static func workload(
        name: String, summary: String, values: PersonValues,
        strata: @escaping StrataInsert, verifyStrata: @escaping Workload.Part,
        notes: String, generationSeconds: @escaping @Sendable (Int) -> Double
    ) -> Workload {
        var parts: [String: Workload.Part] = [
            "verify-strata": verifyStrata,
            AlternatingRuns.timedPartName("strata"): { context in
                let path = TreeWorkloads.strataPath(context)
                try? FileManager.default.removeItem(atPath: path)
                sync()
                let phases = try strata(path, TreeWorkloads.recordCount(context.scale))
                return .object([("seconds", .double(phases.total)),
                                ("store_bytes", .int(Int64(clamping: FolderSize.bytes(at: path))))] + phases.json(prefix: "run"))
            },
        ]
        for engine in PeerEngine.allCases {
            parts["verify-\(engine.rawValue)"] = { context in
                let store = try engine.open(folder: engine.folder(context))
                let sample = try store.verifyPersons(count: TreeWorkloads.recordCount(context.scale))
                try store.close()
                return .object([("sample_checksum", .int(Int64(bitPattern: sample.value)))])
            }
            parts[AlternatingRuns.timedPartName(engine.rawValue)] = { context in
                let folder = engine.folder(context)
                try? FileManager.default.removeItem(atPath: folder)
                sync()
                let phases = try timePeerInsert(engine, folder: folder, count: TreeWorkloads.recordCount(context.scale), values: values)
                return .object([("seconds", .double(phases.total)),
                                ("store_bytes", .int(Int64(clamping: FolderSize.bytes(at: folder))))] + phases.json(prefix: "run"))
            }
        }
        return Workload(name: name, summary: summary, rows: { context in
            try run(context, notes: notes, generationSeconds: generationSeconds)
        }, parts: parts)
    }

    /// Opens a new store of `engine` in `folder`, inserts persons 1...count in one
    /// transaction, commits and closes it, timing each phase.
    private static func timePeerInsert(_ engine: PeerEngine, folder: String, count: Int, values: PersonValues) throws -> InsertPhases {
        var phases = InsertPhases()
        let stopwatch = Stopwatch()
        let store = try engine.open(folder: folder)
        phases.open = stopwatch.elapsedSeconds
        try store.beginWrite()
        try store.insertPersons(count: count, values: values)
        let loopEnd = stopwatch.elapsedSeconds
        phases.insert = loopEnd - phases.open
        try store.commitWrite()
        let committed = stopwatch.elapsedSeconds
        phases.commit = committed - loopEnd
        try store.close()
        phases.close = stopwatch.elapsedSeconds - committed
        return phases
    }

    private static func run(_ context: WorkloadContext, notes: String, generationSeconds: (Int) -> Double) throws -> [WorkloadResult] {
        let count = TreeWorkloads.recordCount(context.scale)
        let generation = generationSeconds(count)
        let baselines = PeerEngine.allCases.map(\.rawValue)
        var storeBytes: [String: UInt64] = [:]
        let runs = try AlternatingRuns.run(context, rounds: rounds, baselines: baselines) { side, report in
            storeBytes[side] = try report.uint64("store_bytes")
        }
        let sample = PersonChecksum.expected(ids: PersonVerification.sampleIDs(recordCount: count))
        for side in ["strata"] + baselines {
            context.progress("\(side): checking the last store (a process of its own)")
            try checkSample(side: side, reported: try context.runPartProcess("verify-\(side)").uint64("sample_checksum"), expected: sample)
        }
        var rows = try runs.rows(
            workload: context.workloadName, records: count, notes: notes,
            extra: [("generation_seconds", .double(generation)),
                    ("verified_records", .int(Int64(PersonVerification.sampleIDs(recordCount: count).count)))],
            settings: { PeerEngine(rawValue: $0)?.settings.members ?? [] },
            storeBytes: { storeBytes[$0] }
        )
        // Where each side's time went: the medians of its phases.
        let strataPhases = try Measurements.medianPhases(runs.reports["strata", default: []].map { try InsertPhases(report: $0, prefix: "run") })
        for index in rows.indices {
            guard let name = rows[index].baseline?.name else { continue }
            let peerPhases = try Measurements.medianPhases(runs.reports[name, default: []].map { try InsertPhases(report: $0, prefix: "run") })
            rows[index].extra += strataPhases.json(prefix: "strata") + peerPhases.json(prefix: "baseline")
        }
        return rows
    }

    /// Throws unless a side's check of the verification sample gave the checksum of the
    /// persons as generated.
    static func checkSample(side: String, reported: UInt64, expected: PersonChecksum) throws {
        guard reported == expected.value else {
            throw BenchmarkError.verificationFailed(
                "\(side): the sampled persons' checksum is \(reported), the persons written give \(expected.value)")
        }
    }
}
