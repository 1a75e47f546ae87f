import StrataFormat
import StrataSchema

/// The indexes of one entity inside a write transaction. Its record tree calls `replace`
/// before every insert, update and delete, so each index keeps exactly one entry per record
/// (Architecture.md, invariant 22) whatever path wrote the record.
///
/// Unique attributes are checked before anything changes: a change that would repeat another
/// record's non-null value throws `RecordTreeError.uniqueConstraintViolation` and leaves the
/// record and every index as they were.
///
/// Not thread-safe; lives inside one `RecordTransaction`.
final class EntityIndexes {
    struct Member {
        let attributeID: UInt32
        let index: StoreRoot.Index
        let writer: IndexTreeWriter
    }

    let entityID: UInt32
    let members: [Member]

    init(entityID: UInt32, members: [Member]) {
        self.entityID = entityID
        self.members = members
    }

    /// The full index key of one attribute of a record: its value's key, `defaultKey` when
    /// the record lacks the attribute (it reads as the default), the null key for a null field
    /// (an optional attribute set to nil: it reads as nil, whatever its default).
    /// - Throws: `RecordTreeError.invalidRecord` for bytes that are not a record.
    static func valueKey(of attributeID: UInt32, defaultKey: [UInt8], in bytes: [UInt8], entityID: UInt32, id: UInt64) throws -> [UInt8] {
        let value: Value?
        do { value = try RecordCodec.storedValue(of: attributeID, in: bytes) } catch {
            throw RecordTreeError.invalidRecord(entityID: entityID, recordID: id, reason: error.reason)
        }
        guard let value else { return defaultKey }
        return IndexKey.encode(value)
    }

    /// The ids of the entries whose full value key is `key` — exact: when the stored form is
    /// cut, each candidate's record is read (`record`) and its full key compared.
    static func exactMatches(of key: [UInt8], attributeID: UInt32, defaultKey: [UInt8], entityID: UInt32,
                             scan: ([UInt8], ([UInt8]) throws -> Bool) throws -> Void,
                             record: (UInt64) throws -> [UInt8]?) throws -> [UInt64] {
        let stored = Array(IndexKey.stored(key))
        var ids: [UInt64] = []
        try scan(stored) { entry in
            guard IndexNode.compare(Array(entry.dropLast(8)), stored) == 0 else { return false }
            ids.append(IndexKey.recordID(ofEntry: entry))
            return true
        }
        guard IndexKey.isCut(key) else { return ids }
        return try ids.filter { id in
            guard let bytes = try record(id) else {
                throw RecordTreeError.corruptNode(pageID: 0, reason: "an index of entity \(entityID) names record \(id), which does not exist")
            }
            return try valueKey(of: attributeID, defaultKey: defaultKey, in: bytes, entityID: entityID, id: id) == key
        }
    }

    func keys(of bytes: [UInt8], id: UInt64) throws -> [[UInt8]] {
        try members.map { try Self.valueKey(of: $0.attributeID, defaultKey: $0.index.defaultKey, in: bytes, entityID: entityID, id: id) }
    }

    /// Records other than `excluding` that hold `key` in member `position`.
    private func matches(_ position: Int, key: [UInt8], excluding: UInt64?, records: RecordTreeWriter) throws -> [UInt64] {
        let member = members[position]
        return try Self.exactMatches(of: key, attributeID: member.attributeID, defaultKey: member.index.defaultKey, entityID: entityID,
                                     scan: member.writer.scan(from:_:), record: records.get).filter { $0 != excluding }
    }

    /// The record (other than `excluding`) that holds one of `bytes`' non-null unique values,
    /// or nil. - Throws: `uniqueConstraintViolation` when two different records hold them.
    func uniqueMatch(_ bytes: [UInt8], excluding: UInt64?, records: RecordTreeWriter) throws -> UInt64? {
        var found: (id: UInt64, attributeID: UInt32)?
        let keys = try keys(of: bytes, id: excluding ?? 0)
        for (position, member) in members.enumerated() where member.index.isUnique && keys[position] != IndexKey.nullKey {
            for id in try matches(position, key: keys[position], excluding: excluding, records: records) {
                if let found, found.id != id {
                    throw RecordTreeError.uniqueConstraintViolation(entityID: entityID, attributeID: member.attributeID,
                                                                    recordID: found.id, existingID: id)
                }
                found = (id, member.attributeID)
            }
        }
        return found?.id
    }

    /// Moves record `id`'s entries from the values of `old` to those of `new` (nil: no record).
    func replace(_ id: UInt64, old: [UInt8]?, new: [UInt8]?, records: RecordTreeWriter) throws {
        let oldKeys = try old.map { try keys(of: $0, id: id) }
        let newKeys = try new.map { try keys(of: $0, id: id) }
        if let newKeys {
            for (position, member) in members.enumerated() where member.index.isUnique {
                let key = newKeys[position]
                guard key != IndexKey.nullKey, key != oldKeys?[position] else { continue }
                if let other = try matches(position, key: key, excluding: id, records: records).first {
                    throw RecordTreeError.uniqueConstraintViolation(entityID: entityID, attributeID: member.attributeID,
                                                                    recordID: id, existingID: other)
                }
            }
        }
        for (position, member) in members.enumerated() {
            let before = oldKeys?[position], after = newKeys?[position]
            guard before != after else { continue }
            if let before, try !member.writer.delete(IndexKey.entry(before, id: id)) {
                throw RecordTreeError.corruptNode(pageID: member.writer.root.rootPageID,
                                                  reason: "index (\(entityID), \(member.attributeID)) lacks the entry of record \(id)")
            }
            if let after, try !member.writer.insert(IndexKey.entry(after, id: id)) {
                throw RecordTreeError.corruptNode(pageID: member.writer.root.rootPageID,
                                                  reason: "index (\(entityID), \(member.attributeID)) already has an entry for record \(id)")
            }
        }
    }
}
