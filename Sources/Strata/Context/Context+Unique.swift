import StrataRecords
import StrataSchema

/// A context's unique values: those of a record, and the record — saved or unsaved — that
/// already holds one (the upserts of `insert`, the violations of `update`).
extension Context {
    /// The non-null unique values of a record, as full index keys.
    func uniqueKeys(_ bytes: [UInt8], _ entityID: UInt32,
                            _ uniques: [(attributeID: UInt32, defaultKey: [UInt8])]) throws -> [(UInt32, [UInt8])] {
        try store.translating {
            try uniques.compactMap { attributeID, defaultKey in
                let key = try RecordSnapshot.indexKey(of: attributeID, defaultKey: defaultKey, in: bytes, entityID: entityID)
                return key == IndexKey.nullKey ? nil : (attributeID, key)
            }
        }
    }

    /// The record other than `excluding` — saved (as this context sees it) or unsaved — that
    /// holds one of `bytes`' non-null unique values, and which attribute matched; nil if none.
    /// - Throws: `.uniqueConstraintViolation` when two different records match.
    func uniqueMatch(_ entityID: UInt32, _ bytes: [UInt8], excluding: UInt64?) throws -> (id: UInt64, attributeID: UInt32)? {
        guard !store.engine.uniqueAttributes.isEmpty, let uniques = store.engine.uniqueAttributes[entityID] else { return nil }
        let keys = try uniqueKeys(bytes, entityID, uniques)
        guard !keys.isEmpty else { return nil }
        let snapshot = try readSnapshot()
        var found: (id: UInt64, attributeID: UInt32)?
        for (attributeID, key) in keys {
            var ids: [UInt64] = []
            if let id = pendingUnique[entityID]?[attributeID]?[key] { ids.append(id) }
            // A saved record with unsaved changes counts with its unsaved values (above).
            for id in try store.translating({ try snapshot.recordIDs(entityID: entityID, attributeID: attributeID, key: key) })
                where changes[entityID]?[id] == nil { ids.append(id) }
            for id in ids where id != excluding {
                if let found, found.id != id {
                    throw store.uniqueViolation(entityID: entityID, attributeID: attributeID, existing: "records \(found.id) and \(id)")
                }
                found = (id, attributeID)
            }
        }
        return found
    }
}
