#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// Seeded random operations through the public API, checked against a plain in-memory model:
/// insert, update, delete, delete(where:), fetch with predicates, sorting, limit and offset,
/// save, rollback and reopen.
@Suite struct StoreModelTests {
    enum Filter: CaseIterable { case all, ageAtLeast, noteIsNil, namePrefix }
    enum SortKey: CaseIterable { case none, age, fullName, createdAt }

    @Test func matchesAnInMemoryModel() throws {
        let seed = SeededRandom.seed(default: 0x570E)
        print("StoreModelTests seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        var store = try Store(at: folder, for: [Person.self], configuration: configuration)
        var context = Context(store)
        var saved: [UInt64: Person] = [:]
        var working: [UInt64: Person] = [:]
        var lastID: UInt64 = 0
        var highestSavedID: UInt64 = 0  // ids of records ever saved are never handed out again
        var counts: [String: Int] = [:]
        #if DEBUG
        let operations = 2_000
        #else
        let operations = 10_000
        #endif

        func randomPerson() -> Person {
            let index = Int.random(in: 0..<10_000, using: &random)
            return Person(fullName: "Last\(index % 40), First\(index)", age: Int.random(in: 0..<100, using: &random),
                          createdAt: Date(timeIntervalSince1970: Double(Int.random(in: 0..<1_000_000, using: &random))),
                          note: Bool.random(using: &random) ? nil : "note \(index) ✓", tags: index % 4 == 0 ? ["x"] : [])
        }

        for step in 0..<operations {
            let context_ = "step \(step), seed \(seed)"
            let existing = working.keys.sorted().randomElement(using: &random)  // sorted: reproducible from the seed
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<30:
                let person = randomPerson()
                let id = try context.insert(person)
                #expect(id.rawValue > lastID, "ids increase (\(context_))")
                lastID = id.rawValue
                working[id.rawValue] = person
                counts["insert", default: 0] += 1
            case 30..<45:
                if let id = existing {
                    let person = randomPerson()
                    try context.update(RecordID<Person>(rawValue: id), to: person)
                    working[id] = person
                    counts["update", default: 0] += 1
                }
            case 45..<55:
                if let id = existing {
                    try context.delete(RecordID<Person>(rawValue: id))
                    working[id] = nil
                    counts["delete", default: 0] += 1
                }
            case 55..<57:
                let threshold = Int.random(in: 90..<100, using: &random)
                let removed = try context.delete(Person.self, where: #Predicate { $0.age >= threshold })
                let expected = working.filter { $0.value.age >= threshold }
                #expect(removed == expected.count, "delete(where:) (\(context_))")
                for id in expected.keys { working[id] = nil }
                counts["deleteWhere", default: 0] += 1
            case 57..<80:
                let filter = Filter.allCases.randomElement(using: &random)!
                let sortKey = SortKey.allCases.randomElement(using: &random)!
                let order: SortOrder = Bool.random(using: &random) ? .forward : .reverse
                let threshold = Int.random(in: 0..<100, using: &random)
                let prefix = "Last\(Int.random(in: 0..<40, using: &random))"
                var descriptor = FetchDescriptor<Person>()
                let accepts: (Person) -> Bool
                switch filter {
                case .all: accepts = { _ in true }
                case .ageAtLeast:
                    descriptor.predicate = #Predicate { $0.age >= threshold }
                    accepts = { $0.age >= threshold }
                case .noteIsNil:
                    descriptor.predicate = #Predicate { $0.note == nil }
                    accepts = { $0.note == nil }
                case .namePrefix:
                    descriptor.predicate = #Predicate { $0.fullName.starts(with: prefix) }
                    accepts = { $0.fullName.starts(with: prefix) }
                }
                let precedes: ((Person, Person) -> Bool?)?
                switch sortKey {
                case .none: precedes = nil
                case .age:
                    descriptor.sortBy = [RecordSort(\.age, order: order)]
                    precedes = { $0.age == $1.age ? nil : ($0.age < $1.age) == (order == .forward) }
                case .fullName:
                    descriptor.sortBy = [RecordSort(\.fullName, order: order)]
                    precedes = { $0.fullName == $1.fullName ? nil : ($0.fullName < $1.fullName) == (order == .forward) }
                case .createdAt:
                    descriptor.sortBy = [RecordSort(\.createdAt, order: order)]
                    precedes = { $0.createdAt == $1.createdAt ? nil : ($0.createdAt < $1.createdAt) == (order == .forward) }
                }
                if Bool.random(using: &random) { descriptor.fetchLimit = Int.random(in: 0..<30, using: &random) }
                if Bool.random(using: &random) { descriptor.fetchOffset = Int.random(in: 0..<30, using: &random) }
                var expected = working.filter { accepts($0.value) }.sorted { a, b in
                    precedes?(a.value, b.value) ?? (a.key < b.key)
                }
                expected = Array(expected.dropFirst(descriptor.fetchOffset ?? 0).prefix(descriptor.fetchLimit ?? Int.max))
                let results = try context.fetch(descriptor)
                #expect(results.map(\.id.rawValue) == expected.map(\.key), "fetch ids, \(filter) by \(sortKey) (\(context_))")
                #expect(results.map(\.record) == expected.map(\.value), "fetch records (\(context_))")
                counts["fetch", default: 0] += 1
            case 80..<85:
                if let id = existing {
                    #expect(try context.record(for: RecordID<Person>(rawValue: id)) == working[id], "record(for:) (\(context_))")
                }
                counts["get", default: 0] += 1
            case 85..<95:
                try context.save()
                saved = working
                highestSavedID = max(highestSavedID, saved.keys.max() ?? 0)
                counts["save", default: 0] += 1
            case 95..<98:
                context.rollback()
                working = saved
                counts["rollback", default: 0] += 1
            default:
                try store.close()
                store = try Store(at: folder, for: [Person.self], configuration: configuration)
                context = Context(store)
                working = saved
                lastID = highestSavedID  // unsaved ids may be handed out again after a reopen
                #expect(try context.fetchCount(FetchDescriptor<Person>()) == saved.count, "after reopen (\(context_))")
                counts["reopen", default: 0] += 1
            }
        }
        print("StoreModelTests: \(operations) operations \(counts.sorted { $0.key < $1.key }), \(working.count) records at the end")
        try store.close()
    }
}
