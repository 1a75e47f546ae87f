import StrataFormat
import StrataSchema

extension RecordTransaction {
    /// The existing record that holds one of `bytes`' non-null unique values (the record an
    /// insert of `bytes` must update instead: an upsert), or nil; `excluding` is left out.
    /// - Throws: `RecordTreeError.uniqueConstraintViolation` when two different records hold
    ///   them (`recordID` and `existingID` name both); `.invalidRecord`; storage errors.
    package func uniqueMatch(entityID: UInt32, schemaVersion: UInt32, bytes: [UInt8], excluding: UInt64? = nil) throws -> UInt64? {
        let records = tree(for: entityID, schemaVersion: schemaVersion)
        guard let indexes = records.indexes else { return nil }
        return try indexes.uniqueMatch(bytes, excluding: excluding, records: records)
    }

    /// Makes the store's indexes exactly those `version` declares: one per attribute (inherited
    /// ones included) marked indexed or unique, per entity. Indexes no longer declared, or
    /// declared with another default or uniqueness, are dropped (their pages freed); missing
    /// ones are built from every record of their entity, in this transaction — so an index is
    /// never seen partly built. Costs nothing when nothing changed.
    /// - Throws: `RecordTreeError.uniqueConstraintViolation` when records already repeat a
    ///   value of an attribute that becomes unique; storage errors.
    package func reconcileIndexes(with version: CatalogVersion) throws {
        var declared: [StoreRoot.IndexID: StoreRoot.Index] = [:]
        for entity in version.entities {
            for attribute in version.resolvedAttributes(ofEntity: entity.id) where attribute.isIndexed || attribute.isUnique {
                declared[StoreRoot.IndexID(entityID: entity.id, attributeID: attribute.id)] =
                    StoreRoot.Index(isUnique: attribute.isUnique, defaultKey: IndexKey.encode(attribute.defaultValue))
            }
        }
        for (id, index) in root.indexes.sorted(by: { $0.key < $1.key }) where !(declared[id]?.sameDefinition(as: index) ?? false) {
            try dropIndex(id)
        }
        for (id, index) in declared.sorted(by: { $0.key < $1.key }) where root.indexes[id] == nil {
            try buildIndex(id, index, schemaVersion: version.id)
        }
    }

    /// Frees an index's pages and removes it from the store root.
    package func dropIndex(_ id: StoreRoot.IndexID) throws {
        guard root.indexes[id] != nil else { return }
        try indexWriter(id, schemaVersion: 0).destroy()
        forgetIndex(id)
        attachIndexes(of: id.entityID)
    }

    /// Builds a new index from every record of its entity: entries are inserted in sorted
    /// batches of at most half the dirty budget (memory stays bounded), then a unique index is
    /// checked for repeated values.
    package func buildIndex(_ id: StoreRoot.IndexID, _ index: StoreRoot.Index, schemaVersion: UInt32) throws {
        try dropIndex(id)
        addIndex(id, StoreRoot.Index(isUnique: index.isUnique, defaultKey: index.defaultKey))
        let writer = indexWriter(id, schemaVersion: schemaVersion)
        let records = tree(for: id.entityID, schemaVersion: schemaVersion)
        var batch: [[UInt8]] = []
        var batchBytes = 0
        func flush() throws {
            batch.sort { IndexNode.compare($0, $1) < 0 }
            for entry in batch { try writer.insert(entry) }
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
        }
        try records.scan { recordID, bytes in
            let key = try EntityIndexes.valueKey(of: id.attributeID, defaultKey: index.defaultKey, in: bytes,
                                                 entityID: id.entityID, id: recordID)
            batch.append(IndexKey.entry(key, id: recordID))
            batchBytes += key.count + 40
            if batchBytes > options.dirtyBudget / 2 { try flush() }
            return true
        }
        try flush()
        if index.isUnique { try checkUnique(id, writer: writer, records: records, defaultKey: index.defaultKey) }
        attachIndexes(of: id.entityID)
    }

    /// Throws `uniqueConstraintViolation` for the first two records that hold one non-null value.
    private func checkUnique(_ id: StoreRoot.IndexID, writer: IndexTreeWriter, records: RecordTreeWriter, defaultKey: [UInt8]) throws {
        var group: (stored: [UInt8], ids: [UInt64])?
        var violation: (UInt64, UInt64)?
        func checkGroup() throws {
            guard let group, group.ids.count > 1, group.stored != IndexKey.nullKey else { return }
            guard group.stored.count >= IndexKey.maximumStoredLength else {
                violation = (group.ids[1], group.ids[0])
                return
            }
            // Values cut to the same 512 bytes: compare their full keys.
            var seen: [[UInt8]: UInt64] = [:]
            for recordID in group.ids {
                guard let bytes = try records.get(recordID) else {
                    throw RecordTreeError.corruptNode(pageID: 0, reason: "an index of entity \(id.entityID) names record \(recordID), which does not exist")
                }
                let key = try EntityIndexes.valueKey(of: id.attributeID, defaultKey: defaultKey, in: bytes, entityID: id.entityID, id: recordID)
                if let earlier = seen.updateValue(recordID, forKey: key) {
                    violation = (recordID, earlier)
                    return
                }
            }
        }
        try writer.scan(from: []) { entry in
            let stored = Array(entry.dropLast(8)), recordID = IndexKey.recordID(ofEntry: entry)
            if group?.stored == stored {
                group?.ids.append(recordID)
                return true
            }
            try checkGroup()
            group = (stored, [recordID])
            return violation == nil
        }
        if violation == nil { try checkGroup() }
        if let (recordID, existingID) = violation {
            throw RecordTreeError.uniqueConstraintViolation(entityID: id.entityID, attributeID: id.attributeID,
                                                            recordID: recordID, existingID: existingID)
        }
    }
}

extension RecordSnapshot {
    /// Whether the entity has an index on the attribute (declared indexed or unique).
    package func hasIndex(entityID: UInt32, attributeID: UInt32) -> Bool {
        root.indexes[StoreRoot.IndexID(entityID: entityID, attributeID: attributeID)] != nil
    }

    /// The reader of an index, or nil when there is none.
    package func indexReader(entityID: UInt32, attributeID: UInt32) -> IndexTreeReader? {
        root.indexes[StoreRoot.IndexID(entityID: entityID, attributeID: attributeID)].map {
            IndexTreeReader(snapshot: snapshot, root: $0.tree, cache: cache)
        }
    }

    /// Calls `body` with the id of every record whose value of the attribute `range` may hold,
    /// in index order (value, then id), until it returns false. Records that lack the attribute
    /// are keyed by its default (null when none). Candidates: re-check each with the real
    /// condition (see `IndexRange`).
    /// - Throws: `RecordTreeError.noIndex` when there is no such index; storage errors.
    package func scanIndex(entityID: UInt32, attributeID: UInt32, range: IndexRange, _ body: (UInt64) throws -> Bool) throws {
        guard let reader = indexReader(entityID: entityID, attributeID: attributeID) else {
            throw RecordTreeError.noIndex(entityID: entityID, attributeID: attributeID)
        }
        try reader.scan(range, body)
    }

    /// `scanIndex`, passing with each id whether its entry is exact: its key was stored whole,
    /// so the record's value is in `range` (false: a candidate, to re-check). Nil — nothing
    /// scanned — when a bound of `range` is a value whose key is stored cut.
    /// - Throws: `RecordTreeError.noIndex` when there is no such index; storage errors.
    package func scanIndexExactly(entityID: UInt32, attributeID: UInt32, range: IndexRange,
                                  _ body: (UInt64, Bool) throws -> Bool) throws -> Void? {
        guard let reader = indexReader(entityID: entityID, attributeID: attributeID) else {
            throw RecordTreeError.noIndex(entityID: entityID, attributeID: attributeID)
        }
        guard range.boundsAreWhole else { return nil }
        try range.scanEntries(using: reader.scan(from:_:)) { id, cut in try body(id, !cut) }
        return ()
    }

    /// The ids `scanIndex` passes, in index order.
    package func indexedIDs(entityID: UInt32, attributeID: UInt32, range: IndexRange) throws -> [UInt64] {
        var ids: [UInt64] = []
        try scanIndex(entityID: entityID, attributeID: attributeID, range: range) { ids.append($0); return true }
        return ids
    }

    /// The unique attributes of an entity, with the keys records lacking them take.
    package func uniqueAttributes(of entityID: UInt32) -> [(attributeID: UInt32, defaultKey: [UInt8])] {
        root.indexes(of: entityID).filter(\.index.isUnique).map { ($0.attributeID, $0.index.defaultKey) }
    }

    /// The records whose value of a unique (or any indexed) attribute has exactly the full key
    /// `key` (records are read to compare values whose keys were cut).
    package func recordIDs(entityID: UInt32, attributeID: UInt32, key: [UInt8]) throws -> [UInt64] {
        let id = StoreRoot.IndexID(entityID: entityID, attributeID: attributeID)
        guard let index = root.indexes[id], let entries = indexReader(entityID: entityID, attributeID: attributeID) else {
            throw RecordTreeError.noIndex(entityID: entityID, attributeID: attributeID)
        }
        let records = reader(for: entityID)
        return try EntityIndexes.exactMatches(of: key, attributeID: attributeID, defaultKey: index.defaultKey, entityID: entityID,
                                              scan: entries.scan(from:_:), record: records.get)
    }

    /// The full index key of one attribute of a record's bytes (the default's key when absent).
    /// - Throws: `RecordTreeError.invalidRecord`.
    package static func indexKey(of attributeID: UInt32, defaultKey: [UInt8], in bytes: [UInt8], entityID: UInt32) throws -> [UInt8] {
        try EntityIndexes.valueKey(of: attributeID, defaultKey: defaultKey, in: bytes, entityID: entityID, id: 0)
    }
}

extension RecordSnapshot {
    /// Checks invariant 22 for every index: its entries are exactly (key of the record's value,
    /// record id) for every record of its entity, in ascending order, and a unique index holds
    /// no non-null value twice. Reads everything: for tests and tools.
    /// - Throws: `RecordTreeError.corruptNode` describing the first difference.
    package func checkIndexInvariants() throws {
        for (id, index) in root.indexes.sorted(by: { $0.key < $1.key }) {
            func fail(_ reason: String) -> RecordTreeError {
                .corruptNode(pageID: index.tree.rootPageID, reason: "index (\(id.entityID), \(id.attributeID)): \(reason)")
            }
            var expected: [[UInt8]] = []
            try reader(for: id.entityID).scan { recordID, raw in
                let bytes = [UInt8](raw)
                let key = try EntityIndexes.valueKey(of: id.attributeID, defaultKey: index.defaultKey, in: bytes,
                                                     entityID: id.entityID, id: recordID)
                expected.append(IndexKey.entry(key, id: recordID))
                return true
            }
            expected.sort { IndexNode.compare($0, $1) < 0 }
            var found: [[UInt8]] = []
            try IndexTreeReader(snapshot: snapshot, root: index.tree, cache: cache).scan(from: []) { found.append($0); return true }
            guard found == expected else { throw fail("\(found.count) entries differ from the \(expected.count) its records give") }
            guard UInt64(found.count) == index.tree.count else { throw fail("counts \(index.tree.count) for \(found.count) entries") }
            if index.isUnique {
                for (a, b) in zip(found, found.dropFirst()) where a.dropLast(8) == b.dropLast(8) && Array(a.dropLast(8)) != IndexKey.nullKey
                    && a.count - 8 < IndexKey.maximumStoredLength {
                    throw fail("records \(IndexKey.recordID(ofEntry: a)) and \(IndexKey.recordID(ofEntry: b)) repeat a unique value")
                }
            }
        }
    }
}
