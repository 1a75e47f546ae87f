#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@_spi(Engine) import Strata
import StrataTestSupport

/// A fetch with a predicate over a large tree scans it on several threads
/// (`Store.Configuration.scanThreads`): its results — unsaved changes, sorting, limits,
/// predicates the pre-filter decides and ones it leaves to the predicate — are exactly those
/// of the same fetch on one thread.
@Suite struct ParallelFetchTests {
    struct Member: PersistentRecord, Equatable {
        static var entityName: String { "Member" }
        var name: String
        var age: Int
        var note: String?
    }

    @Test func parallelScansReturnWhatOneThreadReturns() throws {
        let seed = SeededRandom.seed(default: 0x9A11)
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        configuration.history.isEnabled = false
        let store = try Store(at: folder, for: [Member.self], configuration: configuration)
        let count = 24_000
        try store.write { transaction in
            for index in 0..<count {
                _ = try transaction.insert(Member(name: "Name\(Int.random(in: 0..<5_000, using: &random))", age: Int.random(in: 0..<100, using: &random),
                                                  note: index % 5 == 0 ? nil : "note \(index % 977) é"))
            }
        }
        try store.close()

        func run(threads: Int) throws -> (results: [[String]], parallel: Int) {
            var configuration = configuration
            configuration.scanThreads = threads
            let store = try Store(at: folder, for: [Member.self], configuration: configuration)
            defer { try? store.close() }
            let context = Context(store)
            // Unsaved changes: an insert, an update, a delete.
            _ = try context.insert(Member(name: "Name17", age: 50, note: "unsaved"))
            if var first = try context.record(for: RecordID<Member>(rawValue: 10)) {
                first.age = 99
                try context.update(RecordID(rawValue: 10), to: first)
            }
            try context.delete(RecordID<Member>(rawValue: 20))
            let prefix = "note 1", name = "Name17"
            var results: [[String]] = []
            func describe(_ found: [Identified<Member>]) -> [String] { found.map { "\($0.id.rawValue) \($0.record.name) \($0.record.age) \($0.record.note ?? "-")" } }
            results.append(describe(try context.fetch(FetchDescriptor<Member>(predicate: #Predicate { $0.age >= 90 }))))
            results.append(describe(try context.fetch(FetchDescriptor<Member>(predicate: #Predicate { $0.note?.starts(with: prefix) == true }))))
            results.append(describe(try context.fetch(FetchDescriptor<Member>(predicate: #Predicate { $0.name == name || $0.age == 3 },
                                                                              sortBy: [RecordSort(\.age)]))))
            results.append(describe(try context.fetch(FetchDescriptor<Member>(predicate: #Predicate { $0.name.contains("7") && $0.age < 10 }))))
            results.append(describe(try context.fetch(FetchDescriptor<Member>(predicate: #Predicate { $0.age < 50 }, fetchLimit: 30, fetchOffset: 5))))
            return (results, store.parallelScanCount)
        }
        let one = try run(threads: 1)
        #expect(one.parallel == 0)
        #expect(one.results.allSatisfy { !$0.isEmpty }, "seed \(seed): every fetch finds records")
        for threads in [2, 4] {
            let many = try run(threads: threads)
            #expect(many.parallel >= 3, "seed \(seed), \(threads) threads: \(many.parallel) parallel scans")
            for (index, results) in many.results.enumerated() {
                #expect(results == one.results[index], "seed \(seed), \(threads) threads, fetch \(index): \(results.count) vs \(one.results[index].count) records")
            }
        }
    }
}
