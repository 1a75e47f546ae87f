@_spi(Engine) import Strata
import Foundation

/// What the tree-* workloads share. Each one compares a `RawRecordStore` (Strata's engine:
/// one B+tree of records per entity) with SQLite on the brief's reference workload: persons
/// 1...N (`Person`), generated from their ids as they are written. Strata runs in the
/// workload process; SQLite runs first, in a part process of its own (`PartProcess`), so the
/// peak memory reported is Strata's alone. Both check their store the same way
/// (`PersonVerification`), and the workload compares what the two reported.
enum TreeWorkloads {
    /// How many persons: the brief's million (`--full` too: the sizes are the reference
    /// workload's; the read workloads repeat more instead).
    static func recordCount(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: 1_000_000, full: 1_000_000)
    }

    /// How many times the read workloads repeat their timed pass; the median counts.
    static func repetitions(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: 3, full: 7)
    }

    /// The Strata store's folder.
    static func strataPath(_ context: WorkloadContext) -> String {
        context.path("strata")
    }

    /// The folder of the SQLite database (its WAL and shared-memory files go next to it).
    static func sqliteFolder(_ context: WorkloadContext) -> String {
        context.path("sqlite")
    }

    /// The SQLite database file, its folder created when missing.
    static func sqlitePath(_ context: WorkloadContext) throws -> String {
        let folder = sqliteFolder(context)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return (folder as NSString).appendingPathComponent("person.db")
    }

    /// How many of persons 1...count have a note starting with `Person.scanNotePrefix`,
    /// found by generating them all (no store), and how long that took: the part of each
    /// side's insert time that is generating the records.
    static func generateAll(count: Int) -> (noteMatches: Int, seconds: Double) {
        let prefix = Array(Person.scanNotePrefix.utf8)
        let (matches, seconds) = Stopwatch.time {
            var person = Person()
            var matches = 0
            for id in 1...UInt64(count) {
                person.generate(id: id)
                if person.note.starts(with: prefix) { matches += 1 }
            }
            return matches
        }
        return (matches, seconds)
    }

    /// Part "build-strata": the Strata store, built as tree-insert builds it (one
    /// transaction, relaxed since nothing is timed), then checked (`verifyStrataPart`).
    @Sendable static func buildStrataPart(_ context: WorkloadContext) throws -> JSONValue {
        let path = strataPath(context)
        try RawRecordStore.createWithPersons(at: path, count: recordCount(context.scale))
        return .object([("store_bytes", .int(Int64(clamping: FolderSize.bytes(at: path))))] + (try verifyStrataPart(context)).members)
    }

    /// Part "verify-strata": checks the Strata store (count, sample field by field) and
    /// reports the sample's `sample_checksum`.
    @Sendable static func verifyStrataPart(_ context: WorkloadContext) throws -> JSONValue {
        let store = try RawRecordStore.open(at: strataPath(context))
        let sample = try store.snapshot().verifyPersons(count: recordCount(context.scale))
        try store.close()
        return .object([("sample_checksum", .int(Int64(bitPattern: sample.value)))])
    }

    /// Opens the Strata store (not timed), syncs, times `pass` on one snapshot, closes.
    static func timeStrataPass(_ context: WorkloadContext,
                               _ pass: (RawRecordStore.Snapshot) throws -> PersonReadAnswer) throws -> (answer: PersonReadAnswer, seconds: Double) {
        let store = try RawRecordStore.open(at: strataPath(context))
        sync()
        let timed = try Stopwatch.time { try pass(store.snapshot()) }
        try store.close()
        return (timed.value, timed.seconds)
    }

    /// Throws unless the two stores' checks of the verification sample agree.
    static func compareSamples(strata: PersonChecksum, sqlite: UInt64) throws {
        guard strata.value == sqlite else {
            throw BenchmarkError.verificationFailed(
                "the sampled persons' checksums differ: Strata \(strata.value), SQLite \(sqlite)")
        }
    }

    /// A short text for the notes column: "52.3 MiB".
    static func size(_ bytes: UInt64) -> String {
        ByteCount.text(bytes)
    }

    /// A peak memory for the notes column: "12 MB" (as the table's peak column, in MiB).
    static func memory(_ bytes: UInt64) -> String {
        String(format: "%.0f MB", Double(bytes) / 1_048_576)
    }
}

/// Where the time of one timed insert went: opening (and creating the table), the loop that
/// generates, encodes and inserts every record, committing, and closing.
struct InsertPhases {
    var open = 0.0
    var insert = 0.0
    var commit = 0.0
    var close = 0.0

    var total: Double { open + insert + commit + close }

    /// The phases as JSON fields named `<prefix>_open_seconds` and so on.
    func json(prefix: String) -> [(key: String, value: JSONValue)] {
        [("\(prefix)_open_seconds", .double(open)), ("\(prefix)_insert_seconds", .double(insert)),
         ("\(prefix)_commit_seconds", .double(commit)), ("\(prefix)_close_seconds", .double(close))]
    }

    /// Reads phases written by `json(prefix:)`.
    init(report: PartReport, prefix: String) throws {
        open = try report.double("\(prefix)_open_seconds")
        insert = try report.double("\(prefix)_insert_seconds")
        commit = try report.double("\(prefix)_commit_seconds")
        close = try report.double("\(prefix)_close_seconds")
    }

    init() {}
}
