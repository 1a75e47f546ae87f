#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
import Strata
import StrataTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Who may migrate, and what everyone else sees: non-owners (widgets, extensions) get
/// `migrationRequired` and change nothing; an older app reads a newer store read-only when
/// the changes since its version are lightweight; `storedSchema(at:)` peeks without binding.
@Suite(.serialized) struct MigrationOwnershipTests {
    static func configuration(owner: Bool = true, readOnly: Bool = false) -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.isMigrationOwner = owner
        configuration.isReadOnly = readOnly
        return configuration
    }

    /// The bytes of every file of the folder, by name.
    static func files(_ folder: String) throws -> [String: [UInt8]] {
        let fs = POSIXFileSystem()
        var result: [String: [UInt8]] = [:]
        for name in try fs.contentsOfDirectory(folder) {
            let file = try fs.openFile(folder + "/" + name, create: false)
            defer { file.close() }
            result[name] = try file.read(count: Int(try file.size()), at: 0)
        }
        return result
    }

    @Test func aNonOwnerGetsMigrationRequiredAndChangesNothing() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 50)
        let before = try Self.files(folder)
        #expect(throws: StrataError.migrationRequired(stored: Schema.Version(1, 0, 0), required: Schema.Version(3, 0, 0))) {
            try Store(at: folder, schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: Self.configuration(owner: false))
        }
        // Without a plan too: a lightweight change is a migration (it writes the catalog).
        #expect(throws: StrataError.migrationRequired(stored: Schema.Version(1, 0, 0), required: Schema.Version(2, 0, 0))) {
            try Store(at: folder, schema: PeopleV2.self, migrationPlan: nil, configuration: Self.configuration(owner: false))
        }
        #expect(try Self.files(folder) == before)
        // The same version opens as usual for a non-owner.
        let store = try Store(at: folder, schema: PeopleV1.self, migrationPlan: nil, configuration: Self.configuration(owner: false))
        #expect(try Context(store).fetchCount(FetchDescriptor<PeopleV1.Person>()) == 50)
        try store.close()
    }

    @Test func aNonOwnerLeavesAnInterruptedMigrationToItsOwner() throws {
        // Power cut after the migration's marker became durable: the store holds a migration in progress.
        var setupSyncs = 0
        let probe = MemoryFileSystem()
        try MigrationTests.createV1(at: "/store", count: 100, fileSystem: probe)
        setupSyncs = probe.counters.syncs
        var random = SeededRandom(seed: 7)
        let (fs, _) = MemoryFileSystem.runUntilPowerCut(atSync: setupSyncs + 2, mode: .keepAll, using: &random) { fs in
            try? MigrationTests.createV1(at: "/store", count: 100, fileSystem: fs)
            _ = try? Store(at: "/store", schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: Store.Configuration(), fileSystem: fs)
        }
        let before = fs.allFiles()
        #expect(try Store.storedSchema(at: "/store", fileSystem: fs)?.isMigrating == true)
        #expect(fs.allFiles() == before)
        #expect(throws: StrataError.migrationRequired(stored: Schema.Version(1, 0, 0), required: Schema.Version(3, 0, 0))) {
            try Store(at: "/store", schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: Self.configuration(owner: false), fileSystem: fs)
        }
        #expect(fs.allFiles() == before)
        // The owner finishes it.
        let store = try Store(at: "/store", schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: Store.Configuration(), fileSystem: fs)
        #expect(try Context(store).fetch(FetchDescriptor<PeopleV3.Person>()).map(\.record) == MigrationTests.expectedV3(from: 100))
        try store.close()
        let peek = try Store.storedSchema(at: "/store", fileSystem: fs)
        #expect(peek == StoredSchema(version: Schema.Version(3, 0, 0), checksum: try PeopleV3.schema().checksum, isMigrating: false))
    }

    /// Run as a child process by `aSecondProcessGetsMigrationRequired`: opens the store named by
    /// STRATA_CHILD_STORE as a non-owner and writes what happened to STRATA_CHILD_REPORT.
    @Test func childOpensAsNonOwner() throws {
        guard let folder = getenv("STRATA_CHILD_STORE").map({ String(cString: $0) }),
              let report = getenv("STRATA_CHILD_REPORT").map({ String(cString: $0) }) else { return }
        do {
            let store = try Store(at: folder, schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: Self.configuration(owner: false))
            try store.close()
            writeTextFile(report, "opened")
        } catch {
            writeTextFile(report, "\(error)")
        }
    }

    @Test func aSecondProcessGetsMigrationRequired() throws {
        guard getenv("STRATA_CHILD_STORE") == nil else { return }  // not inside the child
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 20)
        let before = try Self.files(folder)
        let report = folder + "-child-report"
        defer { unlink(report) }
        let status = try runChildTest("MigrationOwnershipTests/childOpensAsNonOwner",
                                      environment: ["STRATA_CHILD_STORE": folder, "STRATA_CHILD_REPORT": report])
        #expect(status == 0)
        let expected = StrataError.migrationRequired(stored: Schema.Version(1, 0, 0), required: Schema.Version(3, 0, 0))
        #expect(readTextFile(report) == "\(expected)")
        #expect(try Self.files(folder) == before)
        // Two owners at once: the second fails cleanly (the store's lock), the first migrates.
        let owner = try Store(at: folder, schema: PeopleV3.self, migrationPlan: FullPlan.self)
        #expect(throws: StrataError.locked(path: folder)) {
            try Store(at: folder, schema: PeopleV3.self, migrationPlan: FullPlan.self)
        }
        #expect(try Context(owner).fetchCount(FetchDescriptor<PeopleV3.Person>()) == 20)
        try owner.close()
    }

    @Test func anOlderAppReadsANewerStoreReadOnlyAfterLightweightChanges() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 60)
        do {
            let v2 = try Store(at: folder, schema: PeopleV2.self, migrationPlan: AutomaticPlan.self)
            try v2.write { transaction in
                try transaction.insert(PeopleV2.Person(fullName: "Written by V2", years: 99, isFavorite: true))
            }
            try v2.close()
        }
        let before = try Self.files(folder)
        // Read-write: storeIsNewer.
        #expect(throws: StrataError.storeIsNewer(stored: Schema.Version(2, 0, 0), current: Schema.Version(1, 0, 0))) {
            try Store(at: folder, schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration())
        }
        // Read-only: V1's types read every record, including the one V2 wrote (its new
        // attribute ignored, the renamed one read under its V1 name).
        let store = try Store(at: folder, schema: PeopleV1.self, migrationPlan: nil, configuration: Self.configuration(readOnly: true))
        #expect(store.isReadOnly)
        let people = try Context(store).fetch(FetchDescriptor<PeopleV1.Person>(sortBy: [RecordSort(\.age)])).map(\.record)
        #expect(people == MigrationTests.v1People(60) + [PeopleV1.Person(fullName: "Written by V2", age: 99)])
        #expect(throws: StrataError.readOnly) { try store.write { try $0.insert(PeopleV1.Person(fullName: "x", age: 1)) } }
        let context = Context(store)
        _ = try context.insert(PeopleV1.Person(fullName: "y", age: 2))
        #expect(throws: StrataError.readOnly) { try context.save() }
        try store.close()
        #expect(try Self.files(folder) == before)
        // A newer store whose change is not lightweight stays closed to the older app.
        let split = try temporaryDirectory()
        defer { removeDirectory(split) }
        try MigrationTests.createV1(at: split, count: 10)
        try Store(at: split, schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self).close()
        #expect(throws: StrataError.storeIsNewer(stored: Schema.Version(2, 0, 0), current: Schema.Version(1, 0, 0))) {
            try Store(at: split, schema: PeopleV1.self, migrationPlan: nil, configuration: Self.configuration(readOnly: true))
        }
        // Read-only never creates a store.
        #expect(throws: StrataError.storeNotFound(path: split + "/missing")) {
            try Store(at: split + "/missing", schema: PeopleV1.self, migrationPlan: nil, configuration: Self.configuration(readOnly: true))
        }
    }
}
