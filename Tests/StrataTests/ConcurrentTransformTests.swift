import Testing
import StrataIO
import Synchronization
import StrataTestSupport
@testable import Strata
@testable import StrataMigration

// A pure transform declared with `mapConcurrently` stores exactly what `map` stores with the
// same closure: every file of the store byte for byte, whatever the batch size, with records
// dropped, overflowed (long notes) and rejected (failing the stage, or quarantined), and after
// a power cut at any sync point.

enum NotedV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var fullName: String
        var note: String
        var age: Int
    }
}

/// The split version: the new attributes declared first (ids out of declaration order).
enum NotedSplit: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var lastName: String
        var firstName: String
        var note: String
        var age: Int
    }
}

struct NotedRejection: Error, CustomStringConvertible {
    let age: Int
    var description: String { "age \(age) rejected" }
}

/// The transform every plan below uses, pure: people of some ages are dropped, others
/// rejected (when `rejecting`).
@Sendable func notedSplit(_ old: NotedV1.Person, rejecting: Bool) throws -> NotedSplit.Person? {
    if old.age % 11 == 5 { return nil }
    if rejecting && old.age % 97 == 13 { throw NotedRejection(age: old.age) }
    let parts = old.fullName.split(separator: ", ", maxSplits: 1).map(String.init)
    return NotedSplit.Person(lastName: parts[0], firstName: parts.count > 1 ? parts[1] : "", note: old.note, age: old.age)
}

/// The plans below: the same stage with `map` or `mapConcurrently`, rejecting records or not
/// (failing the stage or quarantining them), in batches of `batchSize`.
protocol NotedPlan: SchemaMigrationPlan {
    static var concurrent: Bool { get }
    static var rejecting: Bool { get }
    static var quarantine: Bool { get }
    static var batchSize: Int { get }
}

extension NotedPlan {
    static var rejecting: Bool { false }
    static var quarantine: Bool { false }
    static var batchSize: Int { 1_000 }
    static var schemas: [any VersionedSchema.Type] { [NotedV1.self, NotedSplit.self] }
    static var stages: [MigrationStage] {
        let rejecting = rejecting
        let transform: RecordTransform = concurrent
            ? .mapConcurrently(NotedV1.Person.self, to: NotedSplit.Person.self) { try notedSplit($0, rejecting: rejecting) }
            : .map(NotedV1.Person.self, to: NotedSplit.Person.self) { try notedSplit($0, rejecting: rejecting) }
        return [.custom(fromVersion: NotedV1.self, toVersion: NotedSplit.self, transforms: [transform], batchSize: batchSize,
                        rejectedRecords: quarantine ? .quarantine : .failStage)]
    }
}

enum SequentialNotedPlan: NotedPlan { static let concurrent = false, batchSize = 777 }
enum ConcurrentNotedPlan: NotedPlan { static let concurrent = true, batchSize = 777 }
enum SequentialQuarantiningPlan: NotedPlan { static let concurrent = false, rejecting = true, quarantine = true }
enum ConcurrentQuarantiningPlan: NotedPlan { static let concurrent = true, rejecting = true, quarantine = true }
enum SequentialFailingPlan: NotedPlan { static let concurrent = false, rejecting = true }
enum ConcurrentFailingPlan: NotedPlan { static let concurrent = true, rejecting = true }
/// Small batches, for the power cuts.
enum ConcurrentSmallBatchPlan: NotedPlan { static let concurrent = true, batchSize = 64 }

@Suite struct ConcurrentTransformTests {
    static func people(_ count: Int) -> [NotedV1.Person] {
        (0..<count).map { index in
            // Every 400th note is longer than a leaf's inline limit (an overflowed record).
            let note = index % 400 == 7 ? String(repeating: "long note \(index) ", count: 300) : "note \(index) with some text"
            return NotedV1.Person(fullName: "Last\(index % 40), First\(index % 25)", note: note, age: index)
        }
    }

    /// A version-1 store of `count` people on an in-memory file system.
    static func v1Store(_ count: Int, in fs: MemoryFileSystem = MemoryFileSystem()) throws -> MemoryFileSystem {
        let store = try Store(at: "/store", schema: NotedV1.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: fs)
        try store.write { transaction in for person in people(count) { try transaction.insert(person) } }
        try store.close()
        return fs
    }

    /// Opens a copy of `files` with `plan`; returns the files afterwards and what opening threw.
    /// The history journal is off: its entries carry the time of their commit, the only bytes
    /// two runs of the same migration would not share.
    static func migrate(_ files: [String: [UInt8]], _ plan: any SchemaMigrationPlan.Type,
                        _ body: (Store) throws -> Void = { _ in }) -> (files: [String: [UInt8]], error: (any Error)?) {
        let fs = MemoryFileSystem(files: files)
        var configuration = Store.Configuration()
        configuration.history.isEnabled = false
        // The files are compared byte for byte: no background pass may write after the migration.
        configuration.storage.compressesDeferredLeavesInBackground = false
        do {
            let store = try Store(at: "/store", schema: NotedSplit.self, migrationPlan: plan, configuration: configuration, fileSystem: fs)
            try body(store)
            try store.close()
            return (fs.allFiles(), nil)
        } catch {
            return (fs.allFiles(), error)
        }
    }

    /// Where two sets of files differ (nil: nowhere): a file's name, and the first offset.
    static func difference(_ a: [String: [UInt8]], _ b: [String: [UInt8]]) -> String? {
        for name in Set(a.keys).union(b.keys).sorted() {
            guard let x = a[name], let y = b[name] else { return "\(name) exists on one side only" }
            if x != y {
                let offset = (0..<min(x.count, y.count)).first { x[$0] != y[$0] } ?? min(x.count, y.count)
                return "\(name): \(x.count) vs \(y.count) bytes, first difference at \(offset)"
            }
        }
        return nil
    }

    @Test func aPureTransformOnEveryCoreWritesTheFilesOfTheSequentialOne() throws {
        #if STRATA_TSAN
        let count = 2_400  // ThreadSanitizer (CI): four batches of 777 rather than seven
        #else
        let count = 5_000
        #endif
        let before = try Self.v1Store(count).allFiles()
        var migrated: [NotedSplit.Person] = []
        let sequential = Self.migrate(before, SequentialNotedPlan.self)
        let concurrent = Self.migrate(before, ConcurrentNotedPlan.self) { store in
            migrated = try Context(store).fetch(FetchDescriptor<NotedSplit.Person>(sortBy: [RecordSort(\.age)])).map(\.record)
        }
        #expect(sequential.error == nil && concurrent.error == nil)
        let expected: [NotedSplit.Person] = try Self.people(count).compactMap { try notedSplit($0, rejecting: false) }
        #expect(migrated == expected)
        #expect(Self.difference(concurrent.files, sequential.files) == nil)  // the same records, ids, pages, frames: every byte
    }

    /// The same with three workers (more threads than this machine may have cores), and with
    /// none (one core: `mapConcurrently` runs as `map`).
    @Test(arguments: [3, 0]) func anyNumberOfWorkersWritesTheSameFiles(workers: Int) throws {
        TransformPipeline.forcedWorkerCount.store(workers, ordering: .relaxed)
        defer { TransformPipeline.forcedWorkerCount.store(-1, ordering: .relaxed) }
        let before = try Self.v1Store(2_000).allFiles()
        let sequential = Self.migrate(before, SequentialNotedPlan.self), concurrent = Self.migrate(before, ConcurrentNotedPlan.self)
        #expect(sequential.error == nil && concurrent.error == nil)
        #expect(Self.difference(concurrent.files, sequential.files) == nil, "\(workers) workers")
    }

    @Test func quarantinedRecordsAreTheSequentialOnesInTheSameOrder() throws {
        let before = try Self.v1Store(3_000).allFiles()
        var quarantined: [QuarantinedRecord] = []
        let sequential = Self.migrate(before, SequentialQuarantiningPlan.self)
        let concurrent = Self.migrate(before, ConcurrentQuarantiningPlan.self) { quarantined = try $0.quarantinedRecords() }
        #expect(sequential.error == nil && concurrent.error == nil)
        let rejectedAges: [Int] = (0..<3_000).filter { (age: Int) -> Bool in age % 97 == 13 && age % 11 != 5 }
        let expectedIDs: [UInt64] = rejectedAges.map { UInt64($0 + 1) }
        #expect(quarantined.map(\.id) == expectedIDs)
        #expect(quarantined.allSatisfy { $0.reason == "age \($0.id - 1) rejected" })
        #expect(Self.difference(concurrent.files, sequential.files) == nil)
    }

    @Test func aFailingRecordIsTheFirstInIdentifierOrderAndNothingChanges() throws {
        let before = try Self.v1Store(3_000).allFiles()
        for plan in [SequentialFailingPlan.self, ConcurrentFailingPlan.self] as [any SchemaMigrationPlan.Type] {
            let result = Self.migrate(before, plan)
            guard case StrataError.migrationFailed(let report)? = result.error else {
                Issue.record("\(plan): \(String(describing: result.error))")
                continue
            }
            #expect(report.category == .transform, "\(plan)")
            #expect(report.recordID == "Person#14", "\(plan)")  // age 13, the first of several rejected
            #expect(report.underlyingError == "age 13 rejected", "\(plan)")
            #expect(Self.difference(result.files, before) == nil, "\(plan)")
        }
    }

    @Test func aPowerCutAtEverySyncPointResumesToTheSameRecords() throws {
        let seed = SeededRandom.seed(default: 0xC0C0)
        print("ConcurrentTransformTests power cuts seed \(seed)")
        let count = 300
        let expected = try Self.people(count).compactMap { try notedSplit($0, rejecting: false) }
        var setupSyncs = 0
        func run(_ fs: MemoryFileSystem) {
            do {
                _ = try Self.v1Store(count, in: fs)
                setupSyncs = fs.counters.syncs
                let store = try Store(at: "/store", schema: NotedSplit.self, migrationPlan: ConcurrentSmallBatchPlan.self,
                                      configuration: Store.Configuration(), fileSystem: fs)
                try store.close()
            } catch {}
        }
        let reference = MemoryFileSystem()
        run(reference)
        let total = reference.counters.syncs, setup = setupSyncs
        var tested = 0
        for point in setup..<total {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point))
                let (fs, _) = MemoryFileSystem.runUntilPowerCut(atSync: point, mode: mode, using: &random, run)
                let store = try Store(at: "/store", schema: NotedSplit.self, migrationPlan: ConcurrentSmallBatchPlan.self,
                                      configuration: Store.Configuration(), fileSystem: fs)
                let people = try Context(store).fetch(FetchDescriptor<NotedSplit.Person>(sortBy: [RecordSort(\.age)]))
                #expect(people.map(\.record) == expected, "sync point \(point), mode \(mode), seed \(seed)")
                #expect(people.map(\.id.rawValue) == expected.map { UInt64($0.age + 1) }, "identifiers, sync point \(point), mode \(mode)")
                try store.close()
                tested += 1
            }
        }
        #expect(tested == 3 * (total - setup) && tested > 0)
    }
}
