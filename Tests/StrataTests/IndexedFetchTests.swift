#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@_spi(Engine) import Strata
import StrataTestSupport

/// A record with an indexed rank, a unique code, an indexed name and a plain note.
struct Ranked: PersistentRecord, Equatable {
    static var attributeOptions: [String: Attribute.Options] { ["rank": [.indexed], "code": [.unique], "name": [.indexed]] }
    var rank: Int
    var code: String
    var name: String
    var note: String
}

/// Fetches whose predicate bounds an indexed attribute read the index instead of scanning,
/// and return exactly what a scan returns — also with unsaved changes, limits and sorting.
@Suite struct IndexedFetchTests {
    @Test func indexedFetchesMatchAModel() throws {
        let seed = SeededRandom.seed(default: 0x1D3C_F00D)
        print("IndexedFetchTests seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [Ranked.self])
        let names = ["Ada", "Bob", "e\u{301}mile", "\u{E9}mile", "Zoë", "Kelvin", "\u{212A}elvin"]
        var model: [UInt64: Ranked] = [:]
        let context = Context(store)
        func randomRecord(_ n: Int) -> Ranked {
            Ranked(rank: Int(random.next() % 200), code: "c\(n)", name: names[Int(random.next() % UInt64(names.count))],
                   note: random.next() % 2 == 0 ? "x" : "y")
        }
        for n in 0..<2_000 { _ = try context.insert(randomRecord(n)) }
        try context.save()
        for match in try context.fetch(FetchDescriptor<Ranked>()) { model[match.id.rawValue] = match.record }
        #expect(model.count == 2_000)

        var indexedBefore = store.fetchPlanCounts.indexed
        for round in 0..<300 {
            // Unsaved changes in some rounds: they must merge with index results.
            if round % 50 == 25 {
                for _ in 0..<20 {
                    let id = model.keys.sorted()[Int(random.next() % UInt64(model.count))]
                    var record = model[id]!
                    record.rank = Int(random.next() % 200)
                    try context.update(RecordID<Ranked>(rawValue: id), to: record)
                    model[id] = record
                }
            }
            if round % 50 == 49 { try context.save() }
            let a = Int(random.next() % 200), b = Int(random.next() % 200)
            let code = "c\(random.next() % 2_100)", name = names[Int(random.next() % UInt64(names.count))]
            let cases: [(String, Predicate<Ranked>, (Ranked) -> Bool)] = [
                ("rank == a", #Predicate { $0.rank == a }, { $0.rank == a }),
                ("a < rank <= a+3", #Predicate { $0.rank > a && $0.rank <= a + 3 && $0.note == "x" }, { $0.rank > a && $0.rank <= a + 3 && $0.note == "x" }),
                ("rank >= 190", #Predicate { $0.rank >= 190 }, { $0.rank >= 190 }),
                ("code ==", #Predicate { $0.code == code }, { $0.code == code }),
                ("name ==", #Predicate { $0.name == name && $0.rank < b }, { $0.name == name && $0.rank < b }),
            ]
            for (label, predicate, expected) in cases {
                let results = try context.fetch(FetchDescriptor(predicate: predicate))
                let want = model.filter { expected($0.value) }.keys.sorted()
                #expect(results.map(\.id.rawValue) == want, "\(label) (seed \(seed), round \(round))")
                #expect(results.allSatisfy { model[$0.id.rawValue] == $0.record })
            }
            let limited = try context.fetch(FetchDescriptor(predicate: #Predicate<Ranked> { $0.rank == a }, fetchLimit: 2))
            #expect(limited.map(\.id.rawValue) == Array(model.filter { $0.value.rank == a }.keys.sorted().prefix(2)))
        }
        // Equalities and narrow ranges read the index (name == … may select more than a
        // quarter of the records, and then scans).
        let indexed = store.fetchPlanCounts.indexed - indexedBefore
        #expect(indexed >= 300 * 4, "only \(indexed) fetches used an index")
        // A range selecting most records scans instead.
        indexedBefore = store.fetchPlanCounts.indexed
        let scannedBefore = store.fetchPlanCounts.scanned
        let most = try context.fetch(FetchDescriptor(predicate: #Predicate<Ranked> { $0.rank >= 10 }))
        #expect(most.count == model.values.filter { $0.rank >= 10 }.count)
        #expect(store.fetchPlanCounts.indexed == indexedBefore && store.fetchPlanCounts.scanned == scannedBefore + 1)
    }
}

/// A record with an indexed attribute and no unique one: `Store.write` inserts it on the bulk
/// path, which must keep the index exact.
struct Tagged: PersistentRecord, Equatable {
    static var attributeOptions: [String: Attribute.Options] { ["tag": [.indexed]] }
    var tag: Int
    var note: String
}

@Suite struct BulkIndexedInsertTests {
    /// Thousands of bulk inserts (past every id block size), a delete and an update in the same
    /// transaction: every indexed fetch returns exactly what a scan finds, and reads the index.
    @Test func bulkInsertsKeepIndexesExact() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [Tagged.self])
        let ids = try store.write { transaction in
            let ids = try (0..<5_000).map { try transaction.insert(Tagged(tag: $0 % 37, note: "n\($0)")) }
            try transaction.delete(ids[10])
            try transaction.update(ids[11], to: Tagged(tag: 1_000, note: "moved"))
            for index in 5_000..<5_100 { try transaction.insert(Tagged(tag: index % 37, note: "n\(index)")) }
            return ids
        }
        #expect(Set(ids.map(\.rawValue)).count == 5_000)
        let context = Context(store)
        let all = try context.fetch(FetchDescriptor<Tagged>())
        #expect(all.count == 5_099)
        let before = store.fetchPlanCounts.indexed
        for tag in [0, 1, 10, 36, 1_000] {
            let indexed = try context.fetch(FetchDescriptor<Tagged>(predicate: #Predicate { $0.tag == tag }))
            #expect(indexed.map(\.id) == all.filter { $0.record.tag == tag }.map(\.id), "tag \(tag)")
        }
        #expect(store.fetchPlanCounts.indexed == before + 5, "every fetch read the index")
        try store.close()
    }
}
