#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

struct Person: PersistentRecord, Equatable {
    var fullName: String
    var age: Int
    var createdAt: Date
    var note: String?
    var tags: [String]
}

struct Pet: PersistentRecord, Equatable {
    var name: String
    var photo: Data
}

@Suite struct StoreTests {
    static func person(_ index: Int, note: String? = nil) -> Person {
        Person(fullName: "Last\(index % 50), First\(index)", age: index % 90, createdAt: Date(timeIntervalSince1970: Double(index) * 3600),
               note: note, tags: index % 3 == 0 ? ["a", "ü"] : [])
    }

    @Test func insertFetchUpdateDeleteSaveRollbackReopen() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var ids: [RecordID<Person>] = []
        do {
            let store = try Store(at: folder, for: [Person.self, Pet.self])
            let context = Context(store, author: "tests")
            for index in 0..<100 { ids.append(try context.insert(Self.person(index, note: index % 2 == 0 ? "even 🙂" : nil))) }
            #expect(context.hasChanges)
            // Unsaved changes are visible in this context only.
            #expect(try context.record(for: ids[5]) == Self.person(5))
            #expect(try Context(store).record(for: ids[5]) == nil)
            try context.save()
            #expect(!context.hasChanges)
            #expect(try Context(store).record(for: ids[5]) == Self.person(5))

            // Predicates, sorting, limit, offset.
            let adults = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 50 && $0.note != nil },
                                                                   sortBy: [RecordSort(\.age, order: .reverse), RecordSort(\.fullName)]))
            #expect(adults.count == 20)
            #expect(adults.first?.age == 88 && adults.last?.age == 50)
            #expect(zip(adults, adults.dropFirst()).allSatisfy { $0.age > $1.age || ($0.age == $1.age && $0.fullName <= $1.fullName) })
            let page = try context.fetch(FetchDescriptor<Person>(sortBy: [RecordSort(\.createdAt)], fetchLimit: 10, fetchOffset: 20))
            #expect(page.map(\.id) == Array(ids[20..<30]))
            #expect(try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.tags.isEmpty })) == 66)

            // Update, delete, delete by predicate, rollback.
            var changed = Self.person(7)
            changed.fullName = "Renamed"
            try context.update(ids[7], to: changed)
            try context.delete(ids[8])
            #expect(try context.delete(Person.self, where: #Predicate { $0.age < 5 }) == 10)  // ages 0…4 at indices 0…4 and 90…94
            try context.save()
            #expect(try context.record(for: ids[7])?.fullName == "Renamed")
            #expect(try context.record(for: ids[8]) == nil)
            #expect(try context.fetchCount(FetchDescriptor<Person>()) == 89)
            try context.delete(ids[9])
            _ = try context.insert(Self.person(1000))
            context.rollback()
            #expect(try context.fetchCount(FetchDescriptor<Person>()) == 89)
            #expect(throws: StrataError.recordNotFound(ids[8].description)) { try context.update(ids[8], to: Self.person(8)) }

            // Large values go to overflow pages.
            let photo = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let petID = try context.insert(Pet(name: "Rex", photo: photo))
            try context.save()
            #expect(try Context(store).record(for: petID)?.photo == photo)
            try store.close()
        }
        let store = try Store(at: folder, for: [Person.self, Pet.self])
        let context = Context(store)
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 89)
        #expect(try context.record(for: ids[7])?.fullName == "Renamed")
        // Identifiers are never reused, even after deletes.
        let next = try context.insert(Self.person(2000))
        #expect(next.rawValue == 101)
        try store.close()
    }

    @Test func aSchemaNeedingAMigrationIsRefused() throws {
        struct PersonV2: PersistentRecord {
            static var entityName: String { "Person" }
            var fullName: String
            var age: Double  // was Int
            var createdAt: Date
            var note: String?
            var tags: [String]
        }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Store(at: folder, for: [Person.self]).close()
        do {
            _ = try Store(at: folder, for: [PersonV2.self], version: Schema.Version(2, 0, 0))
            Issue.record("an incompatible schema was accepted")
        } catch StrataError.schemaMismatch(let stored, let current, let differences) {
            #expect(stored == "1.0.0" && current == "2.0.0")
            #expect(differences == ["[needs migration] Person.age changed type from int to double — fix: stored values do not read as the "
                + "new type: rewrite Person in a custom stage with a RecordTransform of Person (Docs/Migrations.md)"])
        }
        // Refused without a trace: the old schema still opens.
        try Store(at: folder, for: [Person.self]).close()
    }
}

@Suite struct StoreWriteTests {
    struct Abort: Error {}

    @Test func bulkWritesAreAtomicAndVisibleAfterCommit() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [Person.self])
        let ids = try store.write { transaction in
            try (0..<5_000).map { try transaction.insert(StoreTests.person($0)) }
        }
        #expect(ids.count == 5_000 && ids.first?.rawValue == 1)
        let context = Context(store)
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 5_000)
        // A throwing body leaves nothing behind, and readers never saw its writes.
        #expect(throws: Abort.self) {
            try store.write { transaction in
                try transaction.delete(ids[0])
                try transaction.update(ids[1], to: StoreTests.person(-1))
                #expect(try transaction.record(for: ids[1]) == StoreTests.person(-1))
                #expect(try context.record(for: ids[1]) == StoreTests.person(1))
                throw Abort()
            }
        }
        #expect(try context.record(for: ids[0]) == StoreTests.person(0))
        #expect(try context.record(for: ids[1]) == StoreTests.person(1))
        // Contexts and bulk writes share the identifier sequence.
        let next = try context.insert(StoreTests.person(9))
        try context.save()
        #expect(next.rawValue == 5_001)
        try store.close()
    }

    /// Bulk inserts take ids from blocks reserved from the store's counter: consecutive within
    /// a write, never shared with a context allocating meanwhile, handed back when unused, and
    /// durable — an id a committed write used is not handed out again after reopening, even
    /// when its record was deleted.
    @Test func bulkInsertIdentifiersAreUniqueConsecutiveAndDurable() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var contextID: RecordID<Person>?
        var highest: UInt64 = 0
        do {
            let store = try Store(at: folder, for: [Person.self])
            let context = Context(store)
            let ids = try store.write { transaction in
                var ids = try (0..<10).map { try transaction.insert(StoreTests.person($0)) }
                // A context takes an id while the write holds a reserved block.
                contextID = try context.insert(StoreTests.person(100))
                ids += try (10..<3_000).map { try transaction.insert(StoreTests.person($0)) }
                #expect(try transaction.record(for: ids[2_999]) == StoreTests.person(2_999))
                try transaction.delete(ids[2_999])
                return ids
            }
            #expect(ids.map(\.rawValue)[..<10] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
            let all = Set(ids.map(\.rawValue) + [try #require(contextID).rawValue])
            #expect(all.count == 3_001, "an id was handed out twice")
            highest = try #require(all.max())
            try context.save()
            #expect(try Context(store).fetchCount(FetchDescriptor<Person>()) == 3_000)
            try store.close()
        }
        let store = try Store(at: folder, for: [Person.self])
        let next = try store.write { try $0.insert(StoreTests.person(7)) }
        #expect(next.rawValue == highest + 1, "id \(next.rawValue) after \(highest)")
        try store.close()
    }
}

@Suite struct StoreReadTests {
    /// Every read of one `Store.read` sees the moment it began: commits made meanwhile (here,
    /// between two reads of the body) are invisible to it and visible to the next one.
    @Test func readTransactionsSeeOneMoment() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [Person.self])
        let ids = try store.write { transaction in try (0..<200).map { try transaction.insert(StoreTests.person($0)) } }
        let adults = FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 18 })
        let before = try Context(store).fetchCount(adults)
        try store.read { reader in
            #expect(try reader.record(for: ids[7]) == StoreTests.person(7))
            // Another writer commits while the read transaction is open.
            try store.write { transaction in
                try transaction.update(ids[7], to: StoreTests.person(1_000))
                try transaction.delete(ids[8])
                for index in 200..<250 { try transaction.insert(StoreTests.person(index)) }
            }
            #expect(try reader.record(for: ids[7]) == StoreTests.person(7))
            #expect(try reader.record(for: ids[8]) == StoreTests.person(8))
            #expect(try reader.fetchCount(adults) == before)
            #expect(try reader.fetch(FetchDescriptor<Person>()).count == 200)
            #expect(try reader.record(for: RecordID<Person>(rawValue: 201)) == nil)
        }
        try store.read { reader throws in
            #expect(try reader.record(for: ids[7]) == StoreTests.person(1_000))
            #expect(try reader.record(for: ids[8]) == nil)
            #expect(try reader.fetch(FetchDescriptor<Person>()).count == 249)
        }
        try store.close()
    }

    /// A read transaction finds records of sub-entities through the parent type, and reading
    /// through one type after another gives each type's answer.
    @Test func readTransactionsReadThroughEveryTypeOfAHierarchy() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: graphTypes)
        let (rex, tom, kit) = try store.write { transaction in
            (try transaction.insert(Dog(name: "Rex", age: 3, zoo: nil, breed: "Collie")),
             try transaction.insert(Cat(name: "Tom", age: 5, zoo: nil, isIndoor: true)),
             try transaction.insert(Puppy(name: "Kit", age: 1, zoo: nil, breed: "Pug", toy: "ball")))
        }
        try store.read { reader throws in
            for _ in 0..<2 {
                #expect(try reader.record(for: RecordID<Animal>(rawValue: rex.rawValue))?.name == "Rex")
                #expect(try reader.record(for: rex)?.breed == "Collie")
                #expect(try reader.record(for: RecordID<Animal>(rawValue: tom.rawValue))?.name == "Tom")
                #expect(try reader.record(for: RecordID<Dog>(rawValue: tom.rawValue)) == nil, "a cat is no dog")
                #expect(try reader.record(for: RecordID<Dog>(rawValue: kit.rawValue))?.name == "Kit")
                #expect(try reader.record(for: kit)?.toy == "ball")
                #expect(try reader.record(for: tom)?.isIndoor == true)
            }
            #expect(try reader.fetchCount(FetchDescriptor<Animal>()) == 3)
        }
        try store.close()
    }

    /// `releaseMemory()` empties the page cache and reports its size; reads refill it and
    /// return the same records.
    @Test func releasingMemoryEmptiesTheCacheAndLosesNothing() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [Person.self])
        let ids = try store.write { transaction in try (0..<3_000).map { try transaction.insert(StoreTests.person($0)) } }
        func readAll() throws {
            try store.read { reader throws in
                for (index, id) in ids.enumerated() where index % 7 == 0 {
                    #expect(try reader.record(for: id) == StoreTests.person(index))
                }
            }
        }
        try readAll()
        try readAll()  // second misses admit leaves
        let cached = store.cachedBytes
        #expect(cached > 0)
        #expect(store.releaseMemory() == cached)
        #expect(store.cachedBytes == 0)
        try readAll()
        try store.close()
    }

    @MainActor @Test func asyncReadRunsOffTheMainActor() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [Person.self])
        let id = try await store.write { try $0.insert(StoreTests.person(3)) }
        let record = try await store.read { reader in try reader.record(for: id) }
        #expect(record == StoreTests.person(3))
        try store.close()
    }
}
