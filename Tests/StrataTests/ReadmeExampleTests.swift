#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@_spi(Engine) import Strata
import StrataTestSupport

/// The README's "Getting started" code, verbatim except for the folder, with its claims checked.
@Suite struct ReadmeExampleTests {
    struct Person: PersistentRecord {
        var fullName: String
        var createdAt: Date
        var note: String?
        static let attributeOptions: [String: Attribute.Options] = ["fullName": [.unique]]
    }

    @Test func theGettingStartedExampleWorks() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }

        let store = try Store(at: folder + "/people", for: [Person.self])
        let context = Context(store, author: "importer")
        let ada = try context.insert(Person(fullName: "Lovelace, Ada", createdAt: .now, note: nil))
        try context.insert(Person(fullName: "Hopper, Grace", createdAt: .now, note: "COBOL"))
        try context.save()
        try context.insert(Person(fullName: "Hopper, Grace", createdAt: .now, note: "Navy"))

        let noted = try context.fetch(FetchDescriptor<Person>(
            predicate: #Predicate { $0.note != nil },
            sortBy: [RecordSort(\.fullName)]))
        #expect(noted.map(\.note) == ["Navy"])
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 2)

        var updated = try #require(try context.record(for: ada))
        updated.note = "first programmer"
        try context.update(ada, to: updated)
        try context.save()
        try store.close()

        let reopened = try Store(at: folder + "/people", for: [Person.self])
        #expect(try Context(reopened).record(for: ada)?.note == "first programmer")
        try reopened.close()
    }

    struct Owner: PersistentRecord {
        var name: String
        var pets: [RecordID<Pet>] = []
        static let relationshipRules = ["pets": RelationshipRule(inverse: "owner", deleteRule: .cascade)]
    }
    struct Pet: PersistentRecord {
        var name: String
        var owner: RecordID<Owner>?
        static let relationshipRules = ["owner": RelationshipRule(inverse: "pets")]
    }
    struct Dog: PersistentRecord {
        var name: String
        var owner: RecordID<Owner>?
        var breed: String
        static var parentRecordType: (any PersistentRecord.Type)? { Pet.self }
    }

    /// The README's relationships example.
    @Test func theRelationshipsExampleWorks() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let shelter = try Store(at: folder + "/shelter", for: [Owner.self, Dog.self])
        let work = Context(shelter)
        let sam = try work.insert(Owner(name: "Sam"))
        try work.insert(Dog(name: "Rex", owner: sam, breed: "Collie"))
        try work.save()
        #expect(try work.record(for: sam)?.pets.count == 1)
        #expect(try work.fetch(FetchDescriptor<Pet>()).map(\.name) == ["Rex"])
        try work.delete(sam)
        try work.save()
        #expect(try work.fetchCount(FetchDescriptor<Pet>()) == 0)
        try shelter.close()
    }

    /// The engine-level page store the benchmarks use.
    @Test func theEnginePageStoreWorks() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try PageStore.open(at: folder + "/example-store")
        let id = try store.write { transaction in
            let id = try transaction.allocatePageID()
            try transaction.write(pageID: id, bytes: Array("Last123, First456".utf8))
            return id
        }
        try store.write(durability: .relaxed) { transaction in
            try transaction.write(pageID: id, bytes: Array("Last124, First457".utf8))
        }
        #expect(try store.read(pageID: id) == Array("Last124, First457".utf8))
        do {
            try store.write { transaction in
                try transaction.write(pageID: id, bytes: [0])
                throw CancellationError()
            }
            Issue.record("the throwing body was committed")
        } catch {
            #expect(error is CancellationError)
        }
        try store.close()
        let reopened = try PageStore.open(at: folder + "/example-store")
        #expect(reopened.recoveryReport.replayedBytes == 0)
        #expect(try reopened.read(pageID: id) == Array("Last124, First457".utf8))
        try reopened.close()
    }
}
