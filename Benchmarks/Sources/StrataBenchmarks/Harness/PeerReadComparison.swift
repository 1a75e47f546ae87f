import Foundation

/// How the read workloads (tree-read-by-id, tree-scan, read-by-id, scan-filter) compare
/// Strata with each peer on the same persons:
///
/// 1. parts "build-strata" and "build-<peer>", each in a process of its own: build the
///    store (not timed, one transaction) and check it (count, sample field by field);
/// 2. `AlternatingRuns`: rounds of parts "time-strata" and "time-<peer>", each a fresh
///    process that opens its store (not timed; every engine's own cache starts empty, the
///    files are in the OS page cache), syncs, times ONE pass and closes.
///
/// Every pass on every side must give the answer computed from the generated persons.
enum PeerReadComparison {
    /// Opens the Strata store of a workload (not timed), times one pass, closes it.
    typealias StrataRun = @Sendable (WorkloadContext) throws -> (answer: PersonReadAnswer, seconds: Double)
    /// Prepares (not timed: e.g. draws the ids to look up) one pass over a peer's store: the
    /// same reads as Strata's, the same answer.
    typealias PeerPass = @Sendable (WorkloadScale) -> (any PersonPeerStore) throws -> PersonReadAnswer

    /// A read workload: `buildStrata` is the part that builds and checks Strata's store
    /// (reporting `store_bytes` and `sample_checksum`); `expected` the answer of every pass;
    /// `describe` gives the notes and the extra fields from the expected answer.
    static func workload(
        name: String, summary: String,
        buildStrata: @escaping Workload.Part,
        strata: @escaping StrataRun, peer: @escaping PeerPass,
        expected: @escaping @Sendable (WorkloadScale) -> PersonReadAnswer,
        describe: @escaping @Sendable (PersonReadAnswer) -> (notes: String, extra: [(key: String, value: JSONValue)])
    ) -> Workload {
        var parts: [String: Workload.Part] = [
            "build-strata": buildStrata,
            AlternatingRuns.timedPartName("strata"): { context in
                let (answer, seconds) = try strata(context)
                return .object([("seconds", .double(seconds)), ("answer", answer.json)])
            },
        ]
        for engine in PeerEngine.allCases {
            parts["build-\(engine.rawValue)"] = { context in
                let folder = engine.folder(context)
                let count = TreeWorkloads.recordCount(context.scale)
                try engine.createWithPersons(folder: folder, count: count)
                let store = try engine.open(folder: folder)
                let sample = try store.verifyPersons(count: count)
                try store.close()
                return .object([("store_bytes", .int(Int64(clamping: FolderSize.bytes(at: folder)))),
                                ("sample_checksum", .int(Int64(bitPattern: sample.value)))])
            }
            parts[AlternatingRuns.timedPartName(engine.rawValue)] = { context in
                let pass = peer(context.scale)
                let store = try engine.open(folder: engine.folder(context))
                sync()
                let (answer, seconds) = try Stopwatch.time { try pass(store) }
                try store.close()
                return .object([("seconds", .double(seconds)), ("answer", answer.json)])
            }
        }
        return Workload(name: name, summary: summary, rows: { context in
            try run(context, expected: expected(context.scale), describe: describe)
        }, parts: parts)
    }

    private static func run(
        _ context: WorkloadContext, expected: PersonReadAnswer,
        describe: (PersonReadAnswer) -> (notes: String, extra: [(key: String, value: JSONValue)])
    ) throws -> [WorkloadResult] {
        let count = TreeWorkloads.recordCount(context.scale)
        let sample = PersonChecksum.expected(ids: PersonVerification.sampleIDs(recordCount: count))
        var storeBytes: [String: UInt64] = [:]
        for side in ["strata"] + PeerEngine.allCases.map(\.rawValue) {
            context.progress("\(side): building \(count) persons and checking them (not timed, a process of its own)")
            let build = try context.runPartProcess("build-\(side)")
            try PeerInsertComparison.checkSample(side: side, reported: try build.uint64("sample_checksum"), expected: sample)
            storeBytes[side] = try build.uint64("store_bytes")
        }
        let runs = try AlternatingRuns.run(
            context, rounds: TreeWorkloads.repetitions(context.scale), baselines: PeerEngine.allCases.map(\.rawValue)
        ) { side, report in
            if let difference = try PersonReadAnswer(report: report, key: "answer").difference(from: expected) {
                throw BenchmarkError.verificationFailed("\(side)'s pass gave \(difference) (compared with the persons written)")
            }
        }
        let (notes, extra) = describe(expected)
        return try runs.rows(
            workload: context.workloadName, records: count, notes: notes,
            extra: extra + [("verified_records", .int(Int64(PersonVerification.sampleIDs(recordCount: count).count)))],
            settings: { PeerEngine(rawValue: $0)?.settings.members ?? [] },
            storeBytes: { storeBytes[$0] }
        )
    }
}
