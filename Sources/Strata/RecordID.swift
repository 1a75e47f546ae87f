@_exported import StrataSchema

/// The identifier of a stored record of type `Record`: stable for the record's lifetime, never
/// reused after it is deleted, and the same across launches and processes. (An identifier
/// handed out by `Context.insert` for a record that was never saved may be handed out again
/// after the store is reopened.)
///
/// Hashable, Comparable (in insertion order) and Codable (as a number), so apps can keep
/// identifiers in their own state and documents.
public struct RecordID<Record: PersistentRecord>: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The record's number within its entity (1, 2, …, in insertion order).
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

/// A fetched record together with its identifier. Properties of the record can be read
/// directly: `result.fullName` is `result.record.fullName`.
@dynamicMemberLookup
public struct Identified<Record: PersistentRecord> {
    /// The record's identifier (use it to update or delete the record).
    public let id: RecordID<Record>
    /// The record's values.
    public var record: Record

    /// Pairs an identifier with a record.
    public init(id: RecordID<Record>, record: Record) {
        self.id = id
        self.record = record
    }

    /// Reads a property of the record.
    public subscript<Value>(dynamicMember keyPath: KeyPath<Record, Value>) -> Value { record[keyPath: keyPath] }
}

extension Identified: Equatable where Record: Equatable {}
extension Identified: Sendable where Record: Sendable {}
