import Testing
@_spi(Engine) import Strata
import StrataTestSupport

@Suite struct RawRecordStoreTests {
    @Test func recordsRoundTripAcrossEntitiesAndReopen() throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        var random = SeededRandom(seed: 61)
        var expected: [UInt32: [UInt64: [UInt8]]] = [:]
        do {
            let store = try RawRecordStore.open(at: directory)
            try store.write { txn in
                for entity in UInt32(1)...2 {
                    for _ in 0..<500 {
                        let id = txn.allocateID(entity: entity)
                        let bytes = random.recordLikeBytes(Int.random(in: 0...3000, using: &random))
                        try txn.insert(entity: entity, id: id, bytes: bytes)
                        expected[entity, default: [:]][id] = bytes
                    }
                }
            }
            #expect(throws: StrataError.duplicateRecordID(1)) { try store.write { try $0.insert(entity: 1, id: 1, bytes: []) } }
            let (deleted, updated) = try store.write { txn in
                (try txn.delete(entity: 2, id: 7), try txn.update(entity: 1, id: 3, bytes: [1, 2, 3]))
            }
            #expect(deleted && updated)
            expected[2]?[7] = nil
            expected[1]?[3] = [1, 2, 3]
            try store.close()
        }
        let store = try RawRecordStore.open(at: directory)
        let snapshot = try store.snapshot()
        for (entity, records) in expected {
            #expect(snapshot.count(entity: entity) == records.count)
            var seen: [UInt64: [UInt8]] = [:]
            try snapshot.scan(entity: entity) { id, bytes in seen[id] = Array(bytes); return true }
            #expect(seen == records)
            for (id, bytes) in records.prefix(50) { #expect(try snapshot.get(entity: entity, id: id) == bytes) }
        }
        #expect(try snapshot.get(entity: 2, id: 7) == nil)
        try store.close()
    }
}
