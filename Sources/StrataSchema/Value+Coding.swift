#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat

/// The one-byte tags of stored values. On-disk numbers: never reused, never renumbered.
/// Docs/FileFormat.md, "Values".
package enum ValueTag: UInt8, Sendable, CaseIterable {
    /// `.null`; appears only in the schema catalog (an attribute without default), never in records.
    case null = 0
    case `false` = 1
    case `true` = 2
    /// zigzag varint.
    case int = 3
    /// 8 bytes, the IEEE-754 bit pattern, little-endian.
    case double = 4
    /// varint length, UTF-8.
    case string = 5
    /// varint length, bytes.
    case data = 6
    /// 8 bytes: the bit pattern of seconds since 2001-01-01 00:00:00 UTC, little-endian.
    case date = 7
    /// 16 bytes, in UUID string order.
    case uuid = 8
    /// varint length, the encoded value.
    case codable = 9
    /// varint count (≥ 1), then that many distinct record ids (varint, ≥ 1). Only in records of
    /// format 2 (Docs/FileFormat.md, "Record encoding").
    case references = 10
}

extension Value {
    /// The tag this value is stored with.
    package var tag: ValueTag {
        switch self {
        case .null: .null
        case .bool(let value): value ? .true : .false
        case .int: .int
        case .double: .double
        case .string: .string
        case .data: .data
        case .date: .date
        case .uuid: .uuid
        case .codable: .codable
        case .references: .references
        }
    }

    /// Reads a value (a tag, null included, and its payload) outside a record: a catalog
    /// default (`RecordFieldReader.readValue`; appends are `RecordByteSink.append(_: Value)`).
    ///
    /// - Throws: `FormatError` for an unknown tag, a payload running past the end, invalid
    ///   UTF-8 or an invalid varint.
    package static func read(from reader: inout ByteReader, _ what: @autoclosure () -> String) throws -> Value {
        var valueReader = RecordFieldReader(reader.buffer, position: reader.position)
        defer { reader.advance(to: valueReader.position) }
        return try valueReader.readValue(what())
    }
}
