#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Testing
import StrataIO
import Strata
import StrataTestSupport

/// The split of `MigrationTests`, as a pure transform on every core (as the benchmark's), with
/// no global state: these tests run in parallel with the others.
enum DeferredSplitPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleSplitNames.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleV1.self, toVersion: PeopleSplitNames.self, transforms: [
            .mapConcurrently(PeopleV1.Person.self, to: PeopleSplitNames.Person.self) { SplitPlan.split($0) },
        ], batchSize: 500)]
    }
}

/// Deferred compression (Architecture.md, invariant 29): a custom stage stores the leaves it
/// writes uncompressed and flags their entity; a pass compresses them afterwards and clears the
/// flag — in the background, or in `compact()`.
@Suite struct DeferredCompressionTests {
    static let count = 3_000
    static let expected = MigrationTests.v1People(count).map(SplitPlan.split)

    static func configuration(background: Bool = false, deferring: Bool = true) -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.storage.compressesDeferredLeavesInBackground = background
        configuration.storage.defersMigrationCompression = deferring
        return configuration
    }

    static func migrate(_ fs: MemoryFileSystem, _ configuration: Store.Configuration = configuration()) throws -> Store {
        try Store(at: "/store", schema: PeopleSplitNames.self, migrationPlan: DeferredSplitPlan.self, configuration: configuration,
                  fileSystem: fs)
    }

    /// The bytes of every segment file.
    static func logBytes(_ fs: MemoryFileSystem) -> Int {
        fs.allFiles().filter { $0.key.hasSuffix(".seg") }.values.reduce(0) { $0 + $1.count }
    }

    static func people(_ store: Store) throws -> [PeopleSplitNames.Person] {
        try Context(store).fetch(FetchDescriptor<PeopleSplitNames.Person>()).map(\.record)
    }

    @Test func aCustomStageStoresItsLeavesUncompressedUntilThePassCompressesThem() throws {
        let fs = MemoryFileSystem()
        try MigrationTests.createV1(at: "/store", count: Self.count, fileSystem: fs)
        let store = try Self.migrate(fs)
        #expect(try store.entitiesAwaitingCompression() == ["Person"])
        let before = try #require(try store.leafStorage()["Person"])
        #expect(before.leaves >= 10)
        #expect(before.uncompressed == before.leaves)
        #expect(try Self.people(store) == Self.expected)
        let token = try store.currentHistoryToken()
        let bytesAfterMigration = Self.logBytes(fs)

        try store.compact()  // runs the pass first
        #expect(try store.currentHistoryToken() == token)  // the pass changes no record: nothing journaled
        #expect(try store.entitiesAwaitingCompression() == [])
        let after = try #require(try store.leafStorage()["Person"])
        #expect(after.leaves == before.leaves)
        #expect(after.uncompressed == 0)
        #expect(try Self.people(store) == Self.expected)
        // Everything sat in one segment; compaction sealed it (mostly dead: the old version, the
        // uncompressed leaves) and moved the live pages out.
        #expect(Self.logBytes(fs) < bytesAfterMigration / 2, "\(Self.logBytes(fs)) bytes of log, \(bytesAfterMigration) before")
        try store.close()

        let reopened = try Self.migrate(fs)
        #expect(try reopened.entitiesAwaitingCompression() == [])
        #expect(try reopened.leafStorage()["Person"]?.uncompressed == 0)
        #expect(try Self.people(reopened) == Self.expected)
        try reopened.close()
    }

    @Test func withoutDeferralTheStageCompressesItsLeaves() throws {
        let fs = MemoryFileSystem()
        try MigrationTests.createV1(at: "/store", count: Self.count, fileSystem: fs)
        let store = try Self.migrate(fs, Self.configuration(deferring: false))
        #expect(try store.entitiesAwaitingCompression() == [])
        let storage = try #require(try store.leafStorage()["Person"])
        #expect(storage.leaves >= 10 && storage.uncompressed == 0)
        #expect(try Self.people(store) == Self.expected)
        try store.close()
    }

    @Test func theBackgroundPassFinishesAlongsideTheAppsWrites() throws {
        let fs = MemoryFileSystem()
        try MigrationTests.createV1(at: "/store", count: Self.count, fileSystem: fs)
        let store = try Self.migrate(fs, Self.configuration(background: true))
        // The app writes while the pass runs: new records, and changes to migrated ones.
        var expected = Self.expected
        let context = Context(store)
        for index in stride(from: 0, to: Self.count, by: 97) {
            expected[index].age += 10_000
            try context.update(RecordID<PeopleSplitNames.Person>(rawValue: UInt64(index + 1)), to: expected[index])
            try context.save()
        }
        let added = (0..<200).map { PeopleSplitNames.Person(lastName: "New\($0)", firstName: "", age: -$0) }
        for person in added { _ = try context.insert(person) }
        try context.save()
        expected += added
        // A liveness wait, not a timing: the pass ends by itself (at most about a minute here).
        var waits = 0
        while try !store.entitiesAwaitingCompression().isEmpty && waits < 6_000 {
            usleep(10_000)
            waits += 1
        }
        #expect(try store.entitiesAwaitingCompression() == [])
        #expect(try store.leafStorage()["Person"]?.uncompressed == 0)
        #expect(try Self.people(store) == expected)
        try store.close()
    }

    @Test func aCrashDuringThePassLosesNothingAndNeverClearsTheFlagEarly() throws {
        let seed = SeededRandom.seed(default: 0xDEFE)
        print("DeferredCompressionTests crash seed \(seed)")
        // The pass, 3 leaves a commit, then a close: every write and sync of it is a crash point.
        func pass(_ fs: MemoryFileSystem) {
            do {
                let store = try Self.migrate(fs)
                try store.compressDeferredLeaves(leavesPerCommit: 3)
                try store.close()
            } catch {}
        }
        // The migrated store, closed: its leaves wait for the pass.
        func prepared() throws -> MemoryFileSystem {
            let fs = MemoryFileSystem()
            try MigrationTests.createV1(at: "/store", count: Self.count, fileSystem: fs)
            try Self.migrate(fs).close()
            return fs
        }
        let reference = try prepared()
        let operationsBefore = reference.counters.operations
        pass(reference)
        let operations = reference.counters.operations - operationsBefore
        #expect(operations > 10)
        var tested = 0, finished = 0, partial = 0
        for point in 0..<operations {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point))
                let fs = try prepared()
                let first = fs.counters.operations
                fs.setFaultInjector { $0.index == first + point ? .crash : nil }
                pass(fs)
                fs.setFaultInjector(nil)
                fs.simulateCrash(mode: mode, using: &random)
                let store = try Self.migrate(fs)
                #expect(try Self.people(store) == Self.expected, "operation \(point), mode \(mode), seed \(seed)")
                let storage = try #require(try store.leafStorage()["Person"])
                if try store.entitiesAwaitingCompression().isEmpty {
                    // Cleared only by the commit after every leaf was compressed.
                    #expect(storage.uncompressed == 0, "operation \(point), mode \(mode), seed \(seed)")
                    finished += 1
                } else {
                    if storage.uncompressed > 0 && storage.uncompressed < storage.leaves { partial += 1 }
                    try store.compressDeferredLeaves()
                    #expect(try store.entitiesAwaitingCompression() == [])
                    #expect(try store.leafStorage()["Person"]?.uncompressed == 0)
                    #expect(try Self.people(store) == Self.expected, "after the pass: operation \(point), mode \(mode)")
                }
                try store.close()
                tested += 1
            }
        }
        print("DeferredCompressionTests: \(tested) crash points, \(finished) found the pass finished, \(partial) half done")
        #expect(tested == 3 * operations)
        #expect(finished > 0 && partial > 0)
    }

    // MARK: Golden store

    static let fixture = String(#filePath.prefix(upTo: #filePath.lastIndex(of: "/")!)) + "/Fixtures/uncompressed-v5"
    static let fixtureCount = 1_000

    /// Writes the fixture (store root version 5: the split's leaves stored uncompressed, the
    /// pass not run) when STRATA_WRITE_DEFERRED_FIXTURE names an empty folder.
    @Test func writeFixtureWhenAsked() throws {
        guard let target = getenv("STRATA_WRITE_DEFERRED_FIXTURE").map({ String(cString: $0) }) else { return }
        try MigrationTests.createV1(at: target, count: Self.fixtureCount)
        let store = try Store(at: target, schema: PeopleSplitNames.self, migrationPlan: DeferredSplitPlan.self,
                              configuration: Self.configuration(), fileSystem: POSIXFileSystem())
        try store.close()
    }

    @Test func theGoldenStoreWithUncompressedLeavesOpensAndIsCompressed() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try copyFolder(Self.fixture, to: folder)
        let expected = MigrationTests.v1People(Self.fixtureCount).map(SplitPlan.split)
        let store = try Store(at: folder, schema: PeopleSplitNames.self, migrationPlan: DeferredSplitPlan.self,
                              configuration: Self.configuration(), fileSystem: POSIXFileSystem())
        #expect(try store.entitiesAwaitingCompression() == ["Person"])
        let before = try #require(try store.leafStorage()["Person"])
        #expect(before.leaves >= 3 && before.uncompressed == before.leaves)
        #expect(try Self.people(store) == expected)
        try store.compact()
        #expect(try store.entitiesAwaitingCompression() == [])
        #expect(try store.leafStorage()["Person"]?.uncompressed == 0)
        try store.close()
        let reopened = try Store(at: folder, schema: PeopleSplitNames.self)
        #expect(try Self.people(reopened) == expected)
        #expect(try reopened.entitiesAwaitingCompression() == [])
        try reopened.close()
    }
}
