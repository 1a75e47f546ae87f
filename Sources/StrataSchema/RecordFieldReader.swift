#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat

/// The one reader of the record layer's encodings (Docs/FileFormat.md, "Record layer
/// conventions", "Values", "Record encoding"): varints, zigzag integers, length-prefixed bytes
/// and strings, values, and a record's header and fields. Every path that reads them goes
/// through it — decoding a record (`RecordCodec.decodeFields`, the validating pass of typed
/// decoding), looking up one field (`RecordCodec.value(of:in:)`, a predicate's
/// `StoredField.find`), and, through `ByteReader`'s helpers (ByteCoding+Varint.swift) and
/// `Value.read(from:_:)`, the schema catalog and the history journal. (Typed decoding, the
/// pre-filter's field lookup and the journal's comparison first walk plain records with plain
/// loads and the same checks — `RecordCodec.plainValue` — and leave every other record here.)
///
/// Non-generic over an `UnsafeRawBufferPointer`, so nothing is left unspecialized across a
/// module boundary (generic reads' type metadata lookups were once a fifth of decoding time).
/// Errors are `FormatError`s whose offsets are positions in `base`. The buffer must stay valid
/// while the reader is used. Never traps on malformed input.
struct RecordFieldReader {
    let base: UnsafeRawBufferPointer
    private(set) var position: Int
    /// The record's format byte, once the header was read.
    private(set) var format: UInt8 = 0

    /// A reader of `buffer` from `position` (offsets in errors count from the buffer's start).
    init(_ buffer: UnsafeRawBufferPointer, position: Int = 0) {
        base = buffer
        self.position = position
    }

    var remaining: Int { base.count - position }

    private func truncated(_ what: String, needs size: Int) -> FormatError {
        FormatError("truncated: \(what) needs \(size) bytes, \(max(0, remaining)) left", at: position)
    }

    @inline(__always)
    mutating func readByte(_ what: @autoclosure () -> String) throws(FormatError) -> UInt8 {
        guard position < base.count else { throw truncated(what(), needs: 1) }
        defer { position += 1 }
        return base[position]
    }

    mutating func readUInt64(_ what: @autoclosure () -> String) throws(FormatError) -> UInt64 {
        guard remaining >= 8 else { throw truncated(what(), needs: 8) }
        defer { position += 8 }
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
    }

    /// An unsigned LEB128 varint: 7 bits per byte, least significant first, 1 to 10 bytes.
    ///
    /// - Throws: `FormatError` (at the varint's first byte) when the bytes end inside it, when
    ///   it overflows 64 bits, or when it is not in its shortest form (a final byte of 0 after
    ///   another byte), so every number has exactly one encoding.
    @inline(__always)
    mutating func readVarint(_ what: @autoclosure () -> String) throws(FormatError) -> UInt64 {
        // One byte, the common case.
        if position < base.count, base[position] < 0x80 {
            defer { position += 1 }
            return UInt64(base[position])
        }
        return try readLongVarint(what())
    }

    private mutating func readLongVarint(_ what: @autoclosure () -> String) throws(FormatError) -> UInt64 {
        let start = position
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte(what())
            if shift == 63 && byte > 1 { throw FormatError("\(what()): varint overflows 64 bits", at: start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 { throw FormatError("\(what()): varint is not in its shortest form", at: start) }
                return result
            }
            shift += 7
        }
    }

    /// A varint checked against `maximum` before any use as a size or index.
    ///
    /// - Throws: `FormatError` when the varint is invalid or larger than `maximum`.
    @inline(__always)
    mutating func readVarint(atMost maximum: Int, _ what: @autoclosure () -> String) throws(FormatError) -> Int {
        let start = position
        let value = try readVarint(what())
        guard value <= UInt64(max(0, maximum)) else { throw Self.exceeds(what(), value, maximum, at: start) }
        return Int(value)
    }

    // Errors are made out of line, so the paths that inline the reads stay small.
    @inline(never)
    private static func exceeds(_ what: String, _ value: UInt64, _ maximum: Int, at offset: Int) -> FormatError {
        FormatError("\(what) \(value) exceeds the limit \(maximum)", at: offset)
    }

    /// A zigzag varint: 0, 1, 2, 3, … read as 0, -1, 1, -2, ….
    @inline(__always)
    mutating func readZigZag(_ what: @autoclosure () -> String) throws(FormatError) -> Int64 {
        let raw = try readVarint(what())
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// The bytes of a length-prefixed payload (a varint length, then the bytes), in place.
    @inline(__always)
    mutating func readLengthPrefixedSlice(_ what: @autoclosure () -> String) throws(FormatError) -> UnsafeRawBufferPointer {
        // The limit is the bytes left *before* the length: a length one too large passes it
        // and fails as truncated bytes (the error the format has always given).
        let count = try readVarint(atMost: remaining, "length of \(what())")
        guard remaining >= count else { throw truncated(what(), needs: count) }
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: base[position..<(position + count)])
    }

    /// A length-prefixed string that must be valid UTF-8 (never repaired).
    ///
    /// - Throws: `FormatError` as `readLengthPrefixedSlice`, or at the length for invalid UTF-8.
    @inline(__always)
    mutating func readString(_ what: @autoclosure () -> String) throws(FormatError) -> String {
        let start = position
        let bytes = try readLengthPrefixedSlice(what()).bindMemory(to: UInt8.self)
        // ASCII is valid UTF-8 as it is; `String(validating:)` costs a generic metadata lookup.
        if Self.isASCII(bytes) { return String(decoding: bytes, as: UTF8.self) }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw FormatError("\(what()) is not valid UTF-8", at: start)
        }
        return string
    }

    /// A record's header, the format byte and the field count, the reader being at the
    /// record's first byte (offset 0). The count is bounded by the bytes after the format
    /// byte (every field takes at least 2 bytes) in a record of `recordLength` bytes, of which
    /// the buffer may hold only the first (a prefix: see `StoredField.find`).
    ///
    /// - Throws: `FormatError` for a format byte of 0, or above `RecordCodec.formatVersion`
    ///   (`unsupportedVersion` set), or an invalid or too large count.
    @inline(__always)
    mutating func readHeader(recordLength: Int? = nil) throws(FormatError) -> Int {
        format = try readByte("record format byte")
        guard format != 0, format <= RecordCodec.formatVersion else { throw Self.invalidFormat(format) }
        return try readVarint(atMost: ((recordLength ?? base.count) - position) / 2, "record field count")
    }

    @inline(never)
    private static func invalidFormat(_ format: UInt8) -> FormatError {
        format == 0 ? FormatError("record format byte 0 is invalid", at: 0)
            : FormatError("record format \(format) is newer than \(RecordCodec.formatVersion)", at: 0, unsupportedVersion: UInt16(format))
    }

    /// A field's attribute id, which must be greater than the previous one and fit 32 bits.
    @inline(__always)
    mutating func readAttributeID(after previous: UInt32?) throws(FormatError) -> UInt32 {
        let start = position
        let raw = try readVarint("attribute id")
        guard let id = UInt32(exactly: raw) else { throw FormatError("attribute id \(raw) exceeds the limit \(UInt32.max)", at: start) }
        if let previous, id <= previous {
            throw FormatError("attribute id \(id) follows \(previous): ids must strictly increase", at: start)
        }
        return id
    }

    /// A field's tag: known, references only in a record of format 2 or 3, null only in a
    /// record of format 3.
    @inline(__always)
    mutating func readFieldTag(id: UInt32) throws(FormatError) -> ValueTag {
        let start = position
        let raw = try readByte("type tag of attribute \(id)")
        guard let tag = ValueTag(rawValue: raw), tag != .null || format >= RecordCodec.nullsFormat,
              tag != .references || format >= RecordCodec.referencesFormat else {
            throw FormatError(raw == 0 ? "attribute \(id) stores a null tag in a record of format \(format); null fields need format \(RecordCodec.nullsFormat)"
                                       : "unknown value tag \(raw) for attribute \(id)", at: start)
        }
        return tag
    }

    /// A field's tag and its payload (`.null` for a null field).
    mutating func readFieldValue(id: UInt32) throws(FormatError) -> Value {
        try readPayload(of: try readFieldTag(id: id), "value of attribute \(id)")
    }

    /// A value outside a record (a catalog default): a tag, null included, and its payload.
    ///
    /// - Throws: `FormatError` for an unknown tag, or as `readPayload(of:_:)`.
    mutating func readValue(_ what: @autoclosure () -> String) throws(FormatError) -> Value {
        let start = position
        let raw = try readByte("type tag of \(what())")
        guard let tag = ValueTag(rawValue: raw) else { throw FormatError("unknown value tag \(raw) for \(what())", at: start) }
        return try readPayload(of: tag, what())
    }

    /// The payload of a value whose tag was read (Docs/FileFormat.md, "Values").
    ///
    /// - Throws: `FormatError` for a payload running past the end, invalid UTF-8, an invalid
    ///   varint, or a references value breaking its rules (`readReferences`).
    @inline(__always)
    mutating func readPayload(of tag: ValueTag, _ what: @autoclosure () -> String) throws(FormatError) -> Value {
        switch tag {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int: return .int(try readZigZag(what()))
        case .double: return .double(Double(bitPattern: try readUInt64(what())))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try readUInt64(what()))))
        case .string: return .string(try readString(what()))
        case .data: return .data([UInt8](try readLengthPrefixedSlice(what())))
        case .codable: return .codable([UInt8](try readLengthPrefixedSlice(what())))
        case .uuid:
            guard remaining >= 16 else { throw truncated(what(), needs: 16) }
            var uuid = UUID().uuid
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: base[position..<(position + 16)])) }
            position += 16
            return .uuid(UUID(uuid: uuid))
        case .references: return .references(try readReferences(what()))
        }
    }

    /// Moves past the payload of the field `id`, whose tag was read, without building its
    /// value: a string's bytes are not checked to be UTF-8, and a references value's ids are
    /// read (each a valid varint) but not checked to be ≥ 1 and distinct. The walk of a field
    /// lookup and of the predicates' pre-filter, which check only what they read; decoding
    /// checks everything.
    ///
    /// - Throws: `FormatError` for a payload running past the end or an invalid varint.
    @inline(__always)
    mutating func skipPayload(of tag: ValueTag, id: UInt32) throws(FormatError) {
        // The common payloads by a few comparisons (a one-byte varint or length, within the
        // bytes); anything else, every malformed payload included, is skipped carefully from
        // the same position, so there is one source of errors.
        let size: Int
        switch tag {
        case .null, .false, .true: return
        case .double, .date: size = 8
        case .uuid: size = 16
        case .int, .string, .data, .codable:
            guard position < base.count, base[position] < 0x80 else { return try skipPayloadCarefully(of: tag, id: id) }
            size = tag == .int ? 1 : 1 + Int(base[position])
        case .references: return try skipPayloadCarefully(of: tag, id: id)
        }
        guard base.count - position >= size else { return try skipPayloadCarefully(of: tag, id: id) }
        position += size
    }

    /// `skipPayload` of any payload, with every check.
    @inline(never)
    private mutating func skipPayloadCarefully(of tag: ValueTag, id: UInt32) throws(FormatError) {
        switch tag {
        case .null, .false, .true: return
        case .int: _ = try readVarint("value of attribute \(id)")
        case .double, .date: try skip(8, "value of attribute \(id)")
        case .uuid: try skip(16, "value of attribute \(id)")
        case .string, .data, .codable: _ = try readLengthPrefixedSlice("value of attribute \(id)")
        case .references:
            let count = try readVarint(atMost: remaining, "count of value of attribute \(id)")
            for _ in 0..<count { _ = try readVarint("value of attribute \(id)") }
        }
    }

    @inline(__always)
    private mutating func skip(_ count: Int, _ what: @autoclosure () -> String) throws(FormatError) {
        guard remaining >= count else { throw truncated(what(), needs: count) }
        position += count
    }

    /// As `readFieldValue`, with the same checks and errors, but the value is not built: the
    /// span says where its payload is (or holds it, for a scalar). A string is checked to be
    /// valid UTF-8 without making a `String`; only references are read into a list (to find a
    /// repeated id), and not even that for a single one.
    @inline(__always)
    mutating func readFieldSpan(id: UInt32) throws(FormatError) -> FieldSpan {
        if let field = readPlainFieldSpan() { return field }
        return try readFieldSpanCarefully(id: id)
    }

    /// The common fields, read by a few comparisons: a tag other than references, an integer
    /// of up to nine bytes and, for a length, one byte. Anything else — every malformed field included — gives nil
    /// with the position unchanged, and `readFieldSpanCarefully` reads the field again and
    /// reports what is wrong, so there is one source of errors. (Reading every field carefully
    /// made the validating pass ~40 % dearer.)
    @inline(__always)
    private mutating func readPlainFieldSpan() -> FieldSpan? {
        guard position < base.count else { return nil }
        let tag = base[position]
        let payload = position + 1
        switch tag {
        case ValueTag.false.rawValue, ValueTag.true.rawValue:
            position = payload
            return FieldSpan(tag: tag, bits: 0, count: 0)
        case ValueTag.int.rawValue:
            // Up to nine bytes (63 bits) in shortest form; anything else is read carefully.
            var index = payload, raw: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard index < base.count, shift < 63 else { return nil }
                let byte = base[index]
                raw |= UInt64(byte & 0x7F) << shift
                index += 1
                if byte < 0x80 {
                    guard byte != 0 || shift == 0 else { return nil }
                    break
                }
                shift += 7
            }
            position = index
            return FieldSpan(tag: tag, bits: (raw >> 1) ^ (0 &- (raw & 1)), count: 0)
        case ValueTag.double.rawValue, ValueTag.date.rawValue:
            guard base.count - payload >= 8 else { return nil }
            position = payload + 8
            return FieldSpan(tag: tag, bits: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: payload, as: UInt64.self)), count: 0)
        case ValueTag.uuid.rawValue:
            guard base.count - payload >= 16 else { return nil }
            position = payload + 16
            return FieldSpan(tag: tag, offset: payload, count: 16)
        case ValueTag.string.rawValue, ValueTag.data.rawValue, ValueTag.codable.rawValue:
            guard payload < base.count, base[payload] < 0x80 else { return nil }
            let count = Int(base[payload])
            let start = payload + 1
            guard base.count - start >= count else { return nil }
            if tag == ValueTag.string.rawValue {
                let bytes = UnsafeRawBufferPointer(rebasing: base[start..<(start + count)]).bindMemory(to: UInt8.self)
                guard Self.isASCII(bytes) || Self.isValidUTF8(bytes) else { return nil }
            }
            position = start + count
            return FieldSpan(tag: tag, offset: start, count: count)
        default:
            // Null and unknown tags are errors; references need the format and a list checked.
            return nil
        }
    }

    /// `readFieldSpan` of any field, with every check of `readFieldValue`.
    @inline(never)
    private mutating func readFieldSpanCarefully(id: UInt32) throws(FormatError) -> FieldSpan {
        let tag = try readFieldTag(id: id)
        switch tag {
        case .null: return .null
        case .false, .true: return FieldSpan(tag: tag.rawValue, bits: 0, count: 0)
        case .int:
            let raw = try readVarint("value of attribute \(id)")
            return FieldSpan(tag: tag.rawValue, bits: (raw >> 1) ^ (0 &- (raw & 1)), count: 0)
        case .double, .date: return FieldSpan(tag: tag.rawValue, bits: try readUInt64("value of attribute \(id)"), count: 0)
        case .string:
            let start = position
            let bytes = try readLengthPrefixedSlice("value of attribute \(id)").bindMemory(to: UInt8.self)
            guard Self.isASCII(bytes) || Self.isValidUTF8(bytes) else {
                throw FormatError("value of attribute \(id) is not valid UTF-8", at: start)
            }
            return FieldSpan(tag: tag.rawValue, offset: position - bytes.count, count: bytes.count)
        case .data, .codable:
            let count = try readLengthPrefixedSlice("value of attribute \(id)").count
            return FieldSpan(tag: tag.rawValue, offset: position - count, count: count)
        case .uuid:
            guard remaining >= 16 else { throw truncated("value of attribute \(id)", needs: 16) }
            position += 16
            return FieldSpan(tag: tag.rawValue, offset: position - 16, count: 16)
        case .references:
            let start = position
            try skipReferences(id: id)
            return FieldSpan(tag: tag.rawValue, offset: start, count: position - start)
        }
    }

    /// The payload of a references value: a count from 1 to the bytes left, then that many
    /// distinct record ids, each ≥ 1.
    ///
    /// - Throws: `FormatError` for a count of 0 or past the end, an id of 0, a repeated id or
    ///   an invalid varint.
    mutating func readReferences(_ what: @autoclosure () -> String) throws(FormatError) -> [UInt64] {
        let countStart = position
        let count = try readVarint(atMost: remaining, "count of \(what())")
        guard count >= 1 else { throw FormatError("\(what()): an empty list of references is stored as absent", at: countStart) }
        var ids: [UInt64] = []
        ids.reserveCapacity(count)
        var seen = Set<UInt64>(minimumCapacity: count)
        for _ in 0..<count {
            let start = position
            let id = try readVarint(what())
            guard id >= 1 else { throw FormatError("\(what()): record id 0 is invalid", at: start) }
            guard seen.insert(id).inserted else { throw FormatError("\(what()): record id \(id) is listed twice", at: start) }
            ids.append(id)
        }
        return ids
    }

    /// `readReferences` without keeping the ids: a to-one relationship's single id is checked
    /// without building a list and a set; longer lists are read (a repeated id must be found).
    private mutating func skipReferences(id: UInt32) throws(FormatError) {
        let countStart = position
        let count = try readVarint(atMost: remaining, "count of value of attribute \(id)")
        if count == 1 {
            let start = position
            guard try readVarint("value of attribute \(id)") >= 1 else {
                throw FormatError("value of attribute \(id): record id 0 is invalid", at: start)
            }
            return
        }
        position = countStart
        _ = try readReferences("value of attribute \(id)")
    }

    /// Whether every byte is below 0x80: the bytes OR-ed together sixteen, then eight at a
    /// time, one test at the end (record strings are short: an early exit saves little and
    /// costs a branch per word). The bytes left after the last whole word are read as one
    /// word (or two halves) ending at the last byte, overlapping bytes already read, instead
    /// of one at a time.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let raw = UnsafeRawBufferPointer(bytes)
        let count = raw.count
        var seen: UInt64 = 0
        if count >= 8 {
            var index = 0
            while index + 16 <= count {
                seen |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    | raw.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)
                index += 16
            }
            if index + 8 <= count { seen |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) }
            seen |= raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        } else if count >= 4 {
            seen = UInt64(raw.loadUnaligned(fromByteOffset: 0, as: UInt32.self) | raw.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
        } else if count > 0 {
            // One to three bytes: the first, the middle and the last.
            seen = UInt64(raw[0] | raw[count / 2] | raw[count - 1])
        }
        return seen & 0x8080_8080_8080_8080 == 0
    }

    /// Whether `bytes` are well-formed UTF-8 as the Unicode standard defines it (table 3-7: no
    /// overlong forms, no surrogates, nothing above U+10FFFF) — exactly what
    /// `String(validating:as:)` accepts, checked without building a string.
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            // The sequence's length and the range of its second byte; later bytes are 80...BF.
            let length: Int
            var lowest: UInt8 = 0x80
            var highest: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lowest = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; highest = 0x9F
            case 0xF0: length = 4; lowest = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; highest = 0x8F
            default: return false
            }
            guard bytes.count - index >= length, bytes[index + 1] >= lowest, bytes[index + 1] <= highest else { return false }
            for offset in 2..<length where bytes[index + offset] & 0xC0 != 0x80 { return false }
            index += length
        }
        return true
    }
}

/// Where one field of a record is in its bytes, as the validating pass of decoding found it
/// (`RecordFieldReader.readFieldSpan`): typed decoding reads a payload from there, and builds
/// no ``Value`` unless it needs one. Plain data (offsets, not pointers), so keeping spans
/// cannot keep the bytes alive or dangle.
struct FieldSpan {
    /// The raw value of the field's ``ValueTag``; 0 (`.null`, which no stored field has) for an
    /// attribute the record does not hold.
    var tag: UInt8
    /// The payload: for `.int` the value's bits, for `.double` and `.date` the IEEE-754 bits;
    /// for `.string`, `.data`, `.codable` and `.uuid` the offset of its bytes (after the
    /// length), for `.references` the offset of the count.
    var bits: UInt64
    /// The payload's length in bytes, for the kinds that have an offset.
    var count: Int

    static let absent = FieldSpan(tag: 0, bits: 0, count: 0)
    /// A null field: the attribute holds no value, and not its default either. Its tag is 0
    /// like `absent`'s, so every check for a stored value (`tag != 0`) passes it by; the
    /// readers that apply defaults tell the two apart (`isNull`).
    static let null = FieldSpan(tag: 0, bits: 1, count: 0)

    /// Whether this is a null field (not an absent one).
    @inline(__always)
    var isNull: Bool { tag == 0 && bits == 1 }

    init(tag: UInt8, bits: UInt64, count: Int) {
        self.tag = tag
        self.bits = bits
        self.count = count
    }

    init(tag: UInt8, offset: Int, count: Int) {
        self.init(tag: tag, bits: UInt64(truncatingIfNeeded: offset), count: count)
    }

    var offset: Int { Int(truncatingIfNeeded: bits) }

    /// The payload's bytes in `record`, the buffer the span was read from.
    @inline(__always)
    func bytes(in record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: record[offset..<(offset + count)])
    }

    /// A `.string` field's value. The validating pass checked its bytes to be UTF-8; the
    /// string is still made by `String(decoding:as:)`, which checks (repairing, never
    /// trapping) again rather than trusting that check — bytes read in place from a mapped
    /// file could change in between, and an unchecked `String` of invalid UTF-8 is undefined
    /// behavior. (Skipping the second check saved ~1 % of a lookup.)
    @inline(__always)
    func string(in record: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes(in: record).bindMemory(to: UInt8.self), as: UTF8.self)
    }

    /// A `.date` field's value.
    @inline(__always)
    var date: Date { Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits)) }

    /// A `.uuid` field's value.
    func uuid(in record: UnsafeRawBufferPointer) -> UUID {
        UUID(uuid: record.loadUnaligned(fromByteOffset: offset, as: uuid_t.self))
    }

    /// The field's value as `RecordFieldReader.readFieldValue` builds it: `.null` when absent.
    func value(in record: UnsafeRawBufferPointer) -> Value {
        switch ValueTag(rawValue: tag) ?? .null {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int: return .int(Int64(bitPattern: bits))
        case .double: return .double(Double(bitPattern: bits))
        case .date: return .date(date)
        case .string: return .string(string(in: record))
        case .data: return .data([UInt8](bytes(in: record)))
        case .codable: return .codable([UInt8](bytes(in: record)))
        case .uuid: return .uuid(uuid(in: record))
        case .references:
            // Read once already by the validating pass, so this cannot fail.
            var reader = RecordFieldReader(bytes(in: record))
            return (try? reader.readReferences("references")).map(Value.references) ?? .null
        }
    }
}
