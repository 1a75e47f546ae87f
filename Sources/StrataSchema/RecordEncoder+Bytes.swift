extension RecordEncoder {
    /// The record's bytes in the ``RecordCodec`` encoding, keyed by the attribute ids of one
    /// catalog version (`CatalogVersion.attributeIDs(ofEntity:)`).
    ///
    /// - Throws: as ``encode(_:)``, and ``RecordCodingError/unknownAttribute(type:attribute:)``
    ///   for a non-null value whose attribute has no id (the type does not match the version).
    package func encode<Record: Encodable>(_ record: Record, attributeIDs: [String: UInt32]) throws(RecordCodingError) -> [UInt8] {
        var byID: [UInt32: Value] = [:]
        for (name, value) in try encode(record).sorted(by: { $0.key < $1.key }) {  // sorted: the same error every run
            guard let id = attributeIDs[name] else { throw .unknownAttribute(type: String(describing: Record.self), attribute: name) }
            byID[id] = value
        }
        return RecordCodec.encode(byID)
    }
}
