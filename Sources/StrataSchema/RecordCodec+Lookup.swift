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
        var reader = RecordFieldReader(buffer)
        let count = try reader.readHeader()
        var previous: UInt32?
        for _ in 0..<count {
            let id = try reader.readAttributeID(after: previous)
            if id > attributeID { return .null }
            if id == attributeID { return try reader.readFieldValue(id: id) }
            try reader.skipPayload(of: try reader.readFieldTag(id: id), id: id)
            previous = id
        }
        return .null
    }

    /// The value of one attribute of a record held in an array; see the buffer variant.
    package static func value(of attributeID: UInt32, in bytes: [UInt8]) throws(FormatError) -> Value {
        let result = bytes.withUnsafeBytes { buffer -> Result<Value, FormatError> in
            do throws(FormatError) { return .success(try value(of: attributeID, in: buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
