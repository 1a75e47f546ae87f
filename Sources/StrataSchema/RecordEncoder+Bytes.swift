extension RecordEncoder {
    /// The record's bytes in the ``RecordCodec`` encoding, keyed by the attribute ids of one
    /// catalog version (`CatalogVersion.attributeIDs(ofEntity:)`).
    ///
    /// - Throws: as ``encode(_:)``, and ``RecordCodingError/unknownAttribute(type:attribute:)``
    ///   for a non-null value whose attribute has no id (the type does not match the version).
    package func encode<Record: Encodable>(_ record: Record, attributeIDs: [String: UInt32]) throws(RecordCodingError) -> [UInt8] {
        try encode(record, layout: RecordLayout(attributes: attributeIDs.map { ($0.key, $0.value, .null) }))
    }

    /// The record's bytes in the ``RecordCodec`` encoding, keyed by the attribute ids of
    /// `layout`; what a schema binding calls, with a layout made once per entity.
    ///
    /// - Throws: as ``encode(_:attributeIDs:)``.
    package func encode<Record: Encodable>(_ record: Record, layout: RecordLayout) throws(RecordCodingError) -> [UInt8] {
        // Values go straight into the record's bytes; only names without an id are kept by name.
        let state = try run(record, RecordEncodingState(type: Record.self, layout: layout))
        if !state.values.isEmpty,
           let unknown = state.values.filter({ !$0.value.isNull }).keys.min()  // the least name: the same error every run
        {
            throw .unknownAttribute(type: String(describing: Record.self), attribute: unknown)
        }
        return state.encodedBytes()
    }
}
