import StrataSchema

/// A fetched record together with its identifier. Properties of the record can be read
/// directly: `result.fullName` is `result.record.fullName`.
@dynamicMemberLookup
public struct Identified<Record: PersistentRecord> {
    /// The record's identifier (use it to update or delete the record).
    public let id: RecordID<Record>
    /// The record's values.
    public var record: Record

    /// Pairs an identifier with a record.
    @inlinable
    public init(id: RecordID<Record>, record: Record) {
        self.id = id
        self.record = record
    }

    /// Reads a property of the record.
    public subscript<Value>(dynamicMember keyPath: KeyPath<Record, Value>) -> Value { record[keyPath: keyPath] }
}

extension Identified: Equatable where Record: Equatable {}
extension Identified: Sendable where Record: Sendable {}
