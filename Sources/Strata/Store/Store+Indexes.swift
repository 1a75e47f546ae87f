import StrataRecords
import StrataSchema

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
        let snapshot = try snapshot()
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

extension Store {
    /// The index a fetch with `condition` should read for the records of `entityID`, and the
    /// range of values to read; nil when a full scan is the better plan (no index bounds the
    /// condition).
    ///
    /// Every candidate an index yields is checked against the predicate afterwards, so the
    /// range only has to hold every record the predicate can accept (`RecordCondition.range`).
    /// Preferred: an equality on a unique attribute, then any equality, then a range bounded on
    /// both sides, then on one. String ranges are used only with ASCII bounds (index keys
    /// order strings by their canonical composition's bytes, which agrees with Swift's `<`
    /// for them; equality agrees always).
    func indexPlan(for entityID: UInt32, condition: RecordCondition, in snapshot: RecordSnapshot)
        -> (attributeID: UInt32, range: IndexRange)?
    {
        var best: (score: Int, attributeID: UInt32, range: ValueRange)?
        for (attributeID, index) in snapshot.root.indexes(of: entityID) {
            guard let range = condition.range(of: attributeID) else { continue }
            let isEquality = range.lower != nil && range.lower == range.upper
            if !isEquality, !(Self.isASCIIOrNotString(range.lower?.value) && Self.isASCIIOrNotString(range.upper?.value)) { continue }
            let score = isEquality ? (index.isUnique ? 4 : 3) : (range.lower != nil && range.upper != nil ? 2 : 1)
            if score > best?.score ?? 0 { best = (score, attributeID, range) }
        }
        guard let best else { return nil }
        return (best.attributeID, IndexRange(lower: best.range.lower?.value, lowerInclusive: best.range.lower?.isInclusive ?? true,
                                             upper: best.range.upper?.value, upperInclusive: best.range.upper?.isInclusive ?? true))
    }

    private static func isASCIIOrNotString(_ value: Value?) -> Bool {
        guard case .string(let string)? = value else { return true }
        return string.utf8.allSatisfy { $0 < 0x80 }
    }
}
