import StrataRecords
import StrataSchema

/// A custom stage's rewrite of every record of one entity: each record of the old version
/// is read as `Old`, handed to the transform together with nothing else to look up, and the
/// `New` it returns is written under the same identifier — the old value and the new one side
/// by side, in one step. Returning nil drops the record.
///
/// The records are streamed in identifier order, in batches (`MigrationStage.custom(…batchSize:)`):
/// memory stays bounded whatever the store's size, every batch is committed durably with the
/// stage's progress (a killed migration resumes after the last batch), and the old version
/// stays untouched — the new records go to a shadow tree that replaces the entity's tree in
/// one switch when every record is done (Architecture.md, invariant 23).
///
/// ```swift
/// .custom(fromVersion: SchemaV1.self, toVersion: SchemaV2.self, transforms: [
///     .map(SchemaV1.Person.self, to: SchemaV2.Person.self) { old in
///         let parts = old.fullName.split(separator: ", ", maxSplits: 1).map(String.init)
///         return SchemaV2.Person(lastName: parts.first ?? "", firstName: parts.count > 1 ? parts[1] : "")
///     },
/// ], willMigrate: nil, didMigrate: nil)
/// ```
public struct RecordTransform {
    /// The old entity's name (in the stage's `fromVersion`).
    public let sourceEntity: String
    /// The entity the new records go to (in the stage's `toVersion`).
    public let targetEntity: String
    let apply: (UnsafeRawBufferPointer, TransformEnvironment) throws -> [UInt8]?

    /// Rewrites each record of `Old`'s entity as a `New` (nil drops it).
    public static func map<Old: PersistentRecord, New: PersistentRecord>(
        _ old: Old.Type, to new: New.Type, _ transform: @escaping (Old) throws -> New?
    ) -> RecordTransform {
        map(old, to: new) { record, _ in try transform(record) }
    }

    /// Rewrites each record of `Old`'s entity as a `New` (nil drops it); the transform may also
    /// insert records of other entities of the new version through `writer` (moving data into
    /// a new entity).
    public static func map<Old: PersistentRecord, New: PersistentRecord>(
        _ old: Old.Type, to new: New.Type, _ transform: @escaping (Old, MigrationWriter) throws -> New?
    ) -> RecordTransform {
        RecordTransform(sourceEntity: Old.entityName, targetEntity: New.entityName) { bytes, environment in
            let record: Old
            do { record = try environment.old.decode(Old.self, from: bytes, layout: environment.oldLayout) } catch {
                throw StrataError.recordCoding(reason: "reading \(Old.entityName) as \(Old.self) of the old version: \(error)")
            }
            guard let result = try transform(record, environment.writer) else { return nil }
            do { return try environment.new.encode(result, with: environment.session) } catch {
                throw StrataError.recordCoding(reason: "writing \(New.self) of the new version: \(error)")
            }
        }
    }
}

/// What a transform's type-erased step reads and writes with.
struct TransformEnvironment {
    let old: SchemaBinding
    let oldLayout: RecordLayout
    let new: SchemaBinding
    /// Encodes the new records with the target entity's layout, reusing its state and buffer.
    let session: RecordEncodingSession
    let writer: MigrationWriter
}

/// Inserts records of the new version from inside a ``RecordTransform`` — into an entity the
/// new version adds, or into the transform's own target entity. They are written with the
/// batch that is running and become visible with the stage's switch. Valid only during the
/// transform call it was handed to.
public final class MigrationWriter {
    let binding: SchemaBinding
    /// Nil in a dry run's sample, where inserts are skipped.
    let transaction: RecordTransaction?
    /// Entity ids the stage may insert into (new in the target version, or a transform's target).
    let insertable: Set<UInt32>

    init(binding: SchemaBinding, transaction: RecordTransaction?, insertable: Set<UInt32>) {
        self.binding = binding
        self.transaction = transaction
        self.insertable = insertable
    }

    /// Inserts a record of the new version; returns its identifier.
    /// - Throws: `StrataError.unknownEntity` when the new version has no entity for `Record`,
    ///   `.invalidSchema` when the entity exists in the old version and is no transform's
    ///   target (its old records are not being rewritten), `.recordCoding`.
    @discardableResult
    public func insert<Record: PersistentRecord>(_ record: Record) throws -> RecordID<Record> {
        let encoded: (entityID: UInt32, bytes: [UInt8])
        do { encoded = try binding.encode(record) } catch SchemaBindingError.unknownEntity {
            throw StrataError.unknownEntity(Record.entityName)
        } catch {
            throw StrataError.recordCoding(reason: "\(error)")
        }
        guard let transaction else { return RecordID(rawValue: 0) }  // a dry run writes nothing
        guard insertable.contains(encoded.entityID) else {
            throw StrataError.invalidSchema(reason: "a transform inserted a \(Record.entityName), an entity the old version has "
                + "and no transform of this stage rewrites; insert only into new entities or a transform's target")
        }
        let tree = transaction.shadowTree(for: encoded.entityID, schemaVersion: binding.versionID)
        var id: UInt64 = 0
        transaction.updateMigration { marker in
            id = marker.shadows[encoded.entityID]?.nextRowID ?? 1
            marker.shadows[encoded.entityID]?.nextRowID = id + 1
        }
        try translatingErrors { try tree.insert(id, bytes: encoded.bytes) }
        return RecordID(rawValue: id)
    }
}
