import StrataFormat

// The numbers that stand for schema enums on disk (schema catalog) and in the checksum's
// canonical form. On-disk numbers are never reused or renumbered: a retired number stays
// listed here and in Docs/FileFormat.md. Swift declaration order never decides a number.

extension AttributeType {
    /// 1 bool, 2 int, 3 double, 4 string, 5 data, 6 date, 7 uuid, 8 codable.
    package var storageTag: UInt8 {
        switch self {
        case .bool: 1
        case .int: 2
        case .double: 3
        case .string: 4
        case .data: 5
        case .date: 6
        case .uuid: 7
        case .codable: 8
        }
    }

    /// Appends the tag, then (codable only) the type name as a length-prefixed string.
    package func append(to writer: inout ByteWriter) {
        writer.append(storageTag)
        if case .codable(let typeName) = self { writer.appendLengthPrefixed(typeName) }
    }

    /// Reads what `append(to:)` wrote.
    /// - Throws: `FormatError` for an unknown tag or an invalid type name.
    package static func read(from reader: inout ByteReader) throws -> AttributeType {
        let start = reader.position
        switch try reader.read(UInt8.self, "attribute type") {
        case 1: return .bool
        case 2: return .int
        case 3: return .double
        case 4: return .string
        case 5: return .data
        case 6: return .date
        case 7: return .uuid
        case 8: return .codable(typeName: try reader.readString("codable type name"))
        case let other: throw FormatError("unknown attribute type \(other)", at: start)
        }
    }
}

extension Relationship.Cardinality {
    /// 1 to-one, 2 to-many.
    package var storageTag: UInt8 {
        switch self {
        case .toOne: 1
        case .toMany: 2
        }
    }

    /// The cardinality stored as `tag`, or nil for an unknown number.
    package init?(storageTag tag: UInt8) {
        switch tag {
        case 1: self = .toOne
        case 2: self = .toMany
        default: return nil
        }
    }
}

extension Relationship.DeleteRule {
    /// 1 nullify, 2 cascade, 3 deny, 4 no action.
    package var storageTag: UInt8 {
        switch self {
        case .nullify: 1
        case .cascade: 2
        case .deny: 3
        case .noAction: 4
        }
    }

    /// The delete rule stored as `tag`, or nil for an unknown number.
    package init?(storageTag tag: UInt8) {
        switch tag {
        case 1: self = .nullify
        case 2: self = .cascade
        case 3: self = .deny
        case 4: self = .noAction
        default: return nil
        }
    }
}

/// Bits of the attribute flags byte (catalog and checksum).
package enum AttributeFlags {
    package static let optional: UInt8 = 1 << 0
    package static let unique: UInt8 = 1 << 1
    package static let indexed: UInt8 = 1 << 2
    package static let all: UInt8 = optional | unique | indexed
    /// Catalog format 3: the attribute's original name follows its default.
    package static let originalName: UInt8 = 1 << 3

    /// The flags of the storage-relevant properties of `attribute` (not preserveValueOnDeletion).
    package static func of(_ attribute: Attribute) -> UInt8 {
        (attribute.isOptional ? optional : 0) | (attribute.options.contains(.unique) ? unique : 0)
            | (attribute.options.contains(.indexed) ? indexed : 0)
    }
}
