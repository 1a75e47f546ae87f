#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import Testing
import StrataIO
import Strata
import StrataTestSupport

/// Progress events while a migration runs, and the dry run that estimates one without
/// changing the store.
@Suite(.serialized) struct MigrationProgressTests {
    @Test func progressIsReportedPerStageAndPerBatch() throws {
        failingAge = nil
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 1_000)
        let events = Lock<[MigrationProgress]>([])
        var configuration = Store.Configuration()
        configuration.migrationProgress = { progress in events.withLock { $0.append(progress) } }
        let store = try Store(at: folder, schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self, configuration: configuration)
        try store.close()
        let seen = events.withLock { $0 }
        // A start, one report with the totals, one per committed batch of 64 (16 batches), the end.
        #expect(seen.count == 1 + 1 + 16 + 1)
        #expect(seen.allSatisfy { $0.stageIndex == 0 && $0.stageCount == 1 && !$0.isMetadataOnly })
        #expect(seen.allSatisfy { $0.stageName == "custom PeopleV1 (1.0.0) → PeopleSplitNames (2.0.0)" })
        #expect(seen.dropFirst().allSatisfy { $0.recordsTotal == 1_000 })
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.recordsDone <= $1.recordsDone && $0.elapsed <= $1.elapsed })
        let middle = seen[seen.count / 2]
        #expect(middle.recordsDone > 0 && middle.recordsDone < 1_000 && middle.estimatedRemaining != nil && middle.bytesTotal > middle.bytesDone)
        #expect(middle.fractionDone > 0 && middle.fractionDone < 1)
        let last = try #require(seen.last)
        #expect(last.isStageFinished && last.recordsDone == 1_000 && last.fractionDone == 1 && last.bytesDone == last.bytesTotal && last.bytesDone > 0)

        // Metadata-only stages report a start and an end each.
        let other = try temporaryDirectory()
        defer { removeDirectory(other) }
        try MigrationTests.createV1(at: other, count: 10)
        events.withLock { $0.removeAll() }
        try Store(at: other, schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: configuration).close()
        let stages = events.withLock { $0 }
        #expect(stages.map(\.stageIndex) == [0, 0, 1, 1])
        #expect(stages.map(\.isStageFinished) == [false, true, false, true])
        #expect(stages.allSatisfy { $0.isMetadataOnly })
        #expect(stages[0].stageName == "automatic lightweight PeopleV1 (1.0.0) → PeopleV2 (2.0.0)")
    }

    @Test func openingStreamsProgressThenTheStore() async throws {
        failingAge = nil
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 300)
        var progress = 0, oldVersions = 0
        var opened: Store?
        for try await event in Store.opening(at: folder, schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self) {
            switch event {
            case .progress: progress += 1
            case .oldVersionReadable: oldVersions += 1
            case .opened(let store): opened = store
            }
        }
        let store = try #require(opened)
        #expect(progress == 1 + 1 + 5 + 1)  // 300 records in batches of 64
        #expect(oldVersions == 1)
        #expect(try Context(store).fetchCount(FetchDescriptor<PeopleSplitNames.Person>()) == 300)
        try store.close()
        // An error ends the stream.
        await #expect(throws: StrataError.storeIsNewer(stored: Schema.Version(2, 0, 0), current: Schema.Version(1, 0, 0))) {
            for try await _ in Store.opening(at: folder, schema: PeopleV1.self, migrationPlan: nil) {}
        }
    }

    @Test func theOldVersionStaysReadableWhileAStageStreams() throws {
        failingAge = nil
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 1_000)
        struct Seen { var store: Store?; var counts: [Int] = []; var firsts: [PeopleV1.Person?] = []; var writeRefused = false }
        let seen = Lock(Seen())
        var configuration = Store.Configuration()
        configuration.migrationOldVersion = { store in seen.withLock { $0.store = store } }
        configuration.migrationProgress = { progress in
            guard let old = seen.withLock({ $0.store }), progress.recordsDone > 0, !progress.isStageFinished else { return }
            // Mid-stage, from the migrating thread: the old version, all of it, as it was.
            let context = Context(old)
            let count = (try? context.fetchCount(FetchDescriptor<PeopleV1.Person>())) ?? -1
            let first = try? context.record(for: RecordID<PeopleV1.Person>(rawValue: 1))
            var refused = false
            do { try old.write { try $0.insert(PeopleV1.Person(fullName: "x", age: 0)) } } catch StrataError.readOnly { refused = true } catch {}
            seen.withLock {
                $0.counts.append(count)
                $0.firsts.append(first)
                $0.writeRefused = refused
            }
        }
        let store = try Store(at: folder, schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self, configuration: configuration)
        let result = seen.withLock { $0 }
        #expect(result.counts.count == 16)  // one per committed batch (1,000 records in batches of 64)
        #expect(result.counts.allSatisfy { $0 == 1_000 })
        #expect(result.firsts.allSatisfy { $0 == MigrationTests.v1People(1)[0] })
        #expect(result.writeRefused)
        // After the switch the old view is retired; closing it closes nothing.
        let old = try #require(result.store)
        #expect(throws: StrataError.migrationRequired(stored: Schema.Version(1, 0, 0), required: Schema.Version(1, 0, 0))) {
            try Context(old).fetchCount(FetchDescriptor<PeopleV1.Person>())
        }
        try old.close()
        #expect(try Context(store).fetchCount(FetchDescriptor<PeopleSplitNames.Person>()) == 1_000)
        try store.close()
    }

    @Test func aDryRunEstimatesWithoutChangingTheStore() throws {
        failingAge = nil
        transformCalls = 0
        let fs = MemoryFileSystem()
        try MigrationTests.createV1(at: "/store", count: 3_000, fileSystem: fs)
        let before = fs.allFiles()
        let configuration = Store.Configuration()

        let split = try Store.dryRun(at: "/store", schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self, configuration: configuration,
                                     fileSystem: fs)
        #expect(split.storedVersion == Schema.Version(1, 0, 0) && split.targetVersion == Schema.Version(2, 0, 0))
        #expect(split.stages.count == 1 && !split.stages[0].isMetadataOnly && split.stages[0].records == 3_000)
        #expect(split.stages[0].name == "custom PeopleV1 (1.0.0) → PeopleSplitNames (2.0.0)")
        // At least the documented write cost per record; the transforms ran on the sample only.
        #expect(split.estimatedDuration >= .microseconds(3_000))
        #expect(transformCalls == 6_000)  // 2,000 sampled records, three passes each
        #expect(!split.resumesInterruptedMigration)
        let tight = try Store.dryRun(at: "/store", schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self, launchBudget: .nanoseconds(1),
                                     configuration: configuration, fileSystem: fs)
        #expect(!tight.fitsLaunchBudget && tight.launchBudget == .nanoseconds(1))

        let lightweight = try Store.dryRun(at: "/store", schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: configuration,
                                           fileSystem: fs)
        // V2 → V3 has closures: estimated as a backfill of every person (V3 changes Person).
        #expect(lightweight.stages.map(\.isMetadataOnly) == [true, false])
        #expect(lightweight.stages.map(\.records) == [0, 3_000])
        #expect(lightweight.fitsLaunchBudget)

        let current = try Store.dryRun(at: "/store", schema: PeopleV1.self, migrationPlan: nil, configuration: configuration, fileSystem: fs)
        #expect(current.stages.isEmpty && current.estimatedDuration == .zero)
        let v1Checksum = "\(try PeopleV1.schema().checksum)"
        #expect(throws: StrataError.unknownModelVersion(stored: Schema.Version(1, 0, 0), checksum: v1Checksum)) {
            try Store.dryRun(at: "/store", schema: PeopleSplitNames.self, migrationPlan: SplitOnlyPlan.self, configuration: configuration, fileSystem: fs)
        }
        #expect(fs.allFiles() == before)
    }
}

/// A plan that does not know the store's version (V1).
enum SplitOnlyPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleStray.self, PeopleSplitNames.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleStray.self, toVersion: PeopleSplitNames.self, transforms: [
            .map(PeopleStray.Person.self, to: PeopleSplitNames.Person.self) { PeopleSplitNames.Person(lastName: $0.fullName, firstName: "", age: 0) },
        ])]
    }
}
