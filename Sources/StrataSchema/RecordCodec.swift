import StrataFormat

/// The compact binary form of one record's values, keyed by attribute id.
/// Docs/FileFormat.md, "Record encoding", is the specification.
///
/// ```
/// record := format:u8 (1; 2 when a field holds references; 3 when a field is null)
///           count:varint  field{count}
/// field  := attributeID:varint  tag:u8  payload        ; attribute ids strictly increasing
/// ```
///
/// An attribute without a value is absent: a record written before the attribute existed
/// reads the same, and takes the attribute's default. A *null field* (tag 0, format 3) says
/// the attribute holds no value even though it has a default: an optional attribute with a
/// default set to nil. Record writers write null fields only for such attributes
/// (`RecordLayout.nullablePositions`); decoding gives a null field as `.null`, and
/// ``encode(_:keepingNullFields:)`` leaves `.null` values out unless told to keep them (a
/// record decoded, changed and encoded again keeps its null fields). The encoding is
/// canonical (one byte string per set of values), which lets callers compare records by bytes.
/// Pure functions; safe from any thread.
///
/// One reader and one writer implement the encoding: `RecordFieldReader` parses it for every
/// path (whole records, one field, typed decoding, predicates), and the appends of
/// `RecordByteSink` write it, into an array (`RecordFieldWriter`), an encoding state's memory
/// (`RecordScratch`) or a `ByteWriter`.
package enum RecordCodec {
    /// The newest format byte this library reads. It writes format 1 for records without a
    /// ``Value/references(_:)`` value (byte for byte what earlier versions wrote) and format 2
    /// for records with one, so a reader that predates relationships reports such a record as
    /// a newer format instead of misreading it.
    package static let formatVersion: UInt8 = 3
    /// The format of records that hold no references and no null field.
    package static let baseFormat: UInt8 = 1
    /// The first format whose records may hold references (value tag 10).
    package static let referencesFormat: UInt8 = 2
    /// The format of records holding a null field (tag 0), references or not: a reader
    /// predating it reports a newer format instead of a corrupt record.
    package static let nullsFormat: UInt8 = 3

    /// The format byte of a record: the lowest that can hold what it holds.
    @inline(__always)
    package static func format(references: Bool, nulls: Bool) -> UInt8 {
        nulls ? nullsFormat : references ? referencesFormat : baseFormat
    }

    /// Encodes `values`, sorted by attribute id. A `.null` value is left out (no value), or,
    /// `keepingNullFields`, written as a null field (what decoding gave it as). Never fails.
    package static func encode(_ values: [UInt32: Value], keepingNullFields: Bool = false) -> [UInt8] {
        write(sortedFields: values.sorted { $0.key < $1.key }.compactMap { field in
            field.value.isNull && !keepingNullFields ? nil : (id: field.key, value: field.value)
        })
    }

    /// Encodes `fields`, in any order, `.null` values left out; for an id given more than once
    /// the last value wins. The same bytes as ``encode(_:keepingNullFields:)`` of the same values.
    package static func encode(fields: [(id: UInt32, value: Value)]) -> [UInt8] {
        var ascending = true
        for index in fields.indices.dropFirst() where fields[index - 1].id >= fields[index].id {
            ascending = false
            break
        }
        if ascending { return write(sortedFields: fields.filter { !$0.value.isNull }) }
        // Sorted by (id, position): stable whatever the sort, then the last of each id kept.
        let ordered = fields.enumerated().sorted { ($0.element.id, $0.offset) < ($1.element.id, $1.offset) }
        var unique: [(id: UInt32, value: Value)] = []
        unique.reserveCapacity(ordered.count)
        for (_, field) in ordered {
            if let last = unique.last, last.id == field.id { unique[unique.count - 1] = field } else { unique.append(field) }
        }
        return write(sortedFields: unique.filter { !$0.value.isNull })
    }

    /// Writes fields whose ids strictly increase; a `.null` value is a null field (tag 0).
    private static func write(sortedFields fields: [(id: UInt32, value: Value)]) -> [UInt8] {
        var references = false, nulls = false
        for field in fields {
            switch field.value {
            case .references: references = true
            case .null: nulls = true
            default: break
            }
        }
        var writer = RecordFieldWriter(reservingFor: fields)
        writer.append(format(references: references, nulls: nulls))
        writer.appendVarint(UInt64(fields.count))
        for (id, value) in fields {
            writer.appendVarint(UInt64(id))
            writer.append(value)
        }
        return writer.bytes
    }

    /// Decodes every value of a record.
    ///
    /// - Returns: Attribute id → value; absent attributes are not in the dictionary, a null
    ///   field is `.null`.
    /// - Throws: `FormatError` with the offset of the bad byte for an empty buffer, a format
    ///   byte of 0 or greater than 3 (`unsupportedVersion` set), a count larger than the bytes
    ///   could hold, attribute ids not strictly increasing or above `UInt32.max`, an unknown
    ///   tag (tag 10 in a format-1 record, tag 0 below format 3), a payload past the end,
    ///   invalid UTF-8 or varints, or bytes after the last field, or a record whose format is
    ///   not the lowest that holds its fields. Never traps; allocations are bounded by the input's length.
    package static func decode(_ buffer: UnsafeRawBufferPointer) throws(FormatError) -> [UInt32: Value] {
        var values: [UInt32: Value] = [:]
        for (id, value) in try decodeFields(buffer) { values[id] = value }
        return values
    }

    /// Decodes every value of a record as fields in the order stored: attribute ids strictly
    /// increasing, `.null` for a null field. Cheaper than `decode` (no dictionary).
    ///
    /// - Throws: as `decode`.
    package static func decodeFields(_ buffer: UnsafeRawBufferPointer) throws(FormatError) -> [(id: UInt32, value: Value)] {
        var reader = RecordFieldReader(buffer)
        let count = try reader.readHeader()
        var fields: [(id: UInt32, value: Value)] = []
        fields.reserveCapacity(count)
        var previous: UInt32?
        var holdsReferences = false, holdsNulls = false
        for _ in 0..<count {
            let id = try reader.readAttributeID(after: previous)
            let value = try reader.readFieldValue(id: id)
            switch value {
            case .references: holdsReferences = true
            case .null: holdsNulls = true
            default: break
            }
            fields.append((id, value))
            previous = id
        }
        guard reader.remaining == 0 else {
            throw FormatError("\(reader.remaining) bytes after the last field of the record", at: reader.position)
        }
        try checkCanonicalFormat(reader.format, references: holdsReferences, nulls: holdsNulls)
        return fields
    }

    /// Canonical form: a record is written in the lowest format that holds its fields.
    /// - Throws: `FormatError` at offset 0 for a record of a higher format.
    @inline(__always)
    static func checkCanonicalFormat(_ stored: UInt8, references: Bool, nulls: Bool) throws(FormatError) {
        let needed = format(references: references, nulls: nulls)
        guard stored == needed else { throw formatNotCanonical(stored, needed: needed) }
    }

    @inline(never)
    private static func formatNotCanonical(_ stored: UInt8, needed: UInt8) -> FormatError {
        FormatError("a record of format \(stored) holds " + (stored == nullsFormat ? "no null field" : "no references")
                    + "; it must be written in format \(needed)", at: 0)
    }

    /// The validating pass of decoding a typed record straight from its bytes: the same checks
    /// and errors as ``decodeFields(_:)`` (UTF-8 of every string included, whatever its id), but
    /// no values are built. For each field whose id is `ids[i]`, `fields[i]` is set to where
    /// it is; fields of other ids are checked and dropped; other entries are left as they are.
    ///
    /// - Parameter ids: ascending attribute ids; `fields` has room for `ids.count` spans.
    static func locateFields(_ buffer: UnsafeRawBufferPointer, ids: [UInt32], into fields: UnsafeMutablePointer<FieldSpan>) throws(FormatError) {
        if ids.withUnsafeBufferPointer({ locatePlainFields(buffer, ids: $0, into: fields) }) { return }
        try locateFieldsCarefully(buffer, ids: ids, into: fields)
    }

    /// `locateFields` of a record in format 1 whose count and ids are one byte each, whose
    /// values are plain (`plainValue`) and which holds no references — nearly every record —
    /// by plain loads and comparisons: the same checks (every string's UTF-8 included) and the
    /// same spans. False for anything else, every malformed record included:
    /// `locateFieldsCarefully` then walks it again, sets the same spans and throws the error.
    /// (Through the reader's throwing reads the walk cost ~140 instructions a field, a third of
    /// a point lookup's decoding.)
    @inline(__always)
    private static func locatePlainFields(_ buffer: UnsafeRawBufferPointer, ids: UnsafeBufferPointer<UInt32>,
                                          into fields: UnsafeMutablePointer<FieldSpan>) -> Bool {
        // Offsets are checked against `end` before each load and stay within the buffer plus 2,
        // so the arithmetic cannot overflow and wraps rather than checks.
        let end = buffer.count
        guard end >= 2, let base = buffer.baseAddress else { return false }
        var left = Int(base.load(fromByteOffset: 1, as: UInt8.self))
        guard base.load(as: UInt8.self) == baseFormat, left < 0x80, left <= (end &- 1) / 2 else { return false }
        var position = 2
        var previous = -1
        var k = 0
        while left > 0 {
            left &-= 1
            guard end &- position >= 2 else { return false }
            let id = Int(base.load(fromByteOffset: position, as: UInt8.self))
            guard id < 0x80, id > previous else { return false }
            previous = id
            guard let (span, next) = plainValue(base, end: end, tag: base.load(fromByteOffset: position &+ 1, as: UInt8.self),
                                                at: position &+ 2) else { return false }
            position = next
            // Both ascending by id: one merge walk.
            while k < ids.count && ids[k] < UInt32(truncatingIfNeeded: id) { k &+= 1 }
            if k < ids.count && ids[k] == UInt32(truncatingIfNeeded: id) { fields[k] = span }
        }
        return position == end  // no bytes after the last field
    }

    /// A varint at `start` in the record at `base` of `end` bytes, read as
    /// `RecordFieldReader.readVarint` reads it, when it is plain: at most nine bytes (63 bits),
    /// in shortest form, within the record. Its value and the offset past it; nil for anything
    /// else (the careful reads then decide: the same value, or an error).
    @inline(__always)
    static func plainVarint(_ base: UnsafeRawPointer, end: Int, at start: Int) -> (value: UInt64, end: Int)? {
        guard start < end else { return nil }
        let first = base.load(fromByteOffset: start, as: UInt8.self)
        if first < 0x80 { return (UInt64(first), start &+ 1) }
        var index = start &+ 1, value = UInt64(first & 0x7F), shift: UInt64 = 7
        while true {
            guard index < end, shift < 63 else { return nil }
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            value |= UInt64(byte & 0x7F) << shift
            index &+= 1
            if byte < 0x80 { return byte == 0 ? nil : (value, index) }
            shift &+= 7
        }
    }

    /// The value whose tag `tag` was read and whose payload starts at `start` in the record at
    /// `base` of `end` bytes, read as `RecordFieldReader.readFieldSpan` reads it, when it is
    /// plain: a tag other than null and references, its integer or length a plain varint
    /// (`plainVarint`), a string's bytes valid UTF-8, within the record. Its span and the
    /// offset past it; nil for anything else (the careful reads then decide: the same span,
    /// or an error).
    @inline(__always)
    static func plainValue(_ base: UnsafeRawPointer, end: Int, tag: UInt8, at start: Int) -> (span: FieldSpan, end: Int)? {
        // Offsets stay within the buffer plus 2 (lengths are checked against what is left): no
        // overflow.
        switch tag {
        case ValueTag.false.rawValue, ValueTag.true.rawValue:
            return (FieldSpan(tag: tag, bits: 0, count: 0), start)
        case ValueTag.int.rawValue:
            guard let (raw, next) = plainVarint(base, end: end, at: start) else { return nil }
            return (FieldSpan(tag: tag, bits: (raw >> 1) ^ (0 &- (raw & 1)), count: 0), next)
        case ValueTag.double.rawValue, ValueTag.date.rawValue:
            guard end &- start >= 8 else { return nil }
            return (FieldSpan(tag: tag, bits: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: start, as: UInt64.self)), count: 0), start &+ 8)
        case ValueTag.uuid.rawValue:
            guard end &- start >= 16 else { return nil }
            return (FieldSpan(tag: tag, offset: start, count: 16), start &+ 16)
        case ValueTag.string.rawValue, ValueTag.data.rawValue, ValueTag.codable.rawValue:
            guard let (length, bytesStart) = plainVarint(base, end: end, at: start), length <= UInt64(end &- bytesStart) else { return nil }
            let count = Int(length)
            if tag == ValueTag.string.rawValue {
                let bytes = UnsafeRawBufferPointer(start: base + bytesStart, count: count).bindMemory(to: UInt8.self)
                guard RecordFieldReader.isASCII(bytes) || RecordFieldReader.isValidUTF8(bytes) else { return nil }
            }
            return (FieldSpan(tag: tag, offset: bytesStart, count: count), bytesStart &+ count)
        default:
            return nil  // null, references (format 2), unknown
        }
    }

    /// `locateFields` through the reader's checked reads, for any record (and the tests'
    /// reference for `locatePlainFields`).
    static func locateFieldsCarefully(_ buffer: UnsafeRawBufferPointer, ids: [UInt32], into fields: UnsafeMutablePointer<FieldSpan>) throws(FormatError) {
        var position = 0
        try walkFields(buffer) { id, _, field, _ in
            // Both ascending by id: one merge walk.
            while position < ids.count && ids[position] < id { position += 1 }
            if position < ids.count && ids[position] == id { fields[position] = field }
        }
    }

    /// Decodes every value of a record held in an array as fields; see the buffer variant.
    package static func decodeFields(_ bytes: [UInt8]) throws(FormatError) -> [(id: UInt32, value: Value)] {
        // Typed all the way: a generic `decodingFormat` wrapper here was merged with `decode`'s
        // and looked up the result's type metadata on every call.
        let result = bytes.withUnsafeBytes { buffer -> Result<[(id: UInt32, value: Value)], FormatError> in
            do throws(FormatError) { return .success(try decodeFields(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Decodes every value of a record held in an array; see the buffer variant.
    package static func decode(_ bytes: [UInt8]) throws(FormatError) -> [UInt32: Value] {
        var values: [UInt32: Value] = [:]
        for (id, value) in try decodeFields(bytes) { values[id] = value }
        return values
    }
}
