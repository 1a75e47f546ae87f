#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

// The SwiftData article's five migrations, written the way Docs/Migrations.md tells a SwiftData
// user to write them, run on irregular data — a third of the optionals nil, names without a
// comma or with several, emoji and CJK, two values of 5 MB — and every value checked.

enum SeedV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Item.self, Vehicle.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        var fullName: String
        var createdAt: Date
        var note: String?
    }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "Item" }
        var name: String
        var tagName: String?
    }
    struct Vehicle: PersistentRecord, Equatable {
        static var entityName: String { "Vehicle" }
        var make: String
        var doorCount: Int?
    }
}

/// 1. Lightweight: `isFavorite` added, its default declared (the Swift `= false` is not seen).
enum SeedV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, SeedV1.Item.self, SeedV1.Vehicle.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeDefaults: [String: Value] { ["isFavorite": false] }
        var fullName: String
        var createdAt: Date
        var note: String?
        var isFavorite: Bool = false
    }
}

/// 2. Custom: `fullName` split into `firstName` and `lastName` by a transform.
/// 3. Custom: a derived field, `noteLength`, backfilled by didMigrate (declared default 0).
/// 4. Custom: items' tag names moved into a new entity, `Tag`, with an inverse.
/// 5. Custom: vehicles with doors moved into a new sub-entity, `Car`.
enum SeedV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Item.self, Tag.self, Vehicle.self, Car.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeDefaults: [String: Value] { ["isFavorite": false, "noteLength": 0] }
        var firstName: String
        var lastName: String
        var createdAt: Date
        var note: String?
        var isFavorite: Bool
        var noteLength: Int
    }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "Item" }
        static let relationshipRules = ["tag": RelationshipRule(inverse: "items")]
        var name: String
        var tag: RecordID<Tag>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique]] }
        static let relationshipRules = ["items": RelationshipRule(inverse: "tag")]
        var name: String
        var items: [RecordID<Item>]
    }
    struct Vehicle: PersistentRecord, Equatable {
        static var entityName: String { "Vehicle" }
        var make: String
    }
    struct Car: PersistentRecord, Equatable {
        static var entityName: String { "Car" }
        static var parentRecordType: (any PersistentRecord.Type)? { Vehicle.self }
        var make: String
        var doorCount: Int
    }
}

enum SeedPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [SeedV1.self, SeedV2.self, SeedV3.self] }
    static var stages: [MigrationStage] {
        // V1 → V2 needs no stage: a lightweight change is applied on its own (lint() would call a
        // declared `.lightweight` stage redundant).
        [
            .custom(fromVersion: SeedV2.self, toVersion: SeedV3.self, transforms: [
                .mapConcurrently(SeedV2.Person.self, to: SeedV3.Person.self) { old in
                    let (first, last) = SeedScenarioTests.split(old.fullName)
                    return SeedV3.Person(firstName: first, lastName: last, createdAt: old.createdAt, note: old.note,
                                         isFavorite: old.isFavorite, noteLength: 0)
                },
                .map(SeedV1.Item.self, to: SeedV3.Item.self) { old, writer in
                    SeedV3.Item(name: old.name, tag: try old.tagName.map { try writer.insert(SeedV3.Tag(name: $0, items: [])) })
                },
                .map(SeedV1.Vehicle.self, to: SeedV3.Vehicle.self) { old in old.doorCount == nil ? SeedV3.Vehicle(make: old.make) : nil },
                .map(SeedV1.Vehicle.self, to: SeedV3.Car.self) { old in old.doorCount.map { SeedV3.Car(make: old.make, doorCount: $0) } },
            ], batchSize: 700, didMigrate: { context in
                for person in try context.fetch(FetchDescriptor<SeedV3.Person>()) {
                    var record = person.record
                    record.noteLength = record.note?.count ?? 0
                    try context.update(person.id, to: record)
                }
                try context.save()
            }),
        ]
    }
}

@Suite struct SeedScenarioTests {
    /// "Last, First" → (first, last): the last name before the first comma, the rest after it;
    /// a name without a comma is all last name.
    static func split(_ fullName: String) -> (first: String, last: String) {
        guard let comma = fullName.firstIndex(of: ",") else { return ("", fullName) }
        let first = fullName[fullName.index(after: comma)...].drop { $0 == " " }
        return (String(first), String(fullName[..<comma]))
    }

    struct Data {
        var people: [SeedV1.Person] = []
        var items: [SeedV1.Item] = []
        var vehicles: [SeedV1.Vehicle] = []
    }

    static func irregular(seed: UInt64, people: Int) -> Data {
        var random = SeededRandom(seed: seed)
        let names = ["Nguyễn, Văn An", "王, 小明", "O'Brien,Sean", "Smith, John, Jr.", "Cher", "", "🦊 Fox, 🐻 Bear", "Müller, Jürgen  ",
                     ", leading", "trailing,", "Ødegård, Åse"]
        var data = Data()
        for index in 0..<people {
            let note: String?
            switch random.next() % 10 {
            case 0, 1, 2: note = nil
            default: note = index == 17 || index == people - 3 ? String(repeating: "大", count: 5 << 20 / 3) : "note \(index) ✓"
            }
            data.people.append(SeedV1.Person(fullName: names[Int(random.next() % UInt64(names.count))] + (index % 7 == 0 ? "" : " \(index)"),
                                             createdAt: Date(timeIntervalSinceReferenceDate: Double(random.next() % 1_000_000_000) / 7),
                                             note: note))
        }
        let tags = ["swift", "データ", "", "a, b", "🏷"]
        for index in 0..<(people / 2) {
            data.items.append(SeedV1.Item(name: "item \(index)", tagName: random.next() % 10 < 3 ? nil : tags[Int(random.next() % UInt64(tags.count))]))
        }
        for index in 0..<(people / 2) {
            data.vehicles.append(SeedV1.Vehicle(make: "make \(index) 🚙", doorCount: random.next() % 10 < 3 ? nil : Int(random.next() % 5)))
        }
        return data
    }

    @Test func theArticlesFiveMigrationsKeepEveryValue() throws {
        let seed = SeededRandom.seed(default: 2026_12_01)
        print("seed \(seed)")
        let data = Self.irregular(seed: seed, people: 3_000)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        do {
            let store = try Store(at: folder, schema: SeedV1.self)
            try store.write { transaction in
                for person in data.people { try transaction.insert(person) }
                for item in data.items { try transaction.insert(item) }
                for vehicle in data.vehicles { try transaction.insert(vehicle) }
            }
            try store.close()
        }
        try SeedPlan.validate()
        // The plan drops nothing silently: every removed attribute is read by a transform.
        let warnings = try SeedPlan.lint()
        #expect(warnings.isEmpty, "\(warnings)")
        let estimate = try Store.dryRun(at: folder, schema: SeedV3.self, migrationPlan: SeedPlan.self)
        #expect(estimate.droppedValues.isEmpty)
        #expect(estimate.stages.map(\.records) == [0, UInt64(data.people.count + data.items.count + 2 * data.vehicles.count)])

        let store = try Store(at: folder, schema: SeedV3.self, migrationPlan: SeedPlan.self)
        defer { try? store.close() }
        let context = Context(store)

        // 1 and 2 and 3: every person, in id order, with every value.
        let people = try context.fetch(FetchDescriptor<SeedV3.Person>())
        #expect(people.count == data.people.count)
        for (index, person) in people.enumerated() {
            let old = data.people[index]
            let (first, last) = Self.split(old.fullName)
            #expect(person.id.rawValue == UInt64(index + 1))
            #expect(person.record == SeedV3.Person(firstName: first, lastName: last, createdAt: old.createdAt, note: old.note,
                                                   isFavorite: false, noteLength: old.note?.count ?? 0))
        }
        // 4: one tag per distinct name, each listing exactly the items that refer to it.
        let tags = try context.fetch(FetchDescriptor<SeedV3.Tag>())
        #expect(Set(tags.map(\.record.name)) == Set(data.items.compactMap(\.tagName)))
        #expect(tags.count == Set(tags.map(\.record.name)).count)
        let tagNames = Dictionary(uniqueKeysWithValues: tags.map { ($0.id, $0.record.name) })
        let items = try context.fetch(FetchDescriptor<SeedV3.Item>())
        #expect(items.count == data.items.count)
        for (index, item) in items.enumerated() {
            #expect(item.record.name == data.items[index].name)
            #expect(item.record.tag.flatMap { tagNames[$0] } == data.items[index].tagName)
        }
        for tag in tags {
            #expect(Set(tag.record.items) == Set(items.filter { $0.record.tag == tag.id }.map(\.id)))
        }
        // 5: vehicles and cars, one id space, every value.
        let vehicles = try context.fetch(FetchDescriptor<SeedV3.Vehicle>(sortBy: [RecordSort(\.make)]))
        #expect(vehicles.count == data.vehicles.count)
        #expect(Set(vehicles.map(\.id)).count == vehicles.count)
        for old in data.vehicles.enumerated() {
            let id = UInt64(old.offset + 1)
            if let doors = old.element.doorCount {
                #expect(try context.record(for: RecordID<SeedV3.Car>(rawValue: id)) == SeedV3.Car(make: old.element.make, doorCount: doors))
            } else {
                #expect(try context.record(for: RecordID<SeedV3.Vehicle>(rawValue: id)) == SeedV3.Vehicle(make: old.element.make))
                #expect(try context.record(for: RecordID<SeedV3.Car>(rawValue: id)) == nil)
            }
        }
        let report = try store.verify()
        #expect(report.isValid, "\(report)")
    }
}
