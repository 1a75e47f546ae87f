#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// A record holding a large data value, with small attributes on either side.
struct Attachment: PersistentRecord, Equatable {
    var name: String
    var payload: Data
    var note: String
}

/// The same with an index: its tree keeps index entries, so a bulk insert assembles the record.
struct IndexedAttachment: PersistentRecord, Equatable {
    static var attributeOptions: [String: Attribute.Options] { ["name": [.indexed]] }
    var name: String
    var payload: Data
    var note: String
}

/// Large values through the public API (issue 21, "a 200 MB value peaks at ~6× its size"):
/// written by a bulk `store.write` (the value's pieces straight from the caller's `Data`) and by
/// a context, read by every path (the value sharing the memory its record was read into), they
/// come back byte for byte, stay valid after the store is closed, change as values do, and the
/// store verifies. The memory figures are measured by the `large-value` benchmark, not here.
@Suite struct LargeValueTests {
    /// A value spanning three 1 MiB overflow chunks and a bit.
    static func payload(_ seed: UInt64) -> Data {
        var random = SeededRandom(seed: seed)
        return Data(random.bytes(5 << 19 | 13))
    }

    @Test func largeValuesRoundTripThroughEveryWriteAndReadPath() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let written = (0..<4).map { Attachment(name: "a\($0)", payload: Self.payload(UInt64($0)), note: "note \($0)") }
        let indexed = IndexedAttachment(name: "i", payload: Self.payload(9), note: "indexed")
        var fetched: [Attachment] = []
        do {
            let store = try Store(at: folder, for: [Attachment.self, IndexedAttachment.self])
            let bulk = try store.write { transaction in
                (try transaction.insert(written[0]), try transaction.insert(written[1]), try transaction.insert(indexed))
            }
            let context = Context(store)
            let saved = (try context.insert(written[2]), try context.insert(written[3]))
            try context.save()
            let ids = [bulk.0, bulk.1, saved.0, saved.1]
            let reader = Context(store)
            for (id, attachment) in zip(ids, written) {
                #expect(try reader.record(for: id) == attachment, "\(id)")
                #expect(try store.read { try $0.record(for: id) } == attachment, "\(id)")
            }
            #expect(try reader.record(for: bulk.2) == indexed)
            #expect(try reader.fetch(FetchDescriptor<IndexedAttachment>(predicate: #Predicate { $0.name == "i" })).map(\.record) == [indexed])
            fetched = try reader.fetch(FetchDescriptor<Attachment>(sortBy: [RecordSort(\.name)])).map(\.record)
            #expect(fetched == written)
            #expect(try store.verify().isValid)
            try store.close()
        }
        // The values read own their memory: still whole with the store closed, and a change is
        // the changed value's alone.
        #expect(fetched == written)
        var changed = fetched[1].payload
        changed[changed.count - 1] ^= 0xFF
        changed.append(1)
        #expect(changed.count == written[1].payload.count + 1 && fetched[1].payload == written[1].payload)
        let store = try Store(at: folder, for: [Attachment.self, IndexedAttachment.self])
        #expect(try Context(store).fetch(FetchDescriptor<Attachment>(sortBy: [RecordSort(\.name)])).map(\.record) == written)
        try store.close()
    }
}
