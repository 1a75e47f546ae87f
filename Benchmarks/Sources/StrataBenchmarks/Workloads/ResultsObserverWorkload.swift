import Foundation
import Strata

/// results-observer-update: a live result of 100,000 persons sorted by `fullName`
/// (`store.observeResults(FetchDescriptor<PersonRecord>(sortBy: [RecordSort(\.fullName)]))`),
/// then one update that changes a person's `fullName` (so the record moves in the order).
/// Timed: from the commit's return to the observer's next element (the results patched from
/// the history journal: the changed record read, placed by binary search) — against the
/// baseline `strata-refetch`, the same fetch run again after the same commit. Target ratio
/// ≤ 0.1. Each pass checks the observer's results equal the refetch's (ids in order) and that
/// its change set is one update and one move. The store is built in this process, untimed;
/// updates are relaxed commits (the sync is not what is measured). Median of the passes.
enum ResultsObserverWorkload {
    static let workload = Workload(
        name: "results-observer-update",
        summary: "one update inside a live result of 100k PersonRecords sorted by fullName vs. refetching it, target ratio ≤ 0.1",
        run: run
    )

    static let resultCount = 100_000
    static let targetRatio = 0.1

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let passes = context.scale.pick(quick: 9, full: 25)
        let path = context.path("strata-observed")
        context.progress("building \(resultCount) persons (not timed)")
        try PersonRecordStore.createWithPersons(at: path, count: resultCount)
        let store = try PersonRecordStore.open(at: path, durability: .relaxed)
        defer { try? store.close() }
        let descriptor = FetchDescriptor<PersonRecord>(sortBy: [RecordSort(\.fullName)])
        context.progress("\(passes) passes: update one person, then the observer's next results vs. a refetch")
        let (observed, refetched) = try blocking {
            var iterator = store.observeResults(descriptor).makeAsyncIterator()
            guard let first = try await iterator.next(), first.records.count == resultCount else {
                throw BenchmarkError.verificationFailed("the live results did not start with \(resultCount) persons")
            }
            var observed: [Double] = [], refetched: [Double] = []
            var random = SplitMix64(seed: 2026)
            for pass in 0..<passes {
                let id = RecordID<PersonRecord>(rawValue: random.next() % UInt64(resultCount) + 1)
                try commit(store) { transaction in
                    guard var person = try transaction.record(for: id) else { throw BenchmarkError.verificationFailed("person \(id) is missing") }
                    person.fullName = "Moved\(pass), Person\(id.rawValue)"
                    try transaction.update(id, to: person)
                }
                let stopwatch = Stopwatch()
                guard let next = try await iterator.next() else { throw BenchmarkError.verificationFailed("the observer ended") }
                observed.append(stopwatch.elapsedSeconds)
                let again = Stopwatch()
                let fetched = try Context(store).fetch(descriptor)
                refetched.append(again.elapsedSeconds)
                guard next.records.map(\.id) == fetched.map(\.id) else {
                    throw BenchmarkError.verificationFailed("pass \(pass): the observer's results differ from a refetch")
                }
                guard next.changes.updated.count == 1, next.changes.inserted.isEmpty, next.changes.deleted.isEmpty,
                      next.changes.moved.count <= 1 else {
                    throw BenchmarkError.verificationFailed("pass \(pass): unexpected change set \(next.changes)")
                }
            }
            return (observed, refetched)
        }
        let strata = Measurements.median(observed), baseline = Measurements.median(refetched)
        return WorkloadResult(
            workload: workload.name, records: resultCount, strataSeconds: strata,
            baseline: WorkloadResult.Baseline(name: "strata-refetch", seconds: baseline),
            notes: String(format: "observer %.2f ms vs refetch %.1f ms, median of %d; target ratio ≤ %.1f", strata * 1000, baseline * 1000,
                          passes, targetRatio),
            extra: [("target_ratio", .double(targetRatio)), ("passes", .int(Int64(passes))),
                    ("observer_seconds", .array(observed.map { .double($0) })), ("refetch_seconds", .array(refetched.map { .double($0) }))])
    }

    /// `Store.write` called synchronously from async code.
    private static func commit(_ store: Store, _ body: (Store.WriteTransaction) throws -> Void) throws {
        try store.write(body)
    }

    /// Runs `body` on a task and waits for it (the workload's thread does nothing else).
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, any Error>?
        Task {
            do { result = .success(try await body()) } catch { result = .failure(error) }
            done.signal()
        }
        done.wait()
        guard let result else { throw BenchmarkError.verificationFailed("the observer task did not finish") }
        return try result.get()
    }
}
