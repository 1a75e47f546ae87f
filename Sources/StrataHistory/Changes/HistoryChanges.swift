#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataRecords
import StrataSchema

/// One committed transaction as the history journal recorded it.
public struct HistoryTransaction: Sendable, Identifiable, Equatable {
    /// The transaction's token.
    public let token: HistoryToken
    /// When it was committed (microsecond precision; never earlier than the transaction
    /// before it).
    public let timestamp: Date
    /// The author given to the context or write that made it (`Context.author`), or nil.
    /// Migrations are authored `"migration"`.
    public let author: String?
    /// For a migration's transaction that moved the store to a new schema version, that
    /// version; nil otherwise.
    public let schemaVersion: Schema.Version?
    /// Its changes, in the order they were written (`Context.save()` writes each entity's
    /// changes together, deletes first, then by record id). A filtered fetch keeps only the
    /// changes of the entities asked for.
    public let changes: HistoryChanges

    /// The token.
    public var id: HistoryToken { token }
}

/// What happened to one record (or, for a migration, to an entity's records).
public struct HistoryChange: Sendable, Equatable {
    /// The kind of change.
    public enum Kind: Sendable, Equatable {
        /// The record was inserted.
        case insert
        /// Some of its attributes changed (`updatedAttributes`).
        case update
        /// It was deleted (`tombstone` keeps its values marked `preserveValueOnDeletion`).
        case delete
        /// A migration stage rewrote the entity's records (`migratedRecords`).
        case migration
    }

    /// How many records a migration stage inserted, rewrote and deleted in an entity.
    public struct MigrationCounts: Sendable, Equatable {
        /// Records the stage inserted.
        public let inserted: Int
        /// Records the stage rewrote.
        public let updated: Int
        /// Records the stage deleted.
        public let deleted: Int

        /// Counts of records inserted, rewritten and deleted.
        public init(inserted: Int, updated: Int, deleted: Int) {
            self.inserted = inserted
            self.updated = updated
            self.deleted = deleted
        }
    }

    /// The kind of change.
    public let kind: Kind
    /// The name of the record's entity (its name in the store's current schema).
    public let entityName: String
    /// The record's number (`RecordID.rawValue`); 0 for a migration.
    public let recordNumber: UInt64
    /// For an update, each attribute whose value changed, with its old and new value.
    public let updatedAttributes: [AttributeChange]
    /// For a delete, the values of the record's attributes marked `preserveValueOnDeletion`
    /// (an attribute without a value is absent).
    public let tombstone: [String: Value]
    /// For a migration, how many records of the entity it changed.
    public let migratedRecords: MigrationCounts?

    /// The record's identifier as a `Record`, or nil when the change is about another entity
    /// (a record of a sub-entity of `Record`'s entity is one of `Record`'s).
    public func recordID<Record: PersistentRecord>(as type: Record.Type) -> RecordID<Record>? {
        guard kind != .migration, entityName == Record.entityName || lineage.contains(Record.entityName) else { return nil }
        return RecordID(rawValue: recordNumber)
    }

    /// The entity's ancestors' names (for `recordID(as:)`).
    let lineage: [String]
}

/// An attribute an update changed.
public struct AttributeChange: Sendable, Equatable {
    /// The attribute's name in the store's current schema.
    public let name: String
    /// Its value before (`.null`: none).
    public let oldValue: Value
    /// Its value after (`.null`: none).
    public let newValue: Value

    /// A change of attribute `name` from `oldValue` to `newValue`.
    public init(name: String, oldValue: Value, newValue: Value) {
        self.name = name
        self.oldValue = oldValue
        self.newValue = newValue
    }
}

/// A transaction's changes: a random-access collection in which a run of inserted records is
/// kept as one range, so a transaction that inserted a million records costs a few bytes
/// until its elements are read.
public struct HistoryChanges: RandomAccessCollection, Sendable, Equatable {
    enum Segment: Sendable, Equatable {
        case single(HistoryChange)
        /// Records `first ..< first + count` of an entity were inserted.
        case inserts(entityName: String, lineage: [String], first: UInt64, count: Int)

        var count: Int {
            switch self {
            case .single: 1
            case .inserts(_, _, _, let count): count
            }
        }
    }

    let segments: [Segment]
    /// `ends[i]`: the number of changes in segments 0...i.
    let ends: [Int]

    init(_ segments: [Segment]) {
        self.segments = segments
        var total = 0
        ends = segments.map { total += $0.count; return total }
    }

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of changes.
    public var endIndex: Int { ends.last ?? 0 }

    /// The change at `position`.
    public subscript(position: Int) -> HistoryChange {
        precondition(position >= 0 && position < endIndex, "HistoryChanges index out of range")
        var low = 0, high = ends.count - 1
        while low < high {
            let middle = (low + high) / 2
            if ends[middle] <= position { low = middle + 1 } else { high = middle }
        }
        switch segments[low] {
        case .single(let change): return change
        case .inserts(let entityName, let lineage, let first, let count):
            let offset = position - (ends[low] - count)
            return HistoryChange(kind: .insert, entityName: entityName, recordNumber: first + UInt64(offset), updatedAttributes: [],
                                 tombstone: [:], migratedRecords: nil, lineage: lineage)
        }
    }
}
