import StrataFormat

extension RecordCodec {
    /// The value of one attribute, found without decoding the rest of the record: fields
    /// before it are skipped (strings and data are not copied or validated), and the walk stops
    /// at the first larger attribute id.
    ///
    /// - Returns: The value, or `.null` when the record does not hold the attribute or holds
    ///   a null field for it (``storedValue(of:in:)`` tells the two apart).
    /// - Throws: `FormatError` for malformed bytes on the path walked (header, the skipped
    ///   fields' ids, tags and lengths, and the value returned). Bytes after the field found are
    ///   not checked; `decode` checks everything.
    package static func value(of attributeID: UInt32, in buffer: UnsafeRawBufferPointer) throws(FormatError) -> Value {
        try storedValue(of: attributeID, in: buffer) ?? .null
    }

    /// As ``value(of:in:)``, but nil when the record does not hold the attribute (it reads as
    /// its default) and `.null` for a null field (it reads as nil, whatever its default).
    package static func storedValue(of attributeID: UInt32, in buffer: UnsafeRawBufferPointer) throws(FormatError) -> Value? {
        var reader = RecordFieldReader(buffer)
        let count = try reader.readHeader()
        var previous: UInt32?
        for _ in 0..<count {
            let id = try reader.readAttributeID(after: previous)
            if id > attributeID { return nil }
            if id == attributeID { return try reader.readFieldValue(id: id) }
            try reader.skipPayload(of: try reader.readFieldTag(id: id), id: id)
            previous = id
        }
        return nil
    }

    /// The value of one attribute of a record held in an array; see the buffer variant.
    package static func value(of attributeID: UInt32, in bytes: [UInt8]) throws(FormatError) -> Value {
        let result = bytes.withUnsafeBytes { buffer -> Result<Value, FormatError> in
            do throws(FormatError) { return .success(try value(of: attributeID, in: buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// As ``storedValue(of:in:)``, for a record held in an array.
    package static func storedValue(of attributeID: UInt32, in bytes: [UInt8]) throws(FormatError) -> Value? {
        let result = bytes.withUnsafeBytes { buffer -> Result<Value?, FormatError> in
            do throws(FormatError) { return .success(try storedValue(of: attributeID, in: buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
