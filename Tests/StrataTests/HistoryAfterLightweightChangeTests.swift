#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

// One entity across three lightweight versions: V2 adds `pinned` with a default (and keeps it
// in tombstones), V3 removes `body`.

struct MemoV1: PersistentRecord, Equatable {
    static var entityName: String { "Memo" }
    var title: String
    var body: String
}

struct MemoV2: PersistentRecord, Equatable {
    static var entityName: String { "Memo" }
    static var attributeDefaults: [String: Value] { ["pinned": false] }
    static var attributeOptions: [String: Attribute.Options] { ["pinned": [.preserveValueOnDeletion]] }
    var title: String
    var body: String
    var pinned: Bool
}

struct MemoV3: PersistentRecord, Equatable {
    static var entityName: String { "Memo" }
    static var attributeDefaults: [String: Value] { ["pinned": false] }
    static var attributeOptions: [String: Attribute.Options] { ["pinned": [.preserveValueOnDeletion]] }
    var title: String
    var pinned: Bool
}

/// Regression (found by `OperationFuzzTests`, seed 1592651810): the journal compared stored
/// fields, so writing back unchanged a record stored before a lightweight change journaled
/// an update the app never made — `pinned null → false` for an attribute added with a default,
/// `body "…" → null` for a removed one — and an update's old value was `null` where the app had
/// read the default. Updates and tombstones are now journaled as the app reads the record.
@Suite struct HistoryAfterLightweightChangeTests {
    @Test func updatesAndTombstonesAreJournaledAsTheAppReadsTheRecord() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var store = try Store(at: folder, for: [MemoV1.self], version: Schema.Version(1, 0, 0))
        let (a, b, c) = try store.write { t in
            (try t.insert(MemoV1(title: "a", body: "x")), try t.insert(MemoV1(title: "b", body: "y")), try t.insert(MemoV1(title: "c", body: "z")))
        }
        try store.close()

        // V2: `pinned` reads as false in records written by V1.
        store = try Store(at: folder, for: [MemoV2.self], version: Schema.Version(2, 0, 0))
        var token = try store.currentHistoryToken()
        let unchanged = MemoV2(title: "a", body: "x", pinned: false)
        #expect(try Context(store).record(for: RecordID<MemoV2>(rawValue: a.rawValue)) == unchanged)
        try store.write { try $0.update(RecordID<MemoV2>(rawValue: a.rawValue), to: unchanged) }
        #expect(try store.fetchHistory(HistoryDescriptor(after: token)).isEmpty, "writing back what was read changes nothing")
        #expect(try store.currentHistoryToken() == token)

        let context = Context(store, author: "app")
        try context.update(RecordID<MemoV2>(rawValue: b.rawValue), to: MemoV2(title: "b", body: "y", pinned: true))
        try context.delete(RecordID<MemoV2>(rawValue: c.rawValue))
        try context.save()
        let entry = try #require(try store.fetchHistory(HistoryDescriptor(after: token)).first)
        let update = try #require(entry.changes.first { $0.kind == .update })
        #expect(update.updatedAttributes == [AttributeChange(name: "pinned", oldValue: false, newValue: true)], "the old value is the one read")
        let delete = try #require(entry.changes.first { $0.kind == .delete })
        #expect(delete.tombstone == ["pinned": false], "a tombstone keeps the value read")
        try store.close()

        // V3: `body` is gone; writing a record that still stores it back unchanged changes nothing.
        store = try Store(at: folder, for: [MemoV3.self], version: Schema.Version(3, 0, 0))
        token = try store.currentHistoryToken()
        try store.write { try $0.update(RecordID<MemoV3>(rawValue: a.rawValue), to: MemoV3(title: "a", pinned: false)) }
        #expect(try store.fetchHistory(HistoryDescriptor(after: token)).isEmpty, "a removed attribute is no change")
        try store.write { try $0.update(RecordID<MemoV3>(rawValue: a.rawValue), to: MemoV3(title: "A", pinned: false)) }
        let renamed = try #require(try store.fetchHistory(HistoryDescriptor(after: token)).first?.changes.first)
        #expect(renamed.updatedAttributes == [AttributeChange(name: "title", oldValue: "a", newValue: "A")])
        try store.close()
    }
}
