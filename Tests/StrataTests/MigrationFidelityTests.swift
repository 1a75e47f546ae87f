#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

// Issue 19's defects, each as a user met it: values dropped by a declared lightweight stage,
// ids colliding in a hierarchy, inverses left empty, a dry run poisoning the real run, plans
// that validate and then fail, and errors that do not say the fix.

// MARK: A flat entity split into a parent and a sub-entity

enum GarageV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Vehicle.self] }
    struct Vehicle: PersistentRecord, Equatable {
        static var entityName: String { "Vehicle" }
        var make: String
        var year: Int
        var doorCount: Int?
    }
}

enum GarageV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Vehicle.self, Car.self] }
    struct Vehicle: PersistentRecord, Equatable {
        static var entityName: String { "Vehicle" }
        var make: String
        var year: Int
    }
    struct Car: PersistentRecord, Equatable {
        static var entityName: String { "Car" }
        static var parentRecordType: (any PersistentRecord.Type)? { Vehicle.self }
        var make: String
        var year: Int
        var doorCount: Int
    }
}

/// What the user wrote first: declared lightweight, every doorCount dropped.
enum GarageLightweightPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [GarageV1.self, GarageV2.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: GarageV1.self, toVersion: GarageV2.self)] }
}

/// The plan Docs/Migrations.md shows: one transform per target entity, ids kept.
enum GarageSplitPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [GarageV1.self, GarageV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: GarageV1.self, toVersion: GarageV2.self, transforms: [
            .map(GarageV1.Vehicle.self, to: GarageV2.Vehicle.self) { old in
                old.doorCount == nil ? GarageV2.Vehicle(make: old.make, year: old.year) : nil
            },
            .map(GarageV1.Vehicle.self, to: GarageV2.Car.self) { old in
                old.doorCount.map { GarageV2.Car(make: old.make, year: old.year, doorCount: $0) }
            },
        ], batchSize: 500)]
    }
}

/// Cars inserted through the writer while their old vehicles are dropped: new ids.
enum GarageWriterPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [GarageV1.self, GarageV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: GarageV1.self, toVersion: GarageV2.self, transforms: [
            .map(GarageV1.Vehicle.self, to: GarageV2.Vehicle.self) { old, writer in
                guard let doors = old.doorCount else { return GarageV2.Vehicle(make: old.make, year: old.year) }
                try writer.insert(GarageV2.Car(make: old.make, year: old.year, doorCount: doors))
                return nil
            },
        ], batchSize: 500)]
    }
}

// MARK: Moving values into a new entity with an inverse

enum ShelfV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "Item" }
        var name: String
        var tagNames: [String]
    }
}

enum ShelfV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self, Tag.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "Item" }
        static let relationshipRules = ["tags": RelationshipRule(inverse: "items")]
        var name: String
        var tags: [RecordID<Tag>]
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        static let relationshipRules = ["items": RelationshipRule(inverse: "tags")]
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique]] }
        var name: String
        var items: [RecordID<Item>]
    }
}

/// Insert or find: no cache of the app's.
enum ShelfPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ShelfV1.self, ShelfV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: ShelfV1.self, toVersion: ShelfV2.self, transforms: [
            .map(ShelfV1.Item.self, to: ShelfV2.Item.self) { old, writer in
                ShelfV2.Item(name: old.name, tags: try old.tagNames.map { try writer.insert(ShelfV2.Tag(name: $0, items: [])) })
            },
        ], batchSize: 200)]
    }
}

/// The old docs' way: a cache of the app's, which a dry run fills first.
nonisolated(unsafe) var shelfTagCache: [String: RecordID<ShelfV2.Tag>] = [:]

enum ShelfCachingPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ShelfV1.self, ShelfV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: ShelfV1.self, toVersion: ShelfV2.self, transforms: [
            .map(ShelfV1.Item.self, to: ShelfV2.Item.self) { old, writer in
                ShelfV2.Item(name: old.name, tags: try old.tagNames.map { name in
                    let tag = try shelfTagCache[name] ?? writer.insert(ShelfV2.Tag(name: name, items: []))
                    shelfTagCache[name] = tag
                    return tag
                })
            },
        ], batchSize: 200)]
    }
}

// MARK: Plans that must not validate

enum NamesV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var fullName: String
    }
}

/// The article's V2: required names, no declared defaults.
enum NamesV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var fullName: String
        var firstName: String
        var lastName: String
    }
}

/// The article's closures-only split.
enum NamesClosuresPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NamesV1.self, NamesV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: NamesV1.self, toVersion: NamesV2.self, willMigrate: nil, didMigrate: { _ in })]
    }
}

/// The article's V2 with its defaults declared: the closures-only split validates.
enum NamesV2Defaults: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeDefaultsByKeyPath: [PartialKeyPath<Person>: Value] { [\.firstName: "", \.lastName: ""] }
        var fullName: String
        var firstName: String
        var lastName: String
    }
}

enum NamesBackfillPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NamesV1.self, NamesV2Defaults.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: NamesV1.self, toVersion: NamesV2Defaults.self, willMigrate: nil, didMigrate: { context in
            for person in try context.fetch(FetchDescriptor<NamesV2Defaults.Person>()) {
                var record = person.record
                let parts = record.fullName.split(separator: ",", maxSplits: 1)
                record.lastName = parts.first.map(String.init) ?? ""
                record.firstName = parts.count > 1 ? String(parts[1].drop { $0 == " " }) : ""
                try context.update(person.id, to: record)
            }
        })]
    }
}

/// The ages the dry run's sample saw (the split's transform records them).
nonisolated(unsafe) var sampledAges: [Int] = []

enum SampledSplitPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleSplitNames.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleV1.self, toVersion: PeopleSplitNames.self, transforms: [
            .map(PeopleV1.Person.self, to: PeopleSplitNames.Person.self) { old in
                sampledAges.append(old.age)
                return SplitPlan.split(old)
            },
        ])]
    }
}

/// `fullName` renamed `name` without `originalName`.
enum NamesRenamed: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var name: String
    }
}

enum NamesRenamedPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NamesV1.self, NamesRenamed.self] }
    static var stages: [MigrationStage] { [] }
}

@Suite struct MigrationFidelityTests {
    /// Vehicles with irregular values: a third without doors, names with emoji and CJK.
    static func vehicles(_ count: Int, seed: UInt64) -> [GarageV1.Vehicle] {
        var random = SeededRandom(seed: seed)
        let makes = ["Škoda 🚗", "トヨタ", "Volvo", "Citroën, Paris", "", "Fiat 500 / Abarth"]
        return (0..<count).map { index in
            GarageV1.Vehicle(make: makes[Int(random.next() % UInt64(makes.count))] + " \(index)", year: 1950 + Int(random.next() % 75),
                             doorCount: random.next() % 10 < 3 ? nil : Int(2 + random.next() % 4))
        }
    }

    static func createGarage(at folder: String, _ vehicles: [GarageV1.Vehicle]) throws {
        let store = try Store(at: folder, schema: GarageV1.self)
        try store.write { transaction in for vehicle in vehicles { try transaction.insert(vehicle) } }
        try store.close()
    }

    @Test func lintSaysWhichValuesADeclaredLightweightStageDropsAndWhereTheyProbablyGo() throws {
        try GarageLightweightPlan.validate()
        let warnings = try GarageLightweightPlan.lint()
        #expect(warnings.contains(.dropsStoredValues(schema: "GarageV2 (2.0.0)", entity: "Vehicle", property: "doorCount",
                                                     probableMove: "Car.doorCount (Car is a sub-entity of Vehicle)")))
        #expect(warnings.contains { "\($0)".contains("one RecordTransform per target entity") })
        // The right plan reads Vehicle in its transforms: nothing is dropped silently.
        #expect(try GarageSplitPlan.lint().isEmpty)
    }

    @Test func aDryRunCountsTheValuesAStepDrops() throws {
        let seed = SeededRandom.seed(default: 19_01)
        print("seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let vehicles = Self.vehicles(1_000, seed: seed)
        try Self.createGarage(at: folder, vehicles)
        let estimate = try Store.dryRun(at: folder, schema: GarageV2.self, migrationPlan: GarageLightweightPlan.self)
        let dropped = estimate.droppedValues
        #expect(dropped.count == 1)
        #expect(dropped.first?.entity == "Vehicle" && dropped.first?.property == "doorCount")
        #expect(dropped.first?.values == UInt64(vehicles.filter { $0.doorCount != nil }.count))
        #expect(try Store.dryRun(at: folder, schema: GarageV2.self, migrationPlan: GarageSplitPlan.self).droppedValues.isEmpty)
    }

    @Test func oneTransformPerTargetEntityMovesRecordsIntoASubEntityKeepingEveryValueAndID() throws {
        let seed = SeededRandom.seed(default: 19_02)
        print("seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let vehicles = Self.vehicles(3_000, seed: seed)
        try Self.createGarage(at: folder, vehicles)
        let store = try Store(at: folder, schema: GarageV2.self, migrationPlan: GarageSplitPlan.self)
        defer { try? store.close() }
        let context = Context(store)
        let all = try context.fetch(FetchDescriptor<GarageV2.Vehicle>())
        #expect(all.map(\.id.rawValue).sorted() == Array(1...UInt64(vehicles.count)))
        for (index, vehicle) in vehicles.enumerated() {
            let id = UInt64(index + 1)
            if let doors = vehicle.doorCount {
                #expect(try context.record(for: RecordID<GarageV2.Car>(rawValue: id)) == GarageV2.Car(make: vehicle.make, year: vehicle.year, doorCount: doors))
            } else {
                #expect(try context.record(for: RecordID<GarageV2.Car>(rawValue: id)) == nil)
            }
            #expect(try context.record(for: RecordID<GarageV2.Vehicle>(rawValue: id)) == GarageV2.Vehicle(make: vehicle.make, year: vehicle.year))
        }
        #expect(try store.verify().isValid)
    }

    @Test func recordsAWriterInsertsIntoAHierarchyGetIDsNoRecordOfItHas() throws {
        let seed = SeededRandom.seed(default: 19_03)
        print("seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let vehicles = Self.vehicles(3_000, seed: seed)
        try Self.createGarage(at: folder, vehicles)
        let store = try Store(at: folder, schema: GarageV2.self, migrationPlan: GarageWriterPlan.self)
        defer { try? store.close() }
        let context = Context(store)
        let all = try context.fetch(FetchDescriptor<GarageV2.Vehicle>())
        #expect(all.count == vehicles.count)
        #expect(Set(all.map(\.id)).count == vehicles.count)  // no id twice in the hierarchy
        let cars = try context.fetch(FetchDescriptor<GarageV2.Car>())
        #expect(cars.count == vehicles.filter { $0.doorCount != nil }.count)
        #expect(cars.allSatisfy { $0.id.rawValue > UInt64(vehicles.count) })  // above every kept id
        // A lookup by id finds the record the id names.
        for match in all { #expect(try context.record(for: match.id) == match.record) }
        // Cars keep their values (in insertion order: the old vehicles' order).
        let expected = vehicles.compactMap { old in old.doorCount.map { GarageV2.Car(make: old.make, year: old.year, doorCount: $0) } }
        #expect(cars.sorted { $0.id < $1.id }.map(\.record) == expected)
        // New inserts continue above them.
        let next = try context.insert(GarageV2.Car(make: "new", year: 2026, doorCount: 3))
        try context.save()
        #expect(next.rawValue > cars.map(\.id.rawValue).max() ?? 0)
        let report = try store.verify()
        #expect(report.isValid, "\(report)")
    }

    @Test func verifyReportsIDsHeldTwiceInAHierarchyAndInversesMissingALink() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, schema: GarageV2.self)
        // Written through the raw API, which checks nothing of the graph: record 1 in both trees.
        try store.write { transaction in
            try transaction.insert(GarageV2.Vehicle(make: "a", year: 1))
            try transaction.insert(GarageV2.Car(make: "b", year: 2, doorCount: 4))
        }
        let clean = try store.verify()
        #expect(clean.isValid, "\(clean)")
        try store.insertUnchecked(entity: "Car", id: 1, values: ["make": "c", "year": 3, "doorCount": 2])
        let report = try store.verify()
        #expect(report.problems.contains { $0.what.contains("record id 1 is held by both Vehicle and Car") })
        try store.close()

        let shelf = try temporaryDirectory()
        defer { removeDirectory(shelf) }
        let tags = try Store(at: shelf, schema: ShelfV2.self)
        let context = Context(tags)
        let tag = try context.insert(ShelfV2.Tag(name: "t", items: []))
        try context.insert(ShelfV2.Item(name: "i", tags: [tag]))
        try context.save()
        #expect(try tags.verify().isValid)
        try tags.insertUnchecked(entity: "Item", id: 3, values: ["name": "j", "tags": .references([tag.rawValue])])
        #expect(try tags.verify().problems.contains { $0.what.contains("Item#3 refers to Tag#1 through tags, but that record's inverse does not list it") })
        try tags.close()
    }

    static func createShelf(at folder: String, count: Int, seed: UInt64) throws -> [ShelfV1.Item] {
        var random = SeededRandom(seed: seed)
        let names = ["red", "绿色", "blue 🔵", "a, b", "", "x"] + (0..<40).map { "tag \($0)" }
        let items = (0..<count).map { index in
            ShelfV1.Item(name: "item \(index)", tagNames: (0..<Int(random.next() % 4)).map { _ in names[Int(random.next() % UInt64(names.count))] })
        }
        let store = try Store(at: folder, schema: ShelfV1.self)
        try store.write { transaction in for item in items { try transaction.insert(item) } }
        try store.close()
        return items
    }

    /// Every item's tags are the tags of its old names, and every tag's items are exactly the
    /// items that refer to it.
    static func checkShelf(_ store: Store, _ items: [ShelfV1.Item]) throws {
        let context = Context(store)
        let tags = try context.fetch(FetchDescriptor<ShelfV2.Tag>())
        #expect(Set(tags.map(\.record.name)) == Set(items.flatMap(\.tagNames)))
        #expect(tags.count == Set(tags.map(\.record.name)).count)  // one tag per name
        let names = Dictionary(uniqueKeysWithValues: tags.map { ($0.id, $0.record.name) })
        let migrated = try context.fetch(FetchDescriptor<ShelfV2.Item>())
        #expect(migrated.count == items.count)
        var referrers: [RecordID<ShelfV2.Tag>: Set<RecordID<ShelfV2.Item>>] = [:]
        for (index, item) in migrated.enumerated() {
            var unique: [String] = []
            for name in items[index].tagNames where !unique.contains(name) { unique.append(name) }
            #expect(item.record.tags.map { names[$0] } == unique)
            for tag in item.record.tags { referrers[tag, default: []].insert(item.id) }
        }
        for tag in tags { #expect(Set(tag.record.items) == referrers[tag.id] ?? []) }
        #expect(try store.verify().isValid)
    }

    @Test func aTransformSettingOneSideOfARelationshipGetsTheInverseMaintained() throws {
        let seed = SeededRandom.seed(default: 19_04)
        print("seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let items = try Self.createShelf(at: folder, count: 2_000, seed: seed)
        let store = try Store(at: folder, schema: ShelfV2.self, migrationPlan: ShelfPlan.self)
        defer { try? store.close() }
        try Self.checkShelf(store, items)
    }

    @Test func anAppCacheFilledByADryRunDoesNotPoisonTheRealRun() throws {
        let seed = SeededRandom.seed(default: 19_05)
        print("seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let items = try Self.createShelf(at: folder, count: 1_000, seed: seed)
        shelfTagCache = [:]
        defer { shelfTagCache = [:] }
        let estimate = try Store.dryRun(at: folder, schema: ShelfV2.self, migrationPlan: ShelfCachingPlan.self)
        #expect(estimate.stages.first?.records == 1_000)
        #expect(!shelfTagCache.isEmpty)  // the dry run's ids, kept by the app
        let store = try Store(at: folder, schema: ShelfV2.self, migrationPlan: ShelfCachingPlan.self)
        defer { try? store.close() }
        try Self.checkShelf(store, items)
        let stored = Set(try Context(store).fetch(FetchDescriptor<ShelfV2.Tag>()).map(\.id.rawValue))
        #expect(stored.allSatisfy { $0 < 1 << 62 })
    }

    @Test func validateFindsACustomStageWhoseChangeNoTransformWritesAndSaysTheFix() throws {
        #expect(throws: MigrationPlanError.self) { try NamesClosuresPlan.validate() }
        do {
            try NamesClosuresPlan.validate()
        } catch {
            guard case .missingTransform(let stage, _, _, let differences) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(stage == 0)
            #expect(differences.count == 2)
            let message = "\(error)"
            #expect(message.contains("[\"firstName\": \"\"]"))
            #expect(message.contains("make it optional"))
            #expect(message.contains("RecordTransform of Person"))
        }
        // Opening with it fails the same way — validate() found what the device would.
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, schema: NamesV1.self)
        try store.close()
        #expect(throws: MigrationPlanError.self) { _ = try Store(at: folder, schema: NamesV2.self, migrationPlan: NamesClosuresPlan.self) }
    }

    @Test func theClosuresOnlySplitWithDeclaredDefaultsRunsAndIsEstimatedAsABackfill() throws {
        try NamesBackfillPlan.validate()
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let names = (0..<1_500).map { $0 % 5 == 0 ? "Solo\($0)" : "Last\($0), First \($0), Jr." }
        let old = try Store(at: folder, schema: NamesV1.self)
        try old.write { transaction in for name in names { try transaction.insert(NamesV1.Person(fullName: name)) } }
        try old.close()
        let estimate = try Store.dryRun(at: folder, schema: NamesV2Defaults.self, migrationPlan: NamesBackfillPlan.self)
        #expect(estimate.stages.map(\.records) == [1_500])
        #expect(estimate.stages.map(\.isMetadataOnly) == [false])
        #expect(estimate.stages[0].estimatedDuration > Duration.milliseconds(5))
        let store = try Store(at: folder, schema: NamesV2Defaults.self, migrationPlan: NamesBackfillPlan.self)
        defer { try? store.close() }
        let people = try Context(store).fetch(FetchDescriptor<NamesV2Defaults.Person>())
        #expect(people.count == names.count)
        for (person, name) in zip(people, names) {
            let parts = name.split(separator: ",", maxSplits: 1)
            #expect(person.record.fullName == name)
            #expect(person.record.lastName == String(parts[0]))
            #expect(person.record.firstName == (parts.count > 1 ? String(parts[1].drop { $0 == " " }) : ""))
        }
    }

    @Test func theDryRunSamplesTheWholeEntityNotItsFirstRecords() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 20_000)  // ages 0..<20,000, in id order
        sampledAges = []
        defer { sampledAges = [] }
        let estimate = try Store.dryRun(at: folder, schema: PeopleSplitNames.self, migrationPlan: SampledSplitPlan.self)
        #expect(estimate.stages.map(\.records) == [20_000])
        let ages = Set(sampledAges)
        #expect(ages.count == 2_000)  // the sample, each record's transform run three times
        // Runs spread over the entity: from its first tenth to its last 15 %, one in each eighth.
        #expect(ages.contains { $0 < 2_000 } && ages.contains { $0 >= 17_000 })
        #expect(Set(ages.map { $0 / 2_500 }).count == 8)
    }

    @Test func aRenameWithoutOriginalNameSaysTheRenameInTheErrorItself() throws {
        do {
            try NamesRenamedPlan.validate()
            Issue.record("the plan validated")
        } catch {
            let message = "\(error)"
            #expect(message.contains("[probable rename]"))
            #expect(message.contains("originalAttributeNames: [String: String] { [\"name\": \"fullName\"] }"))
        }
    }

    @Test func aRequiredAttributeAddedWithoutADeclaredDefaultNamesTheLineToAdd() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Store(at: folder, schema: NamesV1.self).close()
        struct Person: PersistentRecord {
            static var entityName: String { "Person" }
            var fullName: String
            var isFavorite: Bool = false
        }
        do {
            _ = try Store(at: folder, for: [Person.self])
            Issue.record("opened")
        } catch StrataError.schemaMismatch(_, _, let differences) {
            #expect(differences.count == 1)
            #expect(differences.first?.contains("Person.isFavorite added (required, no default)") == true)
            #expect(differences.first?.contains("static var attributeDefaults: [String: Value] { [\"isFavorite\": false] }") == true)
        }
    }
}
