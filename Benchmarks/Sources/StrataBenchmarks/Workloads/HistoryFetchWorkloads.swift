import Foundation
import Strata

/// history-fetch-tail and history-fetch-entity: reading a large history journal (issue 5).
///
/// The journal is built for real, untimed, in a process of its own (part `build`): a new
/// store of the ten `HistoryItem` types takes `HistoryJournalPlan`'s transactions one by one
/// — each one insert or one update of a small record, by one of five authors or none; three
/// in four through `store.write(author:)`, one in four through a `Context`'s `save()` — with
/// `durability = .relaxed` and the journal's default limits. The part reports how long the
/// commits took. Then this process opens the store and times the fetch several times (the
/// median counts; the first fetch, with Strata's node cache empty, is reported apart). Every
/// fetch must return exactly the transactions the plan made, newest first: tokens, authors,
/// entities, kinds, record numbers, and each update's attribute names and old and new values.
///
/// - history-fetch-tail: the latest 1,000 transactions (`order = .reverse`, `limit = 1000`);
///   target ≤ 5 ms.
/// - history-fetch-entity: the latest 1,000 transactions that touched `HistoryItem3`, one
///   entity of ten (`entityNames`, reverse, limit 1,000): about 10,000 entries are read;
///   target ≤ 10 ms.
///
/// Size: the 1,000,000-transaction journal the issue names, in `--quick` runs too — a million
/// relaxed commits take about 47 s here (each workload builds its own), which keeps the quick
/// suite under three minutes on a quiet machine (Docs/Benchmarks.md); `--full` repeats the
/// fetch more often. The row's notes and `journal_transactions` state the size.
enum HistoryFetchWorkloads {
    static let tail = Workload(
        name: "history-fetch-tail",
        summary: "the latest 1,000 transactions (reverse, limit 1000) of a journal of 1M small transactions, target ≤ 5 ms",
        run: { context in try run(context, name: "history-fetch-tail", entity: nil, target: 0.005) },
        parts: ["build": build]
    )

    static let entity = Workload(
        name: "history-fetch-entity",
        summary: "the latest 1,000 transactions touching one entity of ten, from the same journal, target ≤ 10 ms",
        run: { context in try run(context, name: "history-fetch-entity", entity: 3, target: 0.010) },
        parts: ["build": build]
    )

    static let limit = 1_000

    /// Transactions in the journal.
    static func journalSize(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: 1_000_000, full: 1_000_000)
    }

    /// Timed fetches (the median counts).
    static func repetitions(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: 11, full: 21)
    }

    static func configuration() -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        return configuration
    }

    static func open(_ context: WorkloadContext) throws -> Store {
        try Store(at: TreeWorkloads.strataPath(context), for: HistoryJournalPlan.types, configuration: configuration())
    }

    /// Part `build`: the journal, one commit per planned transaction (see the type's notes).
    @Sendable static func build(_ context: WorkloadContext) throws -> JSONValue {
        let plan = HistoryJournalPlan(count: journalSize(context.scale))
        let store = try open(context)
        let first = try store.currentHistoryToken().rawValue
        let stopwatch = Stopwatch()
        try plan.transactions { number, planned in
            let type = HistoryJournalPlan.types[planned.entity]
            let id: UInt64
            if planned.viaContext {
                let work = Context(store, author: planned.author)
                id = try type.apply(planned.change, with: work)
                try work.save()
            } else {
                id = try store.write(author: planned.author) { try type.apply(planned.change, with: $0) }
            }
            if case .insert(let expected, _) = planned.change, id != expected {
                throw BenchmarkError.setupFailed("transaction \(number) inserted record \(id), not \(expected)")
            }
            if number % 100_000 == 99_999 { context.progress("\(number + 1) transactions committed") }
        }
        let seconds = stopwatch.elapsedSeconds
        let last = try store.currentHistoryToken().rawValue
        guard last - first == UInt64(plan.count), try store.oldestHistoryToken().rawValue <= first else {
            throw BenchmarkError.setupFailed("the journal holds tokens \(try store.oldestHistoryToken().rawValue + 1)…\(last) after \(plan.count) commits from #\(first + 1)")
        }
        try store.close()
        return .object([
            ("build_seconds", .double(seconds)),
            ("first_token", .int(Int64(first + 1))),
            ("store_bytes", .int(Int64(clamping: FolderSize.bytes(at: TreeWorkloads.strataPath(context))))),
        ])
    }

    static func run(_ context: WorkloadContext, name: String, entity: Int?, target: Double) throws -> WorkloadResult {
        let size = journalSize(context.scale)
        let repetitions = repetitions(context.scale)
        context.progress("building a journal of \(size) transactions (relaxed commits, not timed, in a process of its own)")
        let build = try context.runPartProcess("build")
        let firstToken = UInt64(try build.int("first_token"))

        // What the fetch must return, newest first: the plan's transactions (of `entity`).
        var expected: [(token: UInt64, transaction: HistoryJournalPlan.Transaction)] = []
        var ring: [(token: UInt64, transaction: HistoryJournalPlan.Transaction)] = []
        HistoryJournalPlan(count: size).transactions { number, planned in
            guard entity.map({ $0 == planned.entity }) ?? true else { return }
            ring.append((firstToken + UInt64(number), planned))
            if ring.count >= 2 * limit { ring.removeFirst(limit) }
        }
        expected = ring.suffix(limit).reversed()

        var descriptor = HistoryDescriptor()
        descriptor.order = .reverse
        descriptor.limit = limit
        if let entity { descriptor.entityNames = [HistoryJournalPlan.types[entity].entityName] }

        context.progress("\(repetitions) timed fetches")
        sync()
        let store = try open(context)
        var seconds: [Double] = []
        for _ in 0..<repetitions {
            let (transactions, elapsed) = try Stopwatch.time { try store.fetchHistory(descriptor) }
            guard transactions.count == expected.count else {
                throw BenchmarkError.verificationFailed("the fetch returned \(transactions.count) transactions, not \(expected.count)")
            }
            for (journaled, planned) in zip(transactions, expected) {
                try HistoryJournalPlan.check(journaled, equals: planned.transaction, token: planned.token)
            }
            seconds.append(elapsed)
        }
        try store.close()

        let median = Measurements.median(seconds)
        let buildSeconds = try build.double("build_seconds")
        let scanned = expected.last.map { firstToken + UInt64(size) - $0.token } ?? 0
        return WorkloadResult(
            workload: name,
            records: size,
            strataSeconds: median,
            baseline: nil,
            notes: "journal of \(count(size)) transactions; median of \(repetitions) \(milliseconds(median))"
                + " (\(milliseconds(seconds.min() ?? 0))–\(milliseconds(seconds.max() ?? 0)), first \(milliseconds(seconds[0])));"
                + (entity == nil ? "" : " \(scanned) entries read;")
                + " target ≤ \(milliseconds(target)); built in \(String(format: "%.1f", buildSeconds)) s"
                + " (\(String(format: "%.0f", buildSeconds / Double(size) * 1e6)) µs a commit)",
            extra: [
                ("journal_transactions", .int(Int64(size))),
                ("limit", .int(Int64(limit))),
                ("entity", entity.map { .string(HistoryJournalPlan.types[$0].entityName) } ?? .null),
                ("entries_read", .int(Int64(scanned))),
                ("target_seconds", .double(target)),
                ("fetch_seconds", .array(seconds.map { .double($0) })),
                ("build_seconds", .double(buildSeconds)),
                ("strata_store_bytes", .int(Int64(clamping: try build.uint64("store_bytes")))),
                ("verified_transactions", .int(Int64(expected.count * repetitions))),
            ]
        )
    }

    private static func milliseconds(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1000) }
    private static func count(_ size: Int) -> String { size >= 1_000_000 ? "\(size / 1_000_000)M" : "\(size / 1_000)k" }
}
