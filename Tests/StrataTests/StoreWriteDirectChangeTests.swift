#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// Changes of records whose entity has no relationships go straight to their trees:
/// `Store.write`'s updates and deletes (`GraphTransaction.updateNow` / `deleteNow`, entities
/// without sub-entities too) and a save of deletes only (`writeDeletes`), with no record
/// located, staged and committed through the overlay first. They must change the store and its
/// history exactly as the general path does.
@Suite struct StoreWriteDirectChangeTests {
    /// The same seeded run of updates and deletes — of records that exist, that were deleted
    /// earlier in the run, and that never existed — through `Store.write` (one change per
    /// write) in one store and through `Context` (one change per save) in another, each delete
    /// saved with a change that leaves a record as it was (an update to its own values, which
    /// journals nothing) so that it takes the general path: the same errors and results at
    /// every step, the same records after, the same history changes.
    @Test func directChangesMatchTheGeneralPath() throws {
        let seed = SeededRandom.seed(default: 0xD12EC7)
        print("StoreWriteDirectChangeTests.directChangesMatchTheGeneralPath seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let direct = try Store(at: folder + "/direct", for: [Person.self, Pet.self])
        let general = try Store(at: folder + "/general", for: [Person.self, Pet.self])
        var ids: [RecordID<Person>] = []
        for store in [direct, general] {
            ids = try store.write { transaction in try (0..<200).map { try transaction.insert(StoreTests.person($0)) } }
        }
        let start = try direct.fetchHistory().last?.token
        let context = Context(general)
        let sentinel = ids[0]  // never changed by the run
        for step in 0..<600 {
            let id = step % 50 == 49 ? RecordID<Person>(rawValue: 1_000_000 + UInt64(step)) : ids[1 + Int(random.next() % UInt64(ids.count - 1))]
            if random.next() % 3 == 0 {
                let deleted = try direct.write { try $0.delete(id) }
                let existed = try context.record(for: id) != nil
                if existed {
                    try context.delete(id)
                    try context.update(sentinel, to: StoreTests.person(0))  // unchanged: forces the general path
                    try context.save()
                }
                #expect(deleted == existed, "step \(step), seed \(seed)")
            } else {
                let person = StoreTests.person(Int(random.next() % 10_000), note: random.next() % 2 == 0 ? "note \(step)" : nil)
                let directResult = Result { try direct.write { try $0.update(id, to: person) } }
                let generalResult = Result {
                    try context.update(id, to: person)
                    try context.save()
                }
                switch (directResult, generalResult) {
                case (.success, .success): break
                case (.failure(let a), .failure(let b)):
                    #expect(a as? StrataError == b as? StrataError, "step \(step), seed \(seed)")
                    #expect(a as? StrataError == StrataError.recordNotFound(id.description), "step \(step), seed \(seed)")
                    context.rollback()
                default: Issue.record("step \(step): Store.write \(directResult), Context \(generalResult), seed \(seed)")
                }
            }
        }
        let all = FetchDescriptor<Person>(sortBy: [RecordSort(\.createdAt), RecordSort(\.fullName)])
        let directRecords = try Context(direct).fetch(all), generalRecords = try Context(general).fetch(all)
        #expect(directRecords == generalRecords)
        #expect(directRecords.count < 200, "the run deleted records")
        let directChanges = try direct.fetchHistory(HistoryDescriptor(after: start)).flatMap { Array($0.changes) }
        let generalChanges = try general.fetchHistory(HistoryDescriptor(after: start)).flatMap { Array($0.changes) }
        #expect(directChanges.count > 300)
        #expect(directChanges == generalChanges)
        try direct.close()
        try general.close()
    }

    /// Saves of deletes only take the direct path; the same deletes saved with a change that
    /// leaves a record as it was (an update to its own values: no history entry) take the
    /// general one. Seeded batches — ids that exist, were deleted in an earlier batch, appear
    /// twice in a batch, never existed — give the same records and the same history in both
    /// stores.
    @Test func savesOfDeletesMatchTheGeneralPath() throws {
        let seed = SeededRandom.seed(default: 0xDE1E7E)
        print("StoreWriteDirectChangeTests.savesOfDeletesMatchTheGeneralPath seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let direct = try Store(at: folder + "/direct", for: [Person.self, Pet.self])
        let general = try Store(at: folder + "/general", for: [Person.self, Pet.self])
        var ids: [RecordID<Person>] = []
        for store in [direct, general] {
            ids = try store.write { transaction in try (0..<300).map { try transaction.insert(StoreTests.person($0)) } }
        }
        let sentinel = ids[0], start = try direct.fetchHistory().last?.token
        let directContext = Context(direct), generalContext = Context(general)
        for batch in 0..<40 {
            var picked = (0..<Int(1 + random.next() % 12)).map { _ in ids[1 + Int(random.next() % UInt64(ids.count - 1))] }
            if batch % 5 == 0 { picked.append(RecordID(rawValue: 9_000_000 + UInt64(batch))) }  // never existed
            if let first = picked.first { picked.append(first) }  // twice in the batch
            for id in picked {
                try directContext.delete(id)
                try generalContext.delete(id)
            }
            try generalContext.update(sentinel, to: StoreTests.person(0))  // unchanged: forces the general path
            try directContext.save()
            try generalContext.save()
        }
        let all = FetchDescriptor<Person>(sortBy: [RecordSort(\.createdAt), RecordSort(\.fullName)])
        let directRecords = try Context(direct).fetch(all), generalRecords = try Context(general).fetch(all)
        #expect(directRecords == generalRecords)
        #expect(directRecords.count < 250, "the batches deleted records")
        let directChanges = try direct.fetchHistory(HistoryDescriptor(after: start)).flatMap { Array($0.changes) }
        let generalChanges = try general.fetchHistory(HistoryDescriptor(after: start)).flatMap { Array($0.changes) }
        #expect(directChanges.count >= 50 && directChanges.allSatisfy { $0.kind == .delete })
        #expect(directChanges == generalChanges)
        try direct.close()
        try general.close()
    }
}
