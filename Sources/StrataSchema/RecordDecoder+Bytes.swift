extension RecordDecoder {
    /// A record from values decoded by ``RecordCodec``, named through one catalog version's
    /// attribute ids (id → name). Values whose id the version does not name (attributes
    /// dropped since the record was written) are ignored.
    ///
    /// - Throws: as ``decode(_:from:)``.
    package func decode<Record: Decodable>(_ type: Record.Type, from values: [UInt32: Value],
                                           attributeNames: [UInt32: String]) throws(RecordCodingError) -> Record
    {
        var named: [String: Value] = [:]
        for (id, value) in values {
            if let name = attributeNames[id] { named[name] = value }
        }
        return try decode(type, from: named)
    }
}
