import Foundation
import Strata

/// reopen-first-fetch: what an app does at launch — open the store of the brief's 1,000,000
/// persons with `Store(at:for:)` and fetch the first 100 records
/// (`FetchDescriptor<PersonRecord>(sortBy: [], fetchLimit: 100)`) — timed from before the open
/// to after the fetch, against the target of ≤ 20 ms (the launch budget is 400 ms to the first
/// frame). No baseline. The fetch as implemented decodes every record and applies the limit
/// afterwards, so it costs a full scan; the time is reported as measured.
///
/// The store is built (and checked fully) in a process of its own, untimed; its files are in
/// the page cache (just written), and every pass opens a new `Store`, so Strata's own cache
/// starts empty. Each pass must return persons 1...100 as generated; the median pass counts.
enum ReopenFirstFetchWorkload {
    static let workload = Workload(
        name: "reopen-first-fetch",
        summary: "Store(at:for:) on 1M PersonRecords + fetch of the first 100 (fetchLimit), target ≤ 20 ms; no baseline",
        run: run,
        parts: ["build-strata": RecordAPIWorkloads.buildStrataPart]
    )

    /// How many records the fetch asks for.
    static let fetchLimit = 100
    /// The issue's target for open + first fetch.
    static let targetSeconds = 0.020

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let count = RecordAPIWorkloads.recordCount(context.scale)
        let repetitions = TreeWorkloads.repetitions(context.scale)
        let expected = (1...UInt64(min(fetchLimit, count))).map { id in
            var person = Person()
            person.generate(id: id)
            return person
        }

        context.progress("Strata: building \(count) persons in one store.write (not timed, in a process of its own)")
        let build = try context.runPartProcess("build-strata")
        let path = TreeWorkloads.strataPath(context)

        context.progress("Strata: \(repetitions) timed passes of open + first fetch")
        sync()
        var totalSeconds: [Double] = []
        var openSeconds: [Double] = []
        var fetchSeconds: [Double] = []
        for _ in 0..<repetitions {
            let stopwatch = Stopwatch()
            let store = try PersonRecordStore.open(at: path)
            let opened = stopwatch.elapsedSeconds
            let records = try Context(store).fetch(FetchDescriptor<PersonRecord>(sortBy: [], fetchLimit: fetchLimit))
            let fetched = stopwatch.elapsedSeconds
            try store.close()
            try check(records, expected: expected)
            totalSeconds.append(fetched)
            openSeconds.append(opened)
            fetchSeconds.append(fetched - opened)
        }

        let median = Measurements.median(totalSeconds)
        return WorkloadResult(
            workload: workload.name,
            records: count,
            strataSeconds: median,
            baseline: nil,
            notes: "open \(milliseconds(Measurements.median(openSeconds))) + fetch of \(fetchLimit)"
                + " \(milliseconds(Measurements.median(fetchSeconds))), median of \(repetitions);"
                + " target ≤ \(milliseconds(targetSeconds)) (\(String(format: "%.0f", median / targetSeconds))×);"
                + " on disk \(TreeWorkloads.size(try build.uint64("store_bytes")))",
            extra: [
                ("fetch_limit", .int(Int64(fetchLimit))),
                ("target_seconds", .double(targetSeconds)),
                ("pass_seconds", .array(totalSeconds.map { .double($0) })),
                ("open_seconds", .array(openSeconds.map { .double($0) })),
                ("fetch_seconds", .array(fetchSeconds.map { .double($0) })),
                ("strata_store_bytes", .int(Int64(clamping: try build.uint64("store_bytes")))),
                ("verified_records", .int(Int64(expected.count))),
            ]
        )
    }

    /// Throws unless `records` are persons 1...expected.count as generated, in that order.
    private static func check(_ records: [Identified<PersonRecord>], expected: [Person]) throws {
        guard records.count == expected.count else {
            throw BenchmarkError.verificationFailed("Strata: the first fetch returned \(records.count) records, not \(expected.count)")
        }
        for (index, (record, person)) in zip(records, expected).enumerated() {
            let id = UInt64(index + 1)
            guard record.id.rawValue == id else {
                throw BenchmarkError.verificationFailed("Strata: the first fetch's record \(index) is person \(record.id.rawValue), not \(id)")
            }
            try PersonVerification.checkRecord(record.record.person, equals: person, id: id, store: "Strata")
        }
    }

    private static func milliseconds(_ seconds: Double) -> String {
        String(format: "%.1f ms", seconds * 1000)
    }
}
