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
/// without sub-entities too) and a save whose changes are all of such records
/// (`writeDirect`), with no record located, staged and committed through the overlay first.
/// They must change the store and its history exactly as the general path does.
@Suite struct StoreWriteDirectChangeTests {
    static let tagLabel = "forces the general path"

    /// Two stores of the same schema and contents — a `Tag`, then `persons` persons — for the
    /// direct path and for the general one.
    static func twoStores(in folder: String, persons: Int) throws
        -> (direct: Store, general: Store, ids: [RecordID<Person>], tag: RecordID<Tag>) {
        let types: [any PersistentRecord.Type] = [Person.self, Pet.self] + graphTypes
        let direct = try Store(at: folder + "/direct", for: types), general = try Store(at: folder + "/general", for: types)
        var ids: [RecordID<Person>] = [], tag = RecordID<Tag>(rawValue: 0)
        for store in [direct, general] {
            tag = try store.write { try $0.insert(Tag(label: tagLabel)) }
            ids = try store.write { transaction in try (0..<persons).map { try transaction.insert(StoreTests.person($0)) } }
        }
        return (direct, general, ids, tag)
    }

    /// Stages an update of the tag to its own values: its entity has relationships, so the
    /// save takes the general path; nothing changes, so nothing is journaled.
    static func forceTheGeneralPath(_ context: Context, _ tag: RecordID<Tag>) throws {
        try context.update(tag, to: Tag(label: tagLabel))
    }

    /// Expects both stores to hold the same persons and the same history changes after
    /// `start`, closes them, and returns the direct store's persons and changes for the test's
    /// own checks.
    static func expectTheSameOutcome(_ direct: Store, _ general: Store, after start: HistoryToken?,
                                     sourceLocation: SourceLocation = #_sourceLocation) throws
        -> (records: [Identified<Person>], changes: [HistoryChange]) {
        let all = FetchDescriptor<Person>(sortBy: [RecordSort(\.createdAt), RecordSort(\.fullName), RecordSort(\.note)])
        let directRecords = try Context(direct).fetch(all), generalRecords = try Context(general).fetch(all)
        #expect(directRecords == generalRecords, sourceLocation: sourceLocation)
        let directChanges = try direct.fetchHistory(HistoryDescriptor(after: start)).flatMap { Array($0.changes) }
        let generalChanges = try general.fetchHistory(HistoryDescriptor(after: start)).flatMap { Array($0.changes) }
        #expect(directChanges == generalChanges, sourceLocation: sourceLocation)
        try direct.close()
        try general.close()
        return (directRecords, directChanges)
    }

    /// The same seeded run of updates and deletes — of records that exist, that were deleted
    /// earlier in the run, and that never existed — through `Store.write` (one change per
    /// write) in one store and through `Context` (one change per save) in another, each delete
    /// saved with `forceTheGeneralPath`: the same errors and results at every step, the same
    /// records after, the same history changes.
    @Test func directChangesMatchTheGeneralPath() throws {
        let seed = SeededRandom.seed(default: 0xD12EC7)
        print("StoreWriteDirectChangeTests.directChangesMatchTheGeneralPath seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let (direct, general, ids, tag) = try Self.twoStores(in: folder, persons: 200)
        let start = try direct.fetchHistory().last?.token
        let context = Context(general)
        for step in 0..<600 {
            let id = step % 50 == 49 ? RecordID<Person>(rawValue: 1_000_000 + UInt64(step)) : ids[Int(random.next() % UInt64(ids.count))]
            if random.next() % 3 == 0 {
                let deleted = try direct.write { try $0.delete(id) }
                let existed = try context.record(for: id) != nil
                if existed {
                    try context.delete(id)
                    try Self.forceTheGeneralPath(context, tag)
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
        let outcome = try Self.expectTheSameOutcome(direct, general, after: start)
        #expect(outcome.records.count < 200, "the run deleted records")
        #expect(outcome.changes.count > 300)
    }

    /// Saves mixing deletes, updates and inserts of plain records take the direct path; the
    /// same changes saved with `forceTheGeneralPath` take the general one. Seeded batches give
    /// the same identifiers, errors, records and history in both stores.
    @Test func mixedSavesMatchTheGeneralPath() throws {
        let seed = SeededRandom.seed(default: 0x3A1ED)
        print("StoreWriteDirectChangeTests.mixedSavesMatchTheGeneralPath seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let (direct, general, firstIDs, tag) = try Self.twoStores(in: folder, persons: 200)
        var ids = firstIDs
        let start = try direct.fetchHistory().last?.token
        let directContext = Context(direct), generalContext = Context(general)
        for batch in 0..<60 {
            for _ in 0..<Int(1 + random.next() % 10) {
                let id = ids[Int(random.next() % UInt64(ids.count))]
                switch random.next() % 3 {
                case 0:
                    try directContext.delete(id)
                    try generalContext.delete(id)
                case 1:
                    let person = StoreTests.person(Int(random.next() % 10_000), note: "batch \(batch)")
                    let a = Result { try directContext.update(id, to: person) }, b = Result { try generalContext.update(id, to: person) }
                    #expect((try? a.get()) != nil ? (try? b.get()) != nil : (try? b.get()) == nil, "batch \(batch), seed \(seed)")
                default:
                    let person = StoreTests.person(Int(random.next() % 10_000))
                    let inserted = try directContext.insert(person)
                    #expect(try generalContext.insert(person) == inserted, "batch \(batch), seed \(seed)")
                    ids.append(inserted)
                }
            }
            try Self.forceTheGeneralPath(generalContext, tag)
            try directContext.save()
            try generalContext.save()
        }
        let changes = try Self.expectTheSameOutcome(direct, general, after: start).changes
        #expect(changes.count > 150 && changes.allSatisfy { $0.entityName == "Person" })
        #expect(Set(changes.map(\.kind)).count == 3, "inserts, updates and deletes")
    }

    /// Saves of deletes only take the direct path; the same deletes saved with
    /// `forceTheGeneralPath` take the general one. Seeded batches — ids that exist, were
    /// deleted in an earlier batch, appear twice in a batch, never existed — give the same
    /// records and the same history in both stores.
    @Test func savesOfDeletesMatchTheGeneralPath() throws {
        let seed = SeededRandom.seed(default: 0xDE1E7E)
        print("StoreWriteDirectChangeTests.savesOfDeletesMatchTheGeneralPath seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let (direct, general, ids, tag) = try Self.twoStores(in: folder, persons: 300)
        let start = try direct.fetchHistory().last?.token
        let directContext = Context(direct), generalContext = Context(general)
        for batch in 0..<40 {
            var picked = (0..<Int(1 + random.next() % 12)).map { _ in ids[Int(random.next() % UInt64(ids.count))] }
            if batch % 5 == 0 { picked.append(RecordID(rawValue: 9_000_000 + UInt64(batch))) }  // never existed
            if let first = picked.first { picked.append(first) }  // twice in the batch
            for id in picked {
                try directContext.delete(id)
                try generalContext.delete(id)
            }
            try Self.forceTheGeneralPath(generalContext, tag)
            try directContext.save()
            try generalContext.save()
        }
        let outcome = try Self.expectTheSameOutcome(direct, general, after: start)
        #expect(outcome.records.count < 250, "the batches deleted records")
        #expect(outcome.changes.count >= 50 && outcome.changes.allSatisfy { $0.kind == .delete })
    }
}
