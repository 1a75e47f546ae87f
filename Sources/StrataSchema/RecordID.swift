/// The identifier of a stored record of type `Record`: stable for the record's lifetime, never
/// reused after it is deleted, and the same across launches and processes. (An identifier
/// handed out by `Context.insert` for a record that was never saved may be handed out again
/// after the store is reopened.)
///
/// Identifiers are unique within an inheritance hierarchy: a sub-entity's records take their
/// numbers from the root entity's counter, so `RecordID<Animal>(rawValue: 7)` names exactly
/// one record, whether it is stored as an `Animal` or as a `Dog`.
///
/// A property of type `RecordID<Destination>?` (or `RecordID<Destination>`) is a to-one
/// relationship, and `[RecordID<Destination>]` a to-many relationship, to `Destination`'s
/// entity (see ``PersistentRecord/relationshipRules``).
///
/// Hashable, Comparable (in insertion order) and Codable (as a number), so apps can keep
/// identifiers in their own state and documents.
public struct RecordID<Record: PersistentRecord>: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The record's number within its inheritance hierarchy (1, 2, …, in insertion order).
    public let rawValue: UInt64

    /// An identifier from a number previously read from `rawValue`.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Insertion order.
    public static func < (a: RecordID, b: RecordID) -> Bool { a.rawValue < b.rawValue }

    /// Encodes as the bare number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Decodes from the bare number.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    /// `Person#42`.
    public var description: String { "\(Record.entityName)#\(rawValue)" }
}

/// A ``RecordID`` seen without its generic parameter: how entity discovery and the record
/// coders recognise a to-one relationship property and learn its destination.
package protocol RecordReference {
    /// The record type the identifier refers to.
    static var destinationType: any PersistentRecord.Type { get }
    var rawValue: UInt64 { get }
    init(rawValue: UInt64)
}

extension RecordID: RecordReference {
    package static var destinationType: any PersistentRecord.Type { Record.self }
}

/// An array of ``RecordID``s seen without its generic parameter: a to-many relationship property.
package protocol RecordReferenceList {
    static var destinationType: any PersistentRecord.Type { get }
    var rawValues: [UInt64] { get }
    init(rawValues: [UInt64])
}

extension Array: RecordReferenceList where Element: RecordReference {
    package static var destinationType: any PersistentRecord.Type { Element.destinationType }
    package var rawValues: [UInt64] { map(\.rawValue) }
    package init(rawValues: [UInt64]) { self = rawValues.map { Element(rawValue: $0) } }
}
