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

    /// Appends the tag and the payload. The encoding is canonical: equal values (by `==`,
    /// except canonically equivalent but differently spelled strings) give equal bytes.
    package func append(to writer: inout ByteWriter) {
        writer.append(tag.rawValue)
        switch self {
        case .null, .bool: break
        case .int(let value): writer.appendZigZag(value)
        case .double(let value): writer.append(value.bitPattern)
        case .string(let value): writer.appendLengthPrefixed(value.utf8)
        case .data(let value), .codable(let value): writer.appendLengthPrefixed(value)
        case .date(let value): writer.append(value.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let value): withUnsafeBytes(of: value.uuid) { writer.append(bytes: $0) }
        case .references(let ids):
            writer.appendVarint(UInt64(ids.count))
            for id in ids { writer.appendVarint(id) }
        }
    }

    /// Reads a tag and its payload.
    ///
    /// - Throws: `FormatError` for an unknown tag, a payload running past the end, invalid
    ///   UTF-8 or an invalid varint.
    package static func read(from reader: inout ByteReader, _ what: @autoclosure () -> String) throws -> Value {
        let start = reader.position
        let raw = try reader.read(UInt8.self, "type tag of \(what())")
        guard let tag = ValueTag(rawValue: raw) else { throw FormatError("unknown value tag \(raw) for \(what())", at: start) }
        return try read(tag, from: &reader, what())
    }

    /// Reads the payload of a value whose tag was already read.
    package static func read(_ tag: ValueTag, from reader: inout ByteReader, _ what: @autoclosure () -> String) throws -> Value {
        switch tag {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int: return .int(try reader.readZigZag(what()))
        case .double: return .double(Double(bitPattern: try reader.read(UInt64.self, what())))
        case .string: return .string(try reader.readString(what()))
        case .data: return .data(try reader.readLengthPrefixed(what()))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.read(UInt64.self, what()))))
        case .uuid:
            let b = try reader.readBytes(16, what())
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                     b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case .codable: return .codable(try reader.readLengthPrefixed(what()))
        case .references: return .references(try readReferences(from: &reader, what()))
        }
    }

    /// Moves past the payload of a value whose tag was already read, without building it.
    package static func skip(_ tag: ValueTag, in reader: inout ByteReader, _ what: @autoclosure () -> String) throws {
        switch tag {
        case .null, .false, .true: return
        case .int: _ = try reader.readVarint(what())
        case .double, .date: try reader.skip(8, what())
        case .uuid: try reader.skip(16, what())
        case .string, .data, .codable: try reader.skip(try reader.readVarint(atMost: reader.remaining, "length of \(what())"), what())
        case .references:
            let count = try reader.readVarint(atMost: reader.remaining, "count of \(what())")
            for _ in 0..<count { _ = try reader.readVarint(what()) }
        }
    }

    /// Reads the payload of a references value: a count from 1 to the bytes left, then that many
    /// distinct ids, each ≥ 1.
    ///
    /// - Throws: `FormatError` for a count of 0 or past the end, an id of 0, a repeated id or an
    ///   invalid varint.
    static func readReferences(from reader: inout ByteReader, _ what: @autoclosure () -> String) throws -> [UInt64] {
        let countStart = reader.position
        let count = try reader.readVarint(atMost: reader.remaining, "count of \(what())")
        guard count >= 1 else { throw FormatError("\(what()): an empty list of references is stored as absent", at: countStart) }
        var ids: [UInt64] = []
        ids.reserveCapacity(count)
        var seen = Set<UInt64>(minimumCapacity: count)
        for _ in 0..<count {
            let start = reader.position
            let id = try reader.readVarint(what())
            guard id >= 1 else { throw FormatError("\(what()): record id 0 is invalid", at: start) }
            guard seen.insert(id).inserted else { throw FormatError("\(what()): record id \(id) is listed twice", at: start) }
            ids.append(id)
        }
        return ids
    }
}
