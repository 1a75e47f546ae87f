#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// Entity inheritance: fetching a parent type returns its sub-entities' records too, read as
/// the parent; record ids are unique across a hierarchy.
@Suite struct InheritanceTests {
    /// Inserts, in this order: Animal "Generic" (age 9), Dog "Rex" (4), Cat "Tom" (7),
    /// Puppy "Bit" (1), Dog "Ace" (12), Cat "Kit" (2). Returns their ids as `Animal` ids.
    @discardableResult
    func insertMenagerie(_ context: Context) throws -> [RecordID<Animal>] {
        var ids: [UInt64] = []
        ids.append(try context.insert(Animal(name: "Generic", age: 9)).rawValue)
        ids.append(try context.insert(Dog(name: "Rex", age: 4, breed: "Collie")).rawValue)
        ids.append(try context.insert(Cat(name: "Tom", age: 7, isIndoor: true)).rawValue)
        ids.append(try context.insert(Puppy(name: "Bit", age: 1, breed: "Pug", toy: "ball")).rawValue)
        ids.append(try context.insert(Dog(name: "Ace", age: 12, breed: "Husky")).rawValue)
        ids.append(try context.insert(Cat(name: "Kit", age: 2, isIndoor: false)).rawValue)
        return ids.map { RecordID(rawValue: $0) }
    }

    @Test func idsAreUniqueAcrossTheHierarchyAndParentFetchesIncludeSubEntities() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        let context = Context(store)
        let ids = try insertMenagerie(context)
        #expect(ids.map(\.rawValue) == [1, 2, 3, 4, 5, 6])  // one counter for the hierarchy
        // Unsaved sub-entity records are included too.
        #expect(try context.fetch(FetchDescriptor<Animal>()).map(\.name) == ["Generic", "Rex", "Tom", "Bit", "Ace", "Kit"])
        try context.save()
        let animals = try Context(store).fetch(FetchDescriptor<Animal>())
        #expect(animals.map(\.id) == ids)
        #expect(animals[1].record == Animal(name: "Rex", age: 4))  // read as the parent
        #expect(try context.fetch(FetchDescriptor<Dog>()).map(\.name) == ["Rex", "Bit", "Ace"])  // a Puppy is a Dog
        #expect(try context.fetch(FetchDescriptor<Cat>()).map(\.isIndoor) == [true, false])
        #expect(try context.fetchCount(FetchDescriptor<Animal>()) == 6)
        #expect(try context.fetchCount(FetchDescriptor<Puppy>()) == 1)
    }

    @Test func predicatesSortingLimitAndOffsetApplyAcrossSubEntities() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        let context = Context(store)
        try insertMenagerie(context)
        try context.save()
        let young = try context.fetch(FetchDescriptor<Animal>(predicate: #Predicate { $0.age < 8 }, sortBy: [RecordSort(\.age)]))
        #expect(young.map(\.name) == ["Bit", "Kit", "Rex", "Tom"])
        let page = try context.fetch(FetchDescriptor<Animal>(sortBy: [RecordSort(\.name, order: .reverse)], fetchLimit: 2, fetchOffset: 1))
        #expect(page.map(\.name) == ["Rex", "Kit"])
        // Without a sort order: id order across the trees, limit and offset too.
        let limited = try context.fetch(FetchDescriptor<Animal>(fetchLimit: 3, fetchOffset: 2))
        #expect(limited.map(\.id.rawValue) == [3, 4, 5])
        #expect(try context.fetch(FetchDescriptor<Dog>(predicate: #Predicate { $0.breed.starts(with: "P") })).map(\.name) == ["Bit"])
    }

    @Test func parentIdsReadUpdateAndDeleteSubEntityRecords() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var ids: [RecordID<Animal>] = []
        do {
            let store = try Store(at: folder, for: graphTypes)
            let context = Context(store)
            ids = try insertMenagerie(context)
            try context.save()
            #expect(try context.record(for: ids[3]) == Animal(name: "Bit", age: 1))
            #expect(try context.record(for: RecordID<Dog>(rawValue: ids[3].rawValue))?.breed == "Pug")
            #expect(try context.record(for: RecordID<Cat>(rawValue: ids[3].rawValue)) == nil)  // not a Cat

            // Updating through the parent keeps the sub-entity's own values.
            try context.update(ids[3], to: Animal(name: "Bit", age: 2))
            #expect(try context.record(for: RecordID<Puppy>(rawValue: ids[3].rawValue)) == Puppy(name: "Bit", age: 2, breed: "Pug", toy: "ball"))
            try context.save()
            // Delete by id and by predicate through the parent.
            try context.delete(ids[2])
            #expect(try context.delete(Animal.self, where: #Predicate { $0.age > 10 }) == 1)  // Ace
            try context.save()
            try store.close()
        }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        let context = Context(store)
        #expect(try context.fetch(FetchDescriptor<Animal>()).map(\.name) == ["Generic", "Rex", "Bit", "Kit"])
        #expect(try context.record(for: RecordID<Puppy>(rawValue: ids[3].rawValue))?.age == 2)
        // After reopening, new ids still come from the hierarchy's one counter.
        let next = try context.insert(Cat(name: "New", age: 1, isIndoor: true))
        let nextDog = try context.insert(Dog(name: "New", age: 1, breed: "Mutt"))
        #expect(next.rawValue == 7 && nextDog.rawValue == 8)
    }

    @Test func abstractEntitiesCannotBeInsertedButAreFetched() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        let context = Context(store)
        #expect(throws: StrataError.abstractEntity("Shape")) { try context.insert(Shape(area: 1)) }
        #expect(throws: StrataError.abstractEntity("Shape")) { try store.write { try $0.insert(Shape(area: 1)) } }
        try context.insert(Circle(area: 3.14, radius: 1))
        try context.save()
        #expect(try context.fetch(FetchDescriptor<Shape>()).map(\.area) == [3.14])
    }

    @Test func relationshipsToAParentReachSubEntityRecords() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        let context = Context(store)
        let ids = try insertMenagerie(context)
        let zoo = try context.insert(Zoo(city: "Basel", animals: [ids[1], ids[2], ids[3]]))
        try context.save()
        // The inverse `zoo`, inherited by every sub-entity, was set on the concrete records.
        #expect(try context.record(for: RecordID<Dog>(rawValue: ids[1].rawValue))?.zoo == zoo)
        #expect(try context.record(for: RecordID<Puppy>(rawValue: ids[3].rawValue))?.zoo == zoo)
        #expect(try context.fetch(FetchDescriptor<Animal>(predicate: #Predicate { $0.zoo != nil })).map(\.name) == ["Rex", "Tom", "Bit"])
        // Deleting a sub-entity record nullifies the parent-declared inverse.
        try context.delete(RecordID<Cat>(rawValue: ids[2].rawValue))
        try context.save()
        #expect(try context.record(for: zoo)?.animals == [ids[1], ids[3]])
    }
}
