#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
import StrataIO
import Strata
import StrataTestSupport

// Versions of one app's schema, each frozen in its own namespace.

enum PeopleV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var fullName: String
        var age: Int
    }
}

/// Lightweight from V1: `age` renamed `years`, `isFavorite` added with a default.
enum PeopleV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var originalAttributeNames: [String: String] { ["years": "age"] }
        static var attributeDefaults: [String: Value] { ["isFavorite": false] }
        var fullName: String
        var years: Int
        var isFavorite: Bool
    }
}

/// From V2: `fullName` becomes unique (the stage's willMigrate removes duplicates first) and
/// an optional `nickname` is added (its didMigrate fills it).
enum PeopleV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["fullName": [.unique]] }
        static var attributeDefaults: [String: Value] { ["isFavorite": false] }
        var fullName: String
        var years: Int
        var isFavorite: Bool
        var nickname: String?
    }
}

/// V1's shape under another number (a duplicate checksum).
enum PeopleV1Again: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 1, 0)
    static var models: [any PersistentRecord.Type] { [PeopleV1.Person.self] }
}

/// Not lightweight from V1: a required attribute without a default.
enum PeopleSplit: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var fullName: String
        var age: Int
        var lastName: String
    }
}

/// From V1: `age` removed and `years` added without `originalName` (a probable lost rename).
enum PeopleLostRename: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var fullName: String
        var years: Int?
    }
}

/// A version no plan lists.
enum PeopleStray: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 5, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var fullName: String
        var shoeSize: Int?
    }
}


enum AutomaticPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleV2.self] }
    static var stages: [MigrationStage] { [] }
}

/// The failure injected into `FullPlan`'s stage, by test (none by default).
enum StageFault: Error, Equatable {
    case willMigrate, didMigrate
}

/// The knobs and counters of the test plans (`FullPlan`'s injected fault and skipped
/// deduplication, `SplitPlan`'s rejected age and count of transform calls), per thread. The
/// stage closures and `map` transforms run on the migration's thread — the thread of the test
/// that opens the store — and suites run in parallel: two of them migrating with one plan at
/// once must neither see each other's knobs nor count each other's records (shared globals once
/// made `transformCalls == 1_000` see 4,926).
struct PlanProbe {
    /// What the split transforms ran on, counted (a resumed migration transforms only what is left).
    var transformCalls = 0
    var failingAge: Int?
    var injectedStageFault: StageFault?
    var skipDeduplication = false
}

private let planProbes = Lock<[UInt: PlanProbe]>([:])

private func withPlanProbe<T>(_ body: (inout PlanProbe) -> T) -> T {
    #if canImport(Glibc)
    let thread = UInt(pthread_self())
    #else
    let thread = UInt(bitPattern: pthread_self())
    #endif
    return planProbes.withLock { body(&$0[thread, default: PlanProbe()]) }
}

var transformCalls: Int {
    get { withPlanProbe { $0.transformCalls } }
    set { withPlanProbe { $0.transformCalls = newValue } }
}

var failingAge: Int? {
    get { withPlanProbe { $0.failingAge } }
    set { withPlanProbe { $0.failingAge = newValue } }
}

var injectedStageFault: StageFault? {
    get { withPlanProbe { $0.injectedStageFault } }
    set { withPlanProbe { $0.injectedStageFault = newValue } }
}

var skipDeduplication: Bool {
    get { withPlanProbe { $0.skipDeduplication } }
    set { withPlanProbe { $0.skipDeduplication = newValue } }
}

enum FullPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleV2.self, PeopleV3.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleV2.self, toVersion: PeopleV3.self, willMigrate: { context in
            if injectedStageFault == .willMigrate { throw StageFault.willMigrate }
            guard !skipDeduplication else { return }
            // Keep the first record of each name; changes are left unsaved on purpose: the stage saves them.
            var seen = Set<String>()
            for match in try context.fetch(FetchDescriptor<PeopleV2.Person>(sortBy: [RecordSort(\.years)])) {
                if !seen.insert(match.record.fullName).inserted { try context.delete(match.id) }
            }
        }, didMigrate: { context in
            if injectedStageFault == .didMigrate { throw StageFault.didMigrate }
            for match in try context.fetch(FetchDescriptor<PeopleV3.Person>()) where match.record.years % 2 == 0 {
                var person = match.record
                person.nickname = "n\(person.years)"
                try context.update(match.id, to: person)
            }
        })]
    }
}

@Suite(.serialized) struct MigrationTests {
    // MARK: Plan validation

    struct Plan: SchemaMigrationPlan {
        nonisolated(unsafe) static var schemaList: [any VersionedSchema.Type] = []
        nonisolated(unsafe) static var stageList: [MigrationStage] = []
        static var schemas: [any VersionedSchema.Type] { schemaList }
        static var stages: [MigrationStage] { stageList }
    }

    /// The error `validate()` throws for `schemas` and `stages`.
    static func validationError(_ schemas: [any VersionedSchema.Type], _ stages: [MigrationStage] = []) -> MigrationPlanError? {
        Plan.schemaList = schemas
        Plan.stageList = stages
        do { try Plan.validate() } catch { return error }
        return nil
    }

    @Test func eachPlanMistakeIsReportedBeforeTouchingAStore() throws {
        #expect(Self.validationError([]) == .noSchemas)
        #expect(Self.validationError([]).map { "\($0)" } == "the migration plan lists no schema")

        let duplicateVersion = Self.validationError([PeopleSplit.self, PeopleV2.self])
        #expect(duplicateVersion == .duplicateVersionIdentifier(Schema.Version(2, 0, 0), schemas: ["PeopleSplit", "PeopleV2"]))
        #expect("\(duplicateVersion!)" == "version identifier 2.0.0 is used by PeopleSplit and PeopleV2; each version needs its own")

        let order = Self.validationError([PeopleV2.self, PeopleV1.self])
        #expect("\(order!)" == "the plan lists PeopleV2 (2.0.0) before PeopleV1 (1.0.0), but its version is not lower; list schemas oldest first")

        let checksum = try #require(Self.validationError([PeopleV1.self, PeopleV1Again.self]))
        guard case .duplicateChecksum(let first, let second, _) = checksum else { Issue.record("\(checksum)"); return }
        #expect(first == "PeopleV1 (1.0.0)" && second == "PeopleV1Again (1.1.0)")
        #expect("\(checksum)".hasPrefix("duplicate version checksums across stages: PeopleV1 (1.0.0) and PeopleV1Again (1.1.0) have the same shape"))
        #expect("\(checksum)".contains("A schema whose stored shape does not change needs no new version: remove PeopleV1Again (1.1.0), or make it differ. "))
        #expect("\(checksum)".contains("move them to a new attribute of the new type with a custom stage's RecordTransform"))

        let notInPlan = Self.validationError([PeopleV1.self, PeopleV2.self], [.lightweight(fromVersion: PeopleV1.self, toVersion: PeopleV3.self)])
        #expect(notInPlan == .stageVersionNotInPlan(stage: 0, schema: "PeopleV3 (3.0.0)"))
        #expect("\(notInPlan!)" == "stage 0 names PeopleV3 (3.0.0), which is not in the plan's schemas (unknown model version)")

        let skipping = Self.validationError([PeopleV1.self, PeopleV2.self, PeopleV3.self],
                                            [.custom(fromVersion: PeopleV1.self, toVersion: PeopleV3.self, willMigrate: nil, didMigrate: nil)])
        #expect("\(skipping!)" == "stage 0 goes from PeopleV1 (1.0.0) to PeopleV3 (3.0.0); stages must go from each version to the next one in the plan (PeopleV2 (2.0.0))")

        let twice = Self.validationError([PeopleV1.self, PeopleV2.self], [.lightweight(fromVersion: PeopleV1.self, toVersion: PeopleV2.self),
                                                                          .lightweight(fromVersion: PeopleV1.self, toVersion: PeopleV2.self)])
        #expect("\(twice!)" == "stages 0 and 1 both start from PeopleV1 (1.0.0); keep one stage per step")

        let fix = "[needs migration] Person.lastName added (required, no default) — fix: old records have no value for Person.lastName: "
            + "declare its default — `static var attributeDefaults: [String: Value] { [\"lastName\": \"\"] }` on Person (a Swift default such "
            + "as `= false` is not visible to Strata through Codable) — or make it optional, or rewrite Person in a custom stage with a "
            + "RecordTransform of Person (Docs/Migrations.md)"
        let unreachable = Self.validationError([PeopleV1.self, PeopleSplit.self])
        #expect("\(unreachable!)" == "PeopleSplit (2.0.0) is unreachable: no stage leads to it from PeopleV1 (1.0.0), and the change needs records rewritten: " + fix)

        let notLightweight = Self.validationError([PeopleV1.self, PeopleSplit.self], [.lightweight(fromVersion: PeopleV1.self, toVersion: PeopleSplit.self)])
        #expect("\(notLightweight!)" == "stage 0 from PeopleV1 (1.0.0) to PeopleSplit (2.0.0) is declared lightweight, but its change needs records rewritten: " + fix)

        // A custom stage's closures run before and after the change, not instead of it: without a
        // transform of Person the change cannot be applied, found here rather than at open.
        #expect(Self.validationError([PeopleV1.self, PeopleSplit.self],
                                     [.custom(fromVersion: PeopleV1.self, toVersion: PeopleSplit.self, willMigrate: nil, didMigrate: nil)])
                == .missingTransform(stage: 0, from: "PeopleV1 (1.0.0)", to: "PeopleSplit (2.0.0)", differences: [fix]))
        // With a transform of Person, the custom stage validates.
        #expect(Self.validationError([PeopleV1.self, PeopleSplit.self], [.custom(fromVersion: PeopleV1.self, toVersion: PeopleSplit.self, transforms: [
            .map(PeopleV1.Person.self, to: PeopleSplit.Person.self) { PeopleSplit.Person(fullName: $0.fullName, age: $0.age, lastName: "") },
        ])]) == nil)
        #expect(Self.validationError([PeopleV1.self, PeopleV2.self, PeopleV3.self]) == nil)
        try FullPlan.validate()

        // Opening with a current schema that is not the plan's last.
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        #expect(throws: MigrationPlanError.currentSchemaNotLast(current: "PeopleV2 (2.0.0)", last: "PeopleV3 (3.0.0)")) {
            try Store(at: folder, schema: PeopleV2.self, migrationPlan: FullPlan.self)
        }
    }

    @Test func lintFindsRedundantStagesAndProbableRenames() throws {
        Plan.schemaList = [PeopleV1.self, PeopleV2.self]
        Plan.stageList = [.lightweight(fromVersion: PeopleV1.self, toVersion: PeopleV2.self)]
        let redundant = try Plan.lint()
        #expect(redundant == [.redundantStage(stage: 0, from: "PeopleV1 (1.0.0)", to: "PeopleV2 (2.0.0)")])
        #expect("\(redundant[0])" == "stage 0 from PeopleV1 (1.0.0) to PeopleV2 (2.0.0) runs no code and its change is lightweight: the automatic path applies it; the stage can go")

        Plan.schemaList = [PeopleV1.self, PeopleLostRename.self]
        Plan.stageList = []
        let renames = try Plan.lint()
        #expect(renames == [.probableRename(schema: "PeopleLostRename (2.0.0)", entity: "Person", removed: "age", added: "years")])
        #expect("\(renames[0])" == "PeopleLostRename (2.0.0): Person.age is removed and Person.years of the same type is added; if this is a rename, declare originalName \"age\" on years (originalAttributeNames), or the stored values of age are dropped")
        // A rename through originalName is not reported.
        #expect(try AutomaticPlan.lint().isEmpty)
    }

    // MARK: Opening with a plan

    static func v1People(_ count: Int) -> [PeopleV1.Person] {
        (0..<count).map { PeopleV1.Person(fullName: "Last\($0 % 40), First\($0 % 25)", age: $0) }
    }

    static func createV1(at folder: String, count: Int, fileSystem: (any FileSystem)? = nil) throws {
        let store = try Store(at: folder, schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration(),
                              fileSystem: fileSystem ?? POSIXFileSystem())
        try store.write { transaction in for person in v1People(count) { try transaction.insert(person) } }
        try store.close()
    }

    @Test func automaticLightweightStepRewritesNoRecord() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.createV1(at: folder, count: 2_000)
        let before = folderBytes(folder)
        let store = try Store(at: folder, schema: PeopleV2.self, migrationPlan: AutomaticPlan.self)
        let people = try Context(store).fetch(FetchDescriptor<PeopleV2.Person>(sortBy: [RecordSort(\.years)])).map(\.record)
        #expect(people == Self.v1People(2_000).map { PeopleV2.Person(fullName: $0.fullName, years: $0.age, isFavorite: false) })
        try store.close()
        // The catalog, the root and a checkpoint: a few KiB, not the records' pages again.
        let grown = folderBytes(folder) - before
        #expect(grown < 24 * 1024, "opening wrote \(grown) bytes")
    }

    @Test func customStageSavesWhatItsClosuresLeaveUnsaved() throws {
        injectedStageFault = nil
        skipDeduplication = false
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.createV1(at: folder, count: 1_000)
        do {
            let store = try Store(at: folder, schema: PeopleV3.self, migrationPlan: FullPlan.self)
            let people = try Context(store).fetch(FetchDescriptor<PeopleV3.Person>()).map(\.record)
            #expect(people == Self.expectedV3(from: 1_000))
            try store.close()
        }
        // Migrated for good: the app's current version opens it without a plan.
        let store = try Store(at: folder, schema: PeopleV3.self)
        #expect(try Context(store).fetchCount(FetchDescriptor<PeopleV3.Person>()) == 200)
        try store.close()
    }

    /// What `FullPlan` makes of `v1People(count)`: the first (lowest age) record of each name,
    /// nicknamed when its age is even.
    static func expectedV3(from count: Int) -> [PeopleV3.Person] {
        var seen = Set<String>()
        return v1People(count).filter { seen.insert($0.fullName).inserted }
            .map { PeopleV3.Person(fullName: $0.fullName, years: $0.age, isFavorite: false, nickname: $0.age % 2 == 0 ? "n\($0.age)" : nil) }
    }

    @Test func failingStageLeavesEveryFileByteIdentical() throws {
        defer { injectedStageFault = nil; skipDeduplication = false }
        let cases: [(StageFault?, Bool, MigrationFailureReport.Category, String)] = [
            (.willMigrate, false, .willMigrate, "willMigrate"),
            (.didMigrate, false, .didMigrate, "didMigrate"),
            (nil, true, .schemaChange, "Person.fullName cannot become unique"),
        ]
        for (fault, skip, category, message) in cases {
            let fs = MemoryFileSystem()
            try Self.createV1(at: "/store", count: 300, fileSystem: fs)
            let before = fs.allFiles()
            injectedStageFault = fault
            skipDeduplication = skip
            do {
                _ = try Store(at: "/store", schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: Store.Configuration(), fileSystem: fs)
                Issue.record("the migration did not fail (\(category))")
            } catch StrataError.migrationFailed(let report) {
                #expect(report.category == category)
                #expect(report.storePath == "/store" && report.storedVersion == Schema.Version(1, 0, 0)
                        && report.targetVersion == Schema.Version(3, 0, 0))
                #expect(report.stageIndex == 1 && report.stageCount == 2)
                #expect(report.stageName == "custom PeopleV2 (2.0.0) → PeopleV3 (3.0.0)")
                #expect(report.underlyingError.contains(message), "\(report.underlyingError)")
                #expect(report.storeBytes > 0 && report.seconds >= 0)
                #expect("\(report)".contains("was left exactly as before the migration"))
            }
            #expect(fs.allFiles() == before, "files changed after a failing \(category)")
            // The old version is intact and still opens with the old app.
            let store = try Store(at: "/store", schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: fs)
            #expect(try Context(store).fetch(FetchDescriptor<PeopleV1.Person>(sortBy: [RecordSort(\.age)])).map(\.record) == Self.v1People(300))
            try store.close()
        }
    }

    @Test func storeIsNewerAndUnknownModelVersionChangeNothing() throws {
        let fs = MemoryFileSystem()
        try Self.createV1(at: "/store", count: 10, fileSystem: fs)
        let v2 = try Store(at: "/store", schema: PeopleV2.self, migrationPlan: AutomaticPlan.self, configuration: Store.Configuration(), fileSystem: fs)
        try v2.close()
        let files = fs.allFiles()
        #expect(throws: StrataError.storeIsNewer(stored: Schema.Version(2, 0, 0), current: Schema.Version(1, 0, 0))) {
            try Store(at: "/store", schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: fs)
        }
        #expect(fs.allFiles() == files)

        let stray = MemoryFileSystem()
        let store = try Store(at: "/stray", schema: PeopleStray.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: stray)
        try store.close()
        let strayFiles = stray.allFiles()
        do {
            _ = try Store(at: "/stray", schema: PeopleV3.self, migrationPlan: FullPlan.self, configuration: Store.Configuration(), fileSystem: stray)
            Issue.record("opened a store whose version the plan does not list")
        } catch StrataError.unknownModelVersion(let stored, let checksum) {
            #expect(stored == Schema.Version(1, 5, 0))
            #expect(checksum == "\(try PeopleStray.schema().checksum)")
        }
        #expect(stray.allFiles() == strayFiles)
    }

    @Test func crashAtEverySyncPointOfAMigrationRollsBackOrFinishes() throws {
        injectedStageFault = nil
        skipDeduplication = false
        let seed = SeededRandom.seed(default: 0x319)
        print("MigrationTests seed \(seed)")
        let count = 400
        var setupSyncs = 0
        func run(_ fs: MemoryFileSystem) -> Void {
            do {
                try Self.createV1(at: "/store", count: count, fileSystem: fs)
                setupSyncs = fs.counters.syncs
                let store = try Store(at: "/store", schema: PeopleV3.self, migrationPlan: FullPlan.self,
                                      configuration: Store.Configuration(), fileSystem: fs)
                try store.close()
            } catch {}
        }
        let reference = MemoryFileSystem()
        run(reference)
        let total = reference.counters.syncs
        let setup = setupSyncs
        #expect(total > setup + 3)
        var tested = 0
        for point in setup..<total {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point))
                let (fs, _) = MemoryFileSystem.runUntilPowerCut(atSync: point, mode: mode, using: &random, run)
                // The old app finds the old version untouched, or a store already migrated.
                do {
                    let old = try Store(at: "/store", schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: fs)
                    let people = try Context(old).fetch(FetchDescriptor<PeopleV1.Person>(sortBy: [RecordSort(\.age)])).map(\.record)
                    #expect(people == Self.v1People(count), "old version changed: sync point \(point), mode \(mode), seed \(seed)")
                    try old.close()
                } catch StrataError.storeIsNewer {}
                // The new app finishes the migration: the same data as an uninterrupted run.
                let store = try Store(at: "/store", schema: PeopleV3.self, migrationPlan: FullPlan.self,
                                      configuration: Store.Configuration(), fileSystem: fs)
                let people = try Context(store).fetch(FetchDescriptor<PeopleV3.Person>()).map(\.record)
                #expect(people == Self.expectedV3(from: count), "sync point \(point), mode \(mode), seed \(seed)")
                try store.close()
                tested += 1
            }
        }
        print("MigrationTests: \(tested) crash points")
        #expect(tested == 3 * (total - setup))
    }
}

/// The bytes of the files in `folder`.
func folderBytes(_ folder: String) -> Int {
    let fs = POSIXFileSystem()
    guard let names = try? fs.contentsOfDirectory(folder) else { return 0 }
    // The space reserve holds zeros only, made once by the first writable open
    // (Architecture.md, invariant 33): it is not what a store's data takes.
    return names.filter { $0 != "reserve" }.reduce(0) { total, name in
        guard let file = try? fs.openFile(folder + "/" + name, create: false) else { return total }
        defer { file.close() }
        return total + Int((try? file.size()) ?? 0)
    }
}

// MARK: Streaming transforms

/// From V1: `fullName` "Last, First" split into `lastName` and `firstName` (not lightweight:
/// required attributes without defaults), by a transform.
enum PeopleSplitNames: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var lastName: String
        var firstName: String
        var age: Int
    }
}


enum SplitPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleSplitNames.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleV1.self, toVersion: PeopleSplitNames.self, transforms: [
            .map(PeopleV1.Person.self, to: PeopleSplitNames.Person.self) { old in
                transformCalls += 1
                if old.age == failingAge { throw StageFault.willMigrate }
                return split(old)
            },
        ], batchSize: 64)]
    }

    static func split(_ old: PeopleV1.Person) -> PeopleSplitNames.Person {
        let parts = old.fullName.split(separator: ", ", maxSplits: 1).map(String.init)
        return PeopleSplitNames.Person(lastName: parts[0], firstName: parts.count > 1 ? parts[1] : "", age: old.age)
    }
}

// Moving data into a new entity: items' tag names become Tag records the items refer to.
enum ShopV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "Item" }
        var name: String
        var tagName: String
    }
}

enum ShopV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self, Tag.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "Item" }
        var name: String
        var tag: RecordID<Tag>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var name: String
    }
}

enum ShopPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ShopV1.self, ShopV2.self] }
    static var stages: [MigrationStage] {
        final class Tags { var ids: [String: RecordID<ShopV2.Tag>] = [:] }
        let tags = Tags()
        return [.custom(fromVersion: ShopV1.self, toVersion: ShopV2.self, transforms: [
            .map(ShopV1.Item.self, to: ShopV2.Item.self) { old, writer in
                let tag = try tags.ids[old.tagName] ?? writer.insert(ShopV2.Tag(name: old.tagName))
                tags.ids[old.tagName] = tag
                return ShopV2.Item(name: old.name, tag: tag)
            },
        ], batchSize: 100)]
    }
}

extension MigrationTests {
    @Test func splitStreamsEveryRecordInBatchesKeepingIdentifiers() throws {
        transformCalls = 0
        failingAge = nil
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.createV1(at: folder, count: 1_000)
        let store = try Store(at: folder, schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self)
        #expect(transformCalls == 1_000)
        let context = Context(store)
        let people = try context.fetch(FetchDescriptor<PeopleSplitNames.Person>(sortBy: [RecordSort(\.age)]))
        #expect(people.map(\.record) == Self.v1People(1_000).map(SplitPlan.split))
        #expect(people.map(\.id.rawValue) == Array(1...1_000))  // same identifiers as before
        #expect(people[0].record.lastName == "Last0" && people[0].record.firstName == "First0")
        // Predicates and new inserts work on the migrated records.
        #expect(try context.fetchCount(FetchDescriptor<PeopleSplitNames.Person>(predicate: #Predicate { $0.lastName == "Last7" })) == 25)
        let next = try context.insert(PeopleSplitNames.Person(lastName: "New", firstName: "One", age: 1))
        try context.save()
        #expect(next.rawValue == 1_001)
        try store.close()
        let reopened = try Store(at: folder, schema: PeopleSplitNames.self)
        #expect(try Context(reopened).fetchCount(FetchDescriptor<PeopleSplitNames.Person>()) == 1_001)
        try reopened.close()
    }

    @Test func aRejectedRecordFailsTheStageNamingItAndChangesNothing() throws {
        defer { failingAge = nil }
        failingAge = 700
        let fs = MemoryFileSystem()
        try Self.createV1(at: "/store", count: 1_000, fileSystem: fs)
        let before = fs.allFiles()
        do {
            _ = try Store(at: "/store", schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self, configuration: Store.Configuration(), fileSystem: fs)
            Issue.record("the migration did not fail")
        } catch StrataError.migrationFailed(let report) {
            #expect(report.category == .transform)
            #expect(report.recordID == "Person#701")
            #expect(report.stageName == "custom PeopleV1 (1.0.0) → PeopleSplitNames (2.0.0)")
            #expect(report.underlyingError.contains("willMigrate"))  // the injected StageFault's case name
        }
        #expect(fs.allFiles() == before)
    }

    @Test func aTransformMovesDataIntoANewEntity() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        do {
            let store = try Store(at: folder, schema: ShopV1.self)
            try store.write { transaction in
                for index in 0..<500 { try transaction.insert(ShopV1.Item(name: "item \(index)", tagName: "tag \(index % 7)")) }
            }
            try store.close()
        }
        let store = try Store(at: folder, schema: ShopV2.self, migrationPlan: ShopPlan.self)
        let context = Context(store)
        let tags = try context.fetch(FetchDescriptor<ShopV2.Tag>())
        #expect(tags.map(\.record.name).sorted() == (0..<7).map { "tag \($0)" })
        let items = try context.fetch(FetchDescriptor<ShopV2.Item>(sortBy: [RecordSort(\.name)]))
        #expect(items.count == 500)
        let tagNames = Dictionary(uniqueKeysWithValues: tags.map { ($0.id, $0.record.name) })
        for item in items {
            let index = Int(item.record.name.dropFirst(5)) ?? -1
            #expect(item.record.tag.flatMap { tagNames[$0] } == "tag \(index % 7)", "\(item.record.name)")
        }
        try store.close()
    }

    @Test func crashAtEverySyncPointOfAStreamingStageResumesFromTheLastBatch() throws {
        failingAge = nil
        let seed = SeededRandom.seed(default: 0x5_917)
        print("MigrationTests streaming seed \(seed)")
        let count = 300
        var setupSyncs = 0
        func run(_ fs: MemoryFileSystem) {
            do {
                try Self.createV1(at: "/store", count: count, fileSystem: fs)
                setupSyncs = fs.counters.syncs
                let store = try Store(at: "/store", schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self,
                                      configuration: Store.Configuration(), fileSystem: fs)
                try store.close()
            } catch {}
        }
        let reference = MemoryFileSystem()
        run(reference)
        let total = reference.counters.syncs, setup = setupSyncs
        let expected = Self.v1People(count).map(SplitPlan.split)
        var tested = 0, resumed = 0
        for point in setup..<total {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point))
                let (fs, _) = MemoryFileSystem.runUntilPowerCut(atSync: point, mode: mode, using: &random, run)
                transformCalls = 0
                let store = try Store(at: "/store", schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self,
                                      configuration: Store.Configuration(), fileSystem: fs)
                let people = try Context(store).fetch(FetchDescriptor<PeopleSplitNames.Person>(sortBy: [RecordSort(\.age)]))
                #expect(people.map(\.record) == expected, "sync point \(point), mode \(mode), seed \(seed)")
                #expect(people.map(\.id.rawValue) == Array(1...UInt64(count)), "identifiers, sync point \(point), mode \(mode)")
                #expect(transformCalls <= count)
                if transformCalls > 0 && transformCalls < count { resumed += 1 }
                try store.close()
                tested += 1
            }
        }
        print("MigrationTests streaming: \(tested) crash points, \(resumed) resumed after a durable batch")
        #expect(tested == 3 * (total - setup))
        #expect(resumed > 0)  // progress is durable per batch: a crash does not start over
    }
}

enum QuarantinePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleSplitNames.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleV1.self, toVersion: PeopleSplitNames.self, transforms: [
            .map(PeopleV1.Person.self, to: PeopleSplitNames.Person.self) { old in
                if old.age % 97 == 13 { throw StageFault.didMigrate }
                return SplitPlan.split(old)
            },
        ], batchSize: 100, rejectedRecords: .quarantine)]
    }
}

extension MigrationTests {
    @Test func rejectedRecordsAreQuarantinedListedAndReadable() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.createV1(at: folder, count: 1_000)
        let store = try Store(at: folder, schema: PeopleSplitNames.self, migrationPlan: QuarantinePlan.self)
        let rejectedAges = (0..<1_000).filter { $0 % 97 == 13 }
        let migrated = try Context(store).fetch(FetchDescriptor<PeopleSplitNames.Person>(sortBy: [RecordSort(\.age)])).map(\.record)
        #expect(migrated == Self.v1People(1_000).filter { $0.age % 97 != 13 }.map(SplitPlan.split))
        let quarantined = try store.quarantinedRecords()
        #expect(quarantined.map(\.id) == rejectedAges.map { UInt64($0 + 1) })
        #expect(quarantined.allSatisfy { $0.entity == "Person" && $0.stage == "custom PeopleV1 (1.0.0) → PeopleSplitNames (2.0.0)" })
        #expect(quarantined.allSatisfy { $0.reason == "didMigrate" })
        // Each is retrievable as the old version's type, exactly as it was.
        let old = try quarantined.map { try store.record($0, as: PeopleV1.Person.self) }
        #expect(old == rejectedAges.map { Self.v1People(1_000)[$0] })
        try store.close()
        // They survive reopening, until the app removes them.
        let reopened = try Store(at: folder, schema: PeopleSplitNames.self)
        #expect(try reopened.quarantinedRecords().count == rejectedAges.count)
        try reopened.removeQuarantinedRecords()
        #expect(try reopened.quarantinedRecords().isEmpty)
        try reopened.close()
    }
}

/// V2 → V3 with no stage: the unique constraint is checked by building its index.
enum UniqueOnlyPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleV2.self, PeopleV3.self] }
    static var stages: [MigrationStage] { [] }
}

extension MigrationTests {
    @Test func lightweightOnlyStepsCommitTogetherOrNotAtAll() throws {
        let fs = MemoryFileSystem()
        try Self.createV1(at: "/store", count: 300, fileSystem: fs)  // names repeat after 200
        let before = fs.allFiles()
        // V1 → V2 → V3 in one transaction; V3's unique fullName fails on duplicate names: nothing stays.
        do {
            _ = try Store(at: "/store", schema: PeopleV3.self, migrationPlan: UniqueOnlyPlan.self, configuration: Store.Configuration(), fileSystem: fs)
            Issue.record("a unique constraint the records break was accepted")
        } catch StrataError.migrationFailed(let report) {
            #expect(report.category == .schemaChange && report.stageIndex == 0 && report.stageCount == 2)
            #expect(report.underlyingError.contains("fullName"), "\(report.underlyingError)")
        }
        #expect(fs.allFiles() == before)
        // Without duplicates, both steps apply at once, in one commit.
        let clean = MemoryFileSystem()
        let store = try Store(at: "/store", schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: clean)
        try store.write { transaction in for index in 0..<50 { try transaction.insert(PeopleV1.Person(fullName: "Unique \(index)", age: index)) } }
        try store.close()
        // Opening a current store syncs what recovery syncs; migrating both steps adds one commit.
        let probe = try Store(at: "/store", schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: clean)
        try probe.close()
        let openSyncs = clean.counters.syncs
        _ = try Store(at: "/store", schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: clean).close()
        let syncsOfAnOpen = clean.counters.syncs - openSyncs
        let syncsBefore = clean.counters.syncs
        let migrated = try Store(at: "/store", schema: PeopleV3.self, migrationPlan: UniqueOnlyPlan.self, configuration: Store.Configuration(), fileSystem: clean)
        #expect(clean.counters.syncs - syncsBefore == syncsOfAnOpen + 1)  // one durable commit for both steps
        let people = try Context(migrated).fetch(FetchDescriptor<PeopleV3.Person>(sortBy: [RecordSort(\.years)])).map(\.record)
        #expect(people == (0..<50).map { PeopleV3.Person(fullName: "Unique \($0)", years: $0, isFavorite: false, nickname: nil) })
        try migrated.close()
        #expect(try Store.storedSchema(at: "/store", fileSystem: clean)?.version == Schema.Version(3, 0, 0))
    }
}

extension MigrationTests {
    /// The transactions a migration journaled: those authored `migration` after `token`.
    static func migrationHistory(_ store: Store, after token: HistoryToken) throws -> [HistoryTransaction] {
        try store.fetchHistory(HistoryDescriptor(after: token)).filter { $0.author == "migration" }
    }

    @Test func aLightweightMigrationIsOneJournaledTransactionWithoutRecordChanges() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.createV1(at: folder, count: 100)
        let store = try Store(at: folder, schema: PeopleV2.self, migrationPlan: AutomaticPlan.self)
        let history = try store.fetchHistory()
        #expect(history.count == 2)
        #expect(history[0].author == nil && history[0].changes.count == 100 && history[0].schemaVersion == nil)
        #expect(history[1].author == "migration")
        #expect(history[1].schemaVersion == Schema.Version(2, 0, 0))
        #expect(history[1].changes.isEmpty)
        // Filtered to an entity, a migration that changed none of its records is left out.
        #expect(try store.fetchHistory(HistoryDescriptor(after: nil, entities: [PeopleV2.Person.self])).count == 1)
        try store.close()
    }

    @Test func aCustomStageIsJournaledPerEntityNotPerRecord() throws {
        transformCalls = 0
        failingAge = nil
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.createV1(at: folder, count: 1_000)
        let store = try Store(at: folder, schema: PeopleSplitNames.self, migrationPlan: SplitPlan.self)
        let migration = try Self.migrationHistory(store, after: HistoryToken(rawValue: 1))
        #expect(migration.count == 1)
        #expect(migration.first?.schemaVersion == PeopleSplitNames.versionIdentifier)
        #expect(migration.first?.changes.map(\.kind) == [.migration])
        #expect(migration.first?.changes.first?.entityName == "Person")
        #expect(migration.first?.changes.first?.migratedRecords == HistoryChange.MigrationCounts(inserted: 0, updated: 1_000, deleted: 0))
        try store.close()

        // willMigrate's and didMigrate's changes are summarized too.
        injectedStageFault = nil
        skipDeduplication = false
        let full = try temporaryDirectory()
        defer { removeDirectory(full) }
        try Self.createV1(at: full, count: 1_000)  // 200 distinct names: willMigrate deletes 800 records
        let migrated = try Store(at: full, schema: PeopleV3.self, migrationPlan: FullPlan.self)
        let transactions = try Self.migrationHistory(migrated, after: HistoryToken(rawValue: 1))
        let counts = transactions.flatMap { $0.changes }.compactMap(\.migratedRecords)
        #expect(counts.contains(HistoryChange.MigrationCounts(inserted: 0, updated: 0, deleted: 800)))
        #expect(counts.contains(HistoryChange.MigrationCounts(inserted: 0, updated: 100, deleted: 0)))  // even years among the 200 kept
        #expect(transactions.allSatisfy { $0.changes.allSatisfy { $0.kind == .migration } })
        #expect(transactions.compactMap(\.schemaVersion) == [Schema.Version(2, 0, 0), Schema.Version(3, 0, 0)])
        try migrated.close()
    }
}
