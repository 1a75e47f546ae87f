import StrataRecords

/// The range type of index lookups (see `StrataRecords.IndexRange`).
package typealias IndexRange = StrataRecords.IndexRange

extension Store {
    /// The records of `type` whose value of `attribute` an index lookup selects, in index order
    /// (value, then id), as of the latest save — the building block of index-driven fetches.
    /// Candidates: callers that need exact results re-check them with their predicate (values
    /// whose index keys pass 512 bytes are selected by their first 512 key bytes).
    /// - Throws: `StrataError.invalidSchema` when the attribute has no index (declare it
    ///   `.indexed` or `.unique`); `.unknownEntity`; `.recordCoding`; storage errors.
    package func indexedRecords<Record: PersistentRecord>(_ type: Record.Type, attribute: String,
                                                          range: IndexRange) throws -> [Identified<Record>] {
        let entityID = try entityID(of: type)
        guard let attributeID = binding.attributeID(named: attribute, ofEntity: entityID) else {
            throw StrataError.invalidSchema(reason: "\(Record.entityName) has no attribute \(attribute)")
        }
        let snapshot = try translating { try records.snapshot() }
        let reader = snapshot.reader(for: entityID)
        return try translating {
            try snapshot.indexedIDs(entityID: entityID, attributeID: attributeID, range: range).map { id in
                guard let bytes = try reader.get(id) else {
                    throw RecordTreeError.corruptNode(pageID: 0, reason: "an index of \(Record.entityName) names record \(id), which does not exist")
                }
                return Identified(id: RecordID(rawValue: id), record: try bytes.withUnsafeBytes { try decode(type, from: $0) })
            }
        }
    }
}
