import Dispatch
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

#if canImport(Glibc)
import Glibc
#endif

/// The failure `ReaderSplitPlan`'s transform injects (this suite's own: suites run in parallel).
nonisolated(unsafe) var readerPlanFailingAge: Int?

/// `SplitPlan` with its own injected failure, whose `willMigrate` first deletes the record of
/// age 0 (committed with the stage's first phase: a change a reader must not see before the
/// migration ends).
enum ReaderSplitPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleSplitNames.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleV1.self, toVersion: PeopleSplitNames.self, transforms: [
            .map(PeopleV1.Person.self, to: PeopleSplitNames.Person.self) { old in
                if old.age == readerPlanFailingAge { throw StageFault.willMigrate }
                return SplitPlan.split(old)
            },
        ], batchSize: 64, willMigrate: { context in
            _ = try context.delete(PeopleV1.Person.self, where: #Predicate { $0.age == 0 })
        })]
    }
}

/// A child test run (`runChildTest`) on a thread of its own, so the parent can act meanwhile.
final class ChildRun: Sendable {
    private let status = Lock<Int32>(-1)
    private let finished = DispatchSemaphore(value: 0)

    init(_ filter: String, environment: [String: String]) {
        DispatchQueue.global().async { [self] in
            let code = (try? runChildTest(filter, environment: environment)) ?? -1
            status.withLock { $0 = code }
            finished.signal()
        }
    }

    /// Waits for the child to exit; its exit status (0: its tests passed).
    func wait() -> Int32 {
        finished.wait()
        return status.withLock { $0 }
    }
}

/// Reader processes (Architecture.md, "Reader processes", invariant 32): a read-only store
/// opens while another instance or process writes the store, reads consistent snapshots, and
/// sees the writer's commits — refreshed at the start of each read.
@Suite(.serialized) struct ReaderProcessTests {
    static func readOnly() -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.isReadOnly = true
        return configuration
    }

    static func count(_ store: Store) throws -> Int { try Context(store).fetchCount(FetchDescriptor<PeopleV1.Person>()) }

    /// Polls `condition` until it holds or `seconds` pass (a bound against hanging, not a timing assertion).
    static func wait(upTo seconds: Int = 120, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            usleep(1_000)
        }
        return try condition()
    }

    /// The bytes of every file of the folder, by name.
    static func files(_ folder: String) throws -> [String: [UInt8]] { try MigrationOwnershipTests.files(folder) }

    @Test func aReadOnlyStoreFollowsAWriterInTheSameProcess() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 10)
        let writer = try Store(at: folder, schema: PeopleV1.self)
        // Opens while the writer holds the store's lock; so does a peek at its schema.
        let reader = try Store(at: folder, schema: PeopleV1.self, configuration: Self.readOnly())
        #expect(try Store.storedSchema(at: folder)?.version == Schema.Version(1, 0, 0))
        #expect(try Self.count(reader) == 10)
        #expect(try !reader.refresh())
        try writer.write { transaction in for age in 100..<105 { try transaction.insert(PeopleV1.Person(fullName: "New", age: age)) } }
        // Every read starts from the latest commit; refresh() reports what reads brought in since its last call.
        #expect(try Self.count(reader) == 15)
        #expect(try reader.refresh())
        #expect(try !reader.refresh())
        let first = RecordID<PeopleV1.Person>(rawValue: 1)
        let context = Context(writer)
        try context.update(first, to: PeopleV1.Person(fullName: "Renamed", age: 1))
        try context.save()
        #expect(try Context(reader).record(for: first)?.fullName == "Renamed")
        // A read transaction keeps its moment while the writer commits.
        try reader.read { transaction in
            try writer.write { try $0.insert(PeopleV1.Person(fullName: "Later", age: 200)) }
            #expect(try transaction.fetchCount(FetchDescriptor<PeopleV1.Person>()) == 15)
        }
        #expect(try reader.read { try $0.fetchCount(FetchDescriptor<PeopleV1.Person>()) } == 16)
        #expect(throws: StrataError.readOnly) { try reader.write { try $0.insert(PeopleV1.Person(fullName: "x", age: 0)) } }
        // The writer closes and another opens (the reader holds no lock); the reader follows it.
        try writer.close()
        let next = try Store(at: folder, schema: PeopleV1.self)
        try next.write { try $0.insert(PeopleV1.Person(fullName: "Next", age: 300)) }
        #expect(try Self.count(reader) == 17)
        try next.close()
        try reader.close()
        #expect(throws: StrataError.closed) { try Self.count(reader) }
    }

    /// Opening, reading, refreshing and closing a read-only store leave every file as it was —
    /// even with a torn tail (a writer killed mid-append) and a temporary leftover, which a
    /// writer's open would cut and delete — and create none (no lock file).
    @Test func aReadOnlyStoreChangesNoByte() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 300)
        let fs = POSIXFileSystem()
        unlink(folder + "/LOCK")
        let last = try #require(try fs.contentsOfDirectory(folder).filter { $0.hasSuffix(".seg") }.max())
        let segment = try fs.openFile(folder + "/" + last, create: false)
        let end = try segment.size()
        try segment.write([0x53, 0x46, 0x52, 0x4D, 1, 1, 0, 0] + [UInt8](repeating: 7, count: 30), at: end)  // half a frame
        segment.close()
        let leftover = try fs.openFile(folder + "/00000000000000ff.seg.tmp", create: true)
        try leftover.write([1, 2, 3], at: 0)
        leftover.close()
        let before = try Self.files(folder)
        let reader = try Store(at: folder, schema: PeopleV1.self, configuration: Self.readOnly())
        #expect(try Self.count(reader) == 300)
        #expect(try !reader.refresh())
        #expect(try reader.read { try $0.fetch(FetchDescriptor<PeopleV1.Person>(sortBy: [RecordSort(\.age)])).map(\.record) } == MigrationTests.v1People(300))
        _ = try Store.storedSchema(at: folder)
        _ = try Store.dryRun(at: folder, schema: PeopleSplitNames.self, migrationPlan: ReaderSplitPlan.self)
        try reader.close()
        #expect(try Self.files(folder) == before)
    }

    @Test func aSchemaChangedByTheWriterIsATypedError() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 20)
        let reader = try Store(at: folder, schema: PeopleV1.self, configuration: Self.readOnly())
        #expect(try Self.count(reader) == 20)
        // A newer app registers a lightweight version: the catalog changes under the reader.
        let v2 = try Store(at: folder, schema: PeopleV2.self, migrationPlan: AutomaticPlan.self)
        try v2.write { try $0.insert(PeopleV2.Person(fullName: "V2", years: 5, isFavorite: true)) }
        let changed = StrataError.schemaChanged(stored: Schema.Version(2, 0, 0))
        #expect(throws: changed) { try Self.count(reader) }
        #expect(throws: changed) { try reader.refresh() }
        #expect(throws: changed) { try reader.read { try $0.fetchCount(FetchDescriptor<PeopleV1.Person>()) } }
        try reader.close()
        // Opened again, it binds the new catalog (readable through V1: the change was lightweight).
        let again = try Store(at: folder, schema: PeopleV1.self, configuration: Self.readOnly())
        #expect(try Self.count(again) == 21)
        try v2.write { try $0.insert(PeopleV2.Person(fullName: "V2 again", years: 6, isFavorite: false)) }
        #expect(try Self.count(again) == 22)
        try again.close()
        try v2.close()
    }

    /// While another store migrates, a reader keeps showing the store as it was before the
    /// migration (its commits may still be undone); after a failed, rolled-back migration it goes
    /// on from there; after a finished one its reads throw `schemaChanged`.
    @Test func aMigrationIsNotShownUntilItEnds() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 1_000)
        let reader = try Store(at: folder, schema: PeopleV1.self, configuration: Self.readOnly())
        #expect(try Self.count(reader) == 1_000)
        struct Seen { var counts: [Int] = []; var firsts: [PeopleV1.Person?] = []; var openedMidway: String? }
        let seen = Lock(Seen())
        var configuration = Store.Configuration()
        configuration.migrationProgress = { progress in
            guard progress.recordsDone > 0, !progress.isStageFinished else { return }
            let count = (try? Self.count(reader)) ?? -1
            let first = try? Context(reader).record(for: RecordID<PeopleV1.Person>(rawValue: 1))
            var opened = "opened"
            do { try Store(at: folder, schema: PeopleV1.self, configuration: Self.readOnly()).close() } catch { opened = "\(error)" }
            seen.withLock {
                $0.counts.append(count)
                $0.firsts.append(first)
                $0.openedMidway = opened
            }
        }
        // A migration that fails half-way and is rolled back.
        readerPlanFailingAge = 700
        defer { readerPlanFailingAge = nil }
        #expect(throws: StrataError.self) {
            try Store(at: folder, schema: PeopleSplitNames.self, migrationPlan: ReaderSplitPlan.self, configuration: configuration)
        }
        var result = seen.withLock { $0 }
        #expect(result.counts.count >= 5)
        #expect(result.counts.allSatisfy { $0 == 1_000 })
        #expect(result.firsts.allSatisfy { $0 == MigrationTests.v1People(1)[0] })
        let required = StrataError.migrationRequired(stored: Schema.Version(1, 0, 0), required: Schema.Version(1, 0, 0))
        #expect(result.openedMidway == "\(required)")
        #expect(try Self.count(reader) == 1_000)
        // The old app goes on writing; the reader follows.
        let v1 = try Store(at: folder, schema: PeopleV1.self)
        try v1.write { try $0.insert(PeopleV1.Person(fullName: "After, Rollback", age: 5_000)) }
        try v1.close()
        #expect(try Self.count(reader) == 1_001)
        // A migration that finishes.
        seen.withLock { $0 = Seen() }
        readerPlanFailingAge = nil
        let migrated = try Store(at: folder, schema: PeopleSplitNames.self, migrationPlan: ReaderSplitPlan.self, configuration: configuration)
        result = seen.withLock { $0 }
        #expect(result.counts.count >= 5)
        #expect(result.counts.allSatisfy { $0 == 1_001 })
        #expect(throws: StrataError.schemaChanged(stored: Schema.Version(2, 0, 0))) { try Self.count(reader) }
        try reader.close()
        let newReader = try Store(at: folder, schema: PeopleSplitNames.self, configuration: Self.readOnly())
        #expect(try Context(newReader).fetchCount(FetchDescriptor<PeopleSplitNames.Person>()) == 1_000)
        try newReader.close()
        try migrated.close()
    }

    // MARK: Two processes

    /// Run by `aReaderProcessSeesTheWritersCommits` as a child process: writes to the store named
    /// by STRATA_FOLLOW_WRITE_STORE in two batches, the second once the parent saw the first
    /// (STRATA_FOLLOW_SEEN appears), and reports to STRATA_FOLLOW_REPORT.
    @Test func childWritesInTwoBatches() throws {
        guard let folder = getenv("STRATA_FOLLOW_WRITE_STORE").map({ String(cString: $0) }),
              let seenFile = getenv("STRATA_FOLLOW_SEEN").map({ String(cString: $0) }),
              let report = getenv("STRATA_FOLLOW_REPORT").map({ String(cString: $0) }) else { return }
        do {
            let store = try Store(at: folder, schema: PeopleV1.self)
            try store.write { transaction in for age in 1_000..<1_010 { try transaction.insert(PeopleV1.Person(fullName: "Child", age: age)) } }
            guard Self.wait({ readTextFile(seenFile) != nil }) else {
                writeTextFile(report, "the parent never saw the first batch")
                return
            }
            let context = Context(store)
            for age in 2_000..<2_010 { _ = try context.insert(PeopleV1.Person(fullName: "Child", age: age)) }
            try context.update(RecordID<PeopleV1.Person>(rawValue: 1), to: PeopleV1.Person(fullName: "Changed by the child", age: 0))
            try context.save()
            try store.close()
            writeTextFile(report, "done")
        } catch {
            writeTextFile(report, "\(error)")
        }
    }

    /// The parent reads the store read-only while a child process opens it for writing and
    /// commits: polling `refresh()`, it sees each batch while the child still has the store open.
    @Test func aReaderProcessSeesTheWritersCommits() throws {
        guard getenv("STRATA_FOLLOW_WRITE_STORE") == nil, getenv("STRATA_FOLLOW_READ_STORE") == nil else { return }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 20)
        let reader = try Store(at: folder, schema: PeopleV1.self, configuration: Self.readOnly())
        #expect(try Self.count(reader) == 20)
        let seenFile = folder + "-seen", report = folder + "-report"
        defer { unlink(seenFile); unlink(report) }
        let child = ChildRun("ReaderProcessTests/childWritesInTwoBatches",
                             environment: ["STRATA_FOLLOW_WRITE_STORE": folder, "STRATA_FOLLOW_SEEN": seenFile, "STRATA_FOLLOW_REPORT": report])
        // The first batch, seen while the child (waiting for us) holds the store open for writing.
        let sawFirst = try Self.wait { _ = try reader.refresh(); return try Self.count(reader) >= 30 }
        #expect(sawFirst)
        #expect(try Self.count(reader) == 30)
        writeTextFile(seenFile, "seen")
        let sawSecond = try Self.wait {
            try Self.count(reader) == 40 && Context(reader).record(for: RecordID<PeopleV1.Person>(rawValue: 1))?.fullName == "Changed by the child"
        }
        #expect(sawSecond)
        #expect(child.wait() == 0)
        #expect(readTextFile(report) == "done")
        try reader.close()
    }

    /// Run by `aReaderInAChildProcessSeesTheParentsCommits`: opens the store named by
    /// STRATA_FOLLOW_READ_STORE read-only while the parent writes, says so (STRATA_FOLLOW_READY),
    /// and reports what it saw once the parent's second batch arrived.
    @Test func childReadsWhileTheParentWrites() throws {
        guard let folder = getenv("STRATA_FOLLOW_READ_STORE").map({ String(cString: $0) }),
              let ready = getenv("STRATA_FOLLOW_READY").map({ String(cString: $0) }),
              let report = getenv("STRATA_FOLLOW_REPORT").map({ String(cString: $0) }) else { return }
        do {
            let store = try Store(at: folder, schema: PeopleV1.self, configuration: Self.readOnly())
            let first = try Self.count(store)
            writeTextFile(ready, "ready")
            let sawSecond = try Self.wait { try Self.count(store) == 30 }
            try store.close()
            writeTextFile(report, "first \(first), second \(sawSecond)")
        } catch {
            writeTextFile(report, "\(error)")
        }
    }

    @Test func aReaderInAChildProcessSeesTheParentsCommits() throws {
        guard getenv("STRATA_FOLLOW_WRITE_STORE") == nil, getenv("STRATA_FOLLOW_READ_STORE") == nil else { return }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 5)
        let writer = try Store(at: folder, schema: PeopleV1.self)
        try writer.write { transaction in for age in 100..<115 { try transaction.insert(PeopleV1.Person(fullName: "Parent", age: age)) } }
        let ready = folder + "-ready", report = folder + "-report"
        defer { unlink(ready); unlink(report) }
        let child = ChildRun("ReaderProcessTests/childReadsWhileTheParentWrites",
                             environment: ["STRATA_FOLLOW_READ_STORE": folder, "STRATA_FOLLOW_READY": ready, "STRATA_FOLLOW_REPORT": report])
        #expect(Self.wait { readTextFile(ready) != nil })
        try writer.write { transaction in for age in 200..<210 { try transaction.insert(PeopleV1.Person(fullName: "Parent", age: age)) } }
        #expect(child.wait() == 0)
        #expect(readTextFile(report) == "first 20, second true")
        try writer.close()
    }
}
