import Foundation
import Strata

/// What the record-API workloads (insert, read-by-id, scan-filter, reopen-first-fetch)
/// share. They measure what an app gets: Strata's public API (`Store`, `Context`,
/// `FetchDescriptor`, `#Predicate`) with `PersonRecord` — a Codable struct that Strata encodes
/// and decodes for every record — on the same persons and against the same SQLite table and
/// queries as the tree-* workloads (`PersonTable`). As there, SQLite runs in a process of its
/// own and so do untimed builds of the Strata store, so the peak memory reported is that of
/// the Strata work being timed; both stores are checked against the persons as generated.
enum RecordAPIWorkloads {
    /// How many persons: the brief's million (`--quick` too).
    static func recordCount(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: 1_000_000, full: 1_000_000)
    }

    /// The part that builds the Strata store (not timed) — persons 1...count inserted in
    /// one relaxed `store.write` — then reopens and checks it fully: the record count
    /// (a fetch of every record, which is why it runs here and not in the workload process)
    /// and the sample. Reports `store_bytes`, `sample_checksum` and `build_seconds`.
    @Sendable static func buildStrataPart(_ context: WorkloadContext) throws -> JSONValue {
        let count = recordCount(context.scale)
        let path = TreeWorkloads.strataPath(context)
        let (_, buildSeconds) = try Stopwatch.time { try PersonRecordStore.createWithPersons(at: path, count: count) }
        let storeBytes = FolderSize.bytes(at: path)
        let sampleChecksum = try verifyStrata(at: path, count: count)
        return .object([
            ("store_bytes", .int(Int64(clamping: storeBytes))),
            ("sample_checksum", .int(Int64(bitPattern: sampleChecksum.value))),
            ("build_seconds", .double(buildSeconds)),
        ])
    }

    /// The part that checks the Strata store the workload wrote, fully (see `buildStrataPart`).
    @Sendable static func verifyStrataPart(_ context: WorkloadContext) throws -> JSONValue {
        let sampleChecksum = try verifyStrata(at: TreeWorkloads.strataPath(context), count: recordCount(context.scale))
        return .object([("sample_checksum", .int(Int64(bitPattern: sampleChecksum.value)))])
    }

    /// Opens the record store (not timed), syncs, times `pass`, closes: one timed pass of a
    /// read workload's Strata side (`PeerReadComparison`).
    static func timeStrataPass(_ context: WorkloadContext,
                               _ pass: (Store) throws -> PersonReadAnswer) throws -> (answer: PersonReadAnswer, seconds: Double) {
        let store = try PersonRecordStore.open(at: TreeWorkloads.strataPath(context))
        sync()
        let timed = try Stopwatch.time { try pass(store) }
        try store.close()
        return (timed.value, timed.seconds)
    }

    /// Opens the store at `path`, checks count and sample through a `Context`, closes it.
    private static func verifyStrata(at path: String, count: Int) throws -> PersonChecksum {
        let store = try PersonRecordStore.open(at: path)
        let checksum = try Context(store).verifyPersons(count: count, countAll: true)
        try store.close()
        return checksum
    }

    /// The ids of persons 1...count whose note starts with `Person.scanNotePrefix`, in id
    /// order, and the checksum of those persons: what scan-filter must return.
    static func expectedNoteMatches(count: Int) -> PersonReadAnswer {
        let prefix = Array(Person.scanNotePrefix.utf8)
        var person = Person()
        var answer = PersonReadAnswer(count: 0, checksum: PersonChecksum(), ids: [])
        for id in 1...UInt64(count) {
            person.generate(id: id)
            if person.note.starts(with: prefix) { answer.add(id: id, person) }
        }
        return answer
    }
}

/// What one read pass returns, on either side: how many records it read, the checksum of
/// their values (each side computes it from its own decoded fields), and — for passes that
/// select records, such as scan-filter — which ids, in the order returned.
struct PersonReadAnswer: Equatable {
    var count: Int
    var checksum: PersonChecksum
    var ids: [UInt64]?

    mutating func add(id: UInt64, _ person: Person) {
        count += 1
        checksum.add(person)
        ids?.append(id)
    }

    /// Why `self` is not `expected` ("3 records instead of 4"), or nil when they are equal.
    func difference(from expected: PersonReadAnswer) -> String? {
        if count != expected.count { return "\(count) records instead of \(expected.count)" }
        if let ids, let expectedIDs = expected.ids, ids != expectedIDs {
            let index = zip(ids, expectedIDs).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? 0
            return "other ids (result \(index): \(ids[index]) instead of \(expectedIDs[index]))"
        }
        if checksum != expected.checksum { return "a checksum of \(checksum.value) instead of \(expected.checksum.value)" }
        return nil
    }

    var json: JSONValue {
        .object([
            ("count", .int(Int64(count))),
            ("checksum", .int(Int64(bitPattern: checksum.value))),
            ("ids", ids.map { .array($0.map { .int(Int64(bitPattern: $0)) }) } ?? .null),
        ])
    }

    init(count: Int, checksum: PersonChecksum, ids: [UInt64]?) {
        self.count = count
        self.checksum = checksum
        self.ids = ids
    }

    /// Reads an answer written by `json` as `key` of a part's report.
    init(report: PartReport, key: String) throws {
        let json = report.json[key]
        guard let count = json?["count"]?.int64Value, let checksum = json?["checksum"]?.int64Value else {
            throw BenchmarkError.malformedOutput("part '\(report.partName)' reported no answer '\(key)': \(report.json.compactText)")
        }
        self.count = Int(count)
        self.checksum = PersonChecksum(value: UInt64(bitPattern: checksum))
        if case .array(let elements)? = json?["ids"] {
            ids = try elements.map { element in
                guard let id = element.int64Value else {
                    throw BenchmarkError.malformedOutput("part '\(report.partName)' reported an id that is not a number")
                }
                return UInt64(bitPattern: id)
            }
        }
    }
}

/// How read-by-id and scan-filter compare the public API with SQLite — as
/// `TreeReadComparison` does for the tree-* workloads, with the Strata store built through
/// the record API:
///
/// 1. part "sqlite", in a process of its own: builds the database (not timed, one
///    transaction, `PersonTable`), checks it, runs the timed pass several times, and reports
///    the times, the answer, the sample's checksum and the size on disk;
/// 2. part "build-strata", in a process of its own: builds the Strata store in one
///    `store.write` (not timed) and checks it fully (`RecordAPIWorkloads.buildStrataPart`);
/// 3. here: opens the store with `Store(at:for:)` (not timed), checks the sample, and runs
///    the timed pass as many times, each on a new `Context`.
///
/// Every pass on either side must give the answer computed from the generated persons.
enum RecordAPIReadComparison {
    /// One timed pass over the SQLite table.
    typealias SQLitePass = (PersonTable) throws -> PersonReadAnswer

    /// The parts a read workload runs in processes of their own. `makeSQLitePass` prepares
    /// the SQLite pass for a record count before anything is timed.
    /// `repetitions` gives the number of timed passes on each side (default:
    /// `TreeWorkloads.repetitions`).
    static func parts(repetitions: @escaping @Sendable (WorkloadScale) -> Int = TreeWorkloads.repetitions,
                      makeSQLitePass: @escaping @Sendable (Int) -> SQLitePass) -> [String: Workload.Part] {
        [
            "sqlite": { context in
                let count = RecordAPIWorkloads.recordCount(context.scale)
                return try runSQLitePart(context, count: count, repetitions: repetitions(context.scale), pass: makeSQLitePass(count))
            },
            "build-strata": RecordAPIWorkloads.buildStrataPart,
        ]
    }

    /// Runs both sides (see the type's description); the result's fields are those of
    /// `TreeReadComparison`.
    static func run(
        _ context: WorkloadContext, expected: PersonReadAnswer, repetitions: Int? = nil, strataPass: (Store) throws -> PersonReadAnswer
    ) throws -> TreeReadComparison {
        let count = RecordAPIWorkloads.recordCount(context.scale)
        let repetitions = repetitions ?? TreeWorkloads.repetitions(context.scale)

        context.progress("SQLite: building \(count) persons (not timed), then \(repetitions) timed passes (in a process of its own)")
        let sqlite = try context.runPartProcess("sqlite")
        if let difference = try PersonReadAnswer(report: sqlite, key: "answer").difference(from: expected) {
            throw BenchmarkError.verificationFailed("SQLite's passes gave \(difference) (compared with the persons written)")
        }

        context.progress("Strata: building \(count) persons in one store.write (not timed, in a process of its own)")
        let strataBuild = try context.runPartProcess("build-strata")
        let store = try PersonRecordStore.open(at: TreeWorkloads.strataPath(context))
        let sampleChecksum = try Context(store).verifyPersons(count: count, countAll: false)
        try TreeWorkloads.compareSamples(strata: sampleChecksum, sqlite: try sqlite.uint64("sample_checksum"))
        try TreeWorkloads.compareSamples(strata: sampleChecksum, sqlite: try strataBuild.uint64("sample_checksum"))

        context.progress("Strata: \(repetitions) timed passes")
        let strataSeconds = try TreeReadComparison.timeStrataPasses(repetitions, { try strataPass(store) }) { answer in
            if let difference = answer.difference(from: expected) {
                throw BenchmarkError.verificationFailed("Strata's pass gave \(difference) (compared with the persons written)")
            }
        }
        try store.close()
        return try TreeReadComparison(strataSeconds: strataSeconds, sqlite: sqlite, strataBuild: strataBuild, recordCount: count)
    }

    /// Part "sqlite": build (not timed), check, the timed passes; every pass must give the same answer.
    private static func runSQLitePart(_ context: WorkloadContext, count: Int, repetitions: Int, pass: SQLitePass) throws -> JSONValue {
        let path = try TreeWorkloads.sqlitePath(context)
        try PersonTable.createWithPersons(at: path, count: count)
        let storeBytes = FolderSize.bytes(at: TreeWorkloads.sqliteFolder(context))

        let database = try SQLiteDatabase(path: path)
        let table = PersonTable(database: database)
        let sampleChecksum = try table.verifyPersons(count: count)
        sync()
        var seconds: [Double] = []
        var answer: PersonReadAnswer?
        for _ in 0..<repetitions {
            let timed = try Stopwatch.time { try pass(table) }
            if let answer, let difference = timed.value.difference(from: answer) {
                throw BenchmarkError.verificationFailed("SQLite's passes gave different answers: \(difference)")
            }
            answer = timed.value
            seconds.append(timed.seconds)
        }
        try database.close()
        return .object([
            ("seconds", .array(seconds.map { .double($0) })),
            ("answer", answer?.json ?? .null),
            ("sample_checksum", .int(Int64(bitPattern: sampleChecksum.value))),
            ("store_bytes", .int(Int64(clamping: storeBytes))),
        ])
    }
}
