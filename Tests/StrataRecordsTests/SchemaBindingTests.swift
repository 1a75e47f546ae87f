#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataTestSupport

/// Schema versions frozen in namespaces, as apps declare them.
enum PersonV1 {
    struct Person: PersistentRecord, Equatable {
        var fullName: String
        var createdAt: Date
        var note: String
    }
}

enum PersonV2 {
    /// `note` renamed `remark`; `isFavorite` added with a default.
    struct Person: PersistentRecord, Equatable {
        var fullName: String
        var createdAt: Date
        var remark: String
        var isFavorite: Bool
        static var originalAttributeNames: [String: String] { ["remark": "note"] }
        static var attributeDefaults: [String: Value] { ["isFavorite": .bool(false)] }
    }
}

@Suite struct SchemaBindingTests {
    @Test func lightweightChangesRewriteNoPage() throws {
        let fs = MemoryFileSystem()
        let count = 2_000
        var originals: [UInt64: PersonV1.Person] = [:]
        do {
            let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs))
            let binding = try store.bind(try Schema(version: .init(1, 0, 0), types: [PersonV1.Person.self]))
            #expect(binding.versionID == 1)
            try store.write { records in
                for index in 0..<count {
                    let person = PersonV1.Person(fullName: "Last\(index), First\(index % 97)",
                                                 createdAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)),
                                                 note: "note \(index) é🙂")
                    let (entityID, bytes) = try binding.encode(person)
                    let id = records.allocateRowID(for: entityID)
                    try records.tree(for: entityID, schemaVersion: binding.versionID).insert(id, bytes: bytes)
                    originals[id] = person
                }
            }
            // Binding the same schema again registers nothing.
            #expect(try store.bind(try Schema(version: .init(1, 0, 0), types: [PersonV1.Person.self])).versionID == 1)
            try store.log.close()
        }
        let log = try PageLog.open(directory: "/s", fileSystem: fs)
        let store = RecordStore(log: log)
        let before = try log.snapshot()
        let pagesBefore = Dictionary(uniqueKeysWithValues: try before.pageIDs().map { ($0, try before.location(of: $0)) })
        let binding = try store.bind(try Schema(version: .init(2, 0, 0), types: [PersonV2.Person.self]))
        #expect(binding.versionID == 2)
        // O(1): the new version wrote the catalog (and the store root naming it) — no record page.
        let after = try log.snapshot()
        let changed = try after.pageIDs().filter { try after.location(of: $0) != pagesBefore[$0] }
        #expect(changed.count <= 2, "pages rewritten by a lightweight change: \(changed)")
        // Old records read through the new version: the rename keeps values, the addition defaults.
        let snapshot = try store.snapshot()
        let entityID = try binding.entityID(of: "Person")
        var read = 0
        try snapshot.reader(for: entityID).scan { id, bytes in
            let person = try binding.decode(PersonV2.Person.self, from: Array(bytes))
            let original = originals[id]
            #expect(person.remark == original?.note && person.fullName == original?.fullName
                    && person.createdAt == original?.createdAt && person.isFavorite == false)
            read += 1
            return true
        }
        #expect(read == count)
        // New writes use the new version's ids; old and new records live side by side.
        let newcomer = PersonV2.Person(fullName: "New, Person", createdAt: Date(timeIntervalSince1970: 0), remark: "r", isFavorite: true)
        let newID = try store.write { records in
            let (entity, bytes) = try binding.encode(newcomer)
            let id = records.allocateRowID(for: entity)
            try records.tree(for: entity, schemaVersion: binding.versionID).insert(id, bytes: bytes)
            return id
        }
        let stored = try #require(try store.snapshot().reader(for: entityID).get(newID))
        #expect(try binding.decode(PersonV2.Person.self, from: stored) == newcomer)
    }

    /// A change that is not lightweight is refused with every difference listed, and nothing is
    /// stored: the store still opens with the old schema.
    @Test func aTypeChangeWithoutAPlanIsASchemaMismatch() throws {
        struct PersonV3: PersistentRecord {
            static var entityName: String { "Person" }
            var fullName: String
            var createdAt: Double  // was a date
            var note: String
        }
        let fs = MemoryFileSystem()
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs))
        let v1 = try Schema(version: .init(1, 0, 0), types: [PersonV1.Person.self])
        _ = try store.bind(v1)
        let catalogBefore = try store.snapshot().catalogBytes()
        do {
            _ = try store.bind(try Schema(version: .init(3, 0, 0), types: [PersonV3.self]))
            Issue.record("a type change was accepted without a migration plan")
        } catch SchemaBindingError.schemaMismatch(let stored, let current, let differences) {
            #expect(stored == "1.0.0" && current == "3.0.0")
            #expect(differences.map(\.description) == ["Person.createdAt changed type from date to double"])
            #expect(differences.allSatisfy { !$0.isLightweight })
        }
        #expect(try store.snapshot().catalogBytes() == catalogBefore)
        #expect(try store.bind(v1).versionID == 1)
    }

    @Test func aDamagedCatalogIsATypedError() throws {
        let fs = MemoryFileSystem()
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs))
        _ = try store.bind(try Schema(version: .init(1, 0, 0), types: [PersonV1.Person.self]))
        try store.write { records in
            var bytes = try #require(try records.catalogBytes())
            bytes[bytes.count / 2] ^= 0x40
            try records.setCatalog(bytes)
        }
        #expect(throws: SchemaBindingError.self) { _ = try store.bind(try Schema(version: .init(1, 0, 0), types: [PersonV1.Person.self])) }
    }
}
