import StrataFormat

extension RecordCodec {
    /// The value of one attribute, found without decoding the rest of the record: fields
    /// before it are skipped (strings and data are not copied or validated), and the walk stops
    /// at the first larger attribute id.
    ///
    /// - Returns: The value, or `.null` when the record does not hold the attribute.
    /// - Throws: `FormatError` for malformed bytes on the path walked (header, the skipped
    ///   fields' ids, tags and lengths, and the value returned). Bytes after the field found are
    ///   not checked; `decode` checks everything.
    package static func value(of attributeID: UInt32, in buffer: UnsafeRawBufferPointer) throws(FormatError) -> Value {
        try decodingFormat {
            var reader = ByteReader(buffer)
            let (format, count) = try readHeader(&reader)
            var previous: UInt32?
            for _ in 0..<count {
                let id = try readAttributeID(&reader, after: previous)
                if id > attributeID { return .null }
                if id == attributeID { return try readFieldValue(&reader, id: id, format: format) }
                try Value.skip(try readFieldTag(&reader, id: id, format: format), in: &reader, "value of attribute \(id)")
                previous = id
            }
            return .null
        }
    }

    /// The value of one attribute of a record held in an array; see the buffer variant.
    package static func value(of attributeID: UInt32, in bytes: [UInt8]) throws(FormatError) -> Value {
        try decodingFormat { try bytes.withUnsafeBytes { try value(of: attributeID, in: $0) } }
    }
}
