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
/// one switch when every record is done (Architecture.md, invariant 27).
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
    /// One old record's rewrite: the new record's bytes — the environment's session's, valid
    /// until its next call — or nil to drop it.
    package let apply: (UnsafeRawBufferPointer, TransformEnvironment) throws -> UnsafeRawBufferPointer?
    /// The same rewrite, callable from several threads at once, each with an environment of
    /// its own: set for a transform declared pure (`mapConcurrently`), nil otherwise.
    package let concurrentApply: (@Sendable (UnsafeRawBufferPointer, TransformEnvironment) throws -> UnsafeRawBufferPointer?)?

    init(sourceEntity: String, targetEntity: String,
         apply: @escaping (UnsafeRawBufferPointer, TransformEnvironment) throws -> UnsafeRawBufferPointer?) {
        self.sourceEntity = sourceEntity
        self.targetEntity = targetEntity
        self.apply = apply
        concurrentApply = nil
    }

    init(sourceEntity: String, targetEntity: String,
         concurrentApply: @escaping @Sendable (UnsafeRawBufferPointer, TransformEnvironment) throws -> UnsafeRawBufferPointer?) {
        self.sourceEntity = sourceEntity
        self.targetEntity = targetEntity
        apply = concurrentApply
        self.concurrentApply = concurrentApply
    }

    /// Rewrites each record of `Old`'s entity as a `New` (nil drops it).
    @inlinable
    public static func map<Old: PersistentRecord, New: PersistentRecord>(
        _ old: Old.Type, to new: New.Type, _ transform: @escaping (Old) throws -> New?
    ) -> RecordTransform {
        map(old, to: new) { record, _ in try transform(record) }
    }

    /// Rewrites each record of `Old`'s entity as a `New` (nil drops it); the transform may also
    /// insert records of other entities of the new version through `writer` (moving data into
    /// a new entity).
    @inlinable
    public static func map<Old: PersistentRecord, New: PersistentRecord>(
        _ old: Old.Type, to new: New.Type, _ transform: @escaping (Old, MigrationWriter) throws -> New?
    ) -> RecordTransform {
        // Inlined, so the closure calling `transform` is specialized in the caller's module:
        // the library's generic code never handles a `New?` (its type metadata cost a lookup
        // per record).
        _sequential(old, new) { record, writer, encode in
            guard let result = try transform(record, writer) else { return false }
            try encode(result)
            return true
        }
    }

    /// Rewrites each record of `Old`'s entity as a `New` (nil drops it), as ``map(_:to:_:)-(_,_,(Old)->New?)``
    /// does — for a **pure** transform, with several threads at once.
    ///
    /// A pure transform's result depends on the old record alone: it changes no state outside
    /// itself (no counters, no caches, no collections shared between calls), does no I/O whose
    /// order matters, and — as `Old`'s `init(from:)` and `New`'s `encode(to:)` — may run on any
    /// thread. The compiler checks what it can: the closure is `@Sendable`, so it cannot capture
    /// a mutable variable or a non-`Sendable` reference. Splitting or reformatting a value,
    /// deriving one from others, converting units are pure; numbering records, inserting
    /// records of other entities (there is no `MigrationWriter`) or reading and writing a
    /// shared dictionary are not — use `map` for those.
    ///
    /// While the migration's thread reads the old records and writes the new ones in identifier
    /// order, records are decoded, transformed and encoded on up to three more threads (one
    /// fewer than the device's cores; none on a single core). What is stored is exactly what
    /// `map` stores with the same closure: the same records under the same identifiers, the
    /// same bytes, committed in the same batches with the same progress; a record the
    /// transform throws on fails the stage (the report names the first such record in
    /// identifier order) or, with `rejectedRecords: .quarantine`, is quarantined as with `map`.
    /// Only the number of records transformed before a failing stage stops may differ — which a
    /// pure transform cannot tell.
    ///
    /// ```swift
    /// .mapConcurrently(SchemaV1.Person.self, to: SchemaV2.Person.self) { old in
    ///     let parts = old.fullName.split(separator: ", ", maxSplits: 1).map(String.init)
    ///     return SchemaV2.Person(lastName: parts.first ?? "", firstName: parts.count > 1 ? parts[1] : "")
    /// }
    /// ```
    @inlinable
    public static func mapConcurrently<Old: PersistentRecord & SendableMetatype, New: PersistentRecord & SendableMetatype>(
        _ old: Old.Type, to new: New.Type, _ transform: @escaping @Sendable (Old) throws -> New?
    ) -> RecordTransform {
        _concurrent(old, new) { record, encode in
            guard let result = try transform(record) else { return false }
            try encode(result)
            return true
        }
    }

    /// `map`'s transform, as its inlined body hands it over: `body` transforms the record and
    /// passes the result to its encoding callback, returning false for a dropped record.
    @usableFromInline
    static func _sequential<Old: PersistentRecord, New: PersistentRecord>(
        _: Old.Type, _: New.Type, _ body: @escaping (Old, MigrationWriter, (New) throws -> Void) throws -> Bool
    ) -> RecordTransform {
        RecordTransform(sourceEntity: Old.entityName, targetEntity: New.entityName, apply: { bytes, environment in
            try rewrite(bytes, environment) { try body($0, environment.writer, $1) }
        })
    }

    /// `mapConcurrently`'s transform, as `_sequential`'s.
    @usableFromInline
    static func _concurrent<Old: PersistentRecord & SendableMetatype, New: PersistentRecord & SendableMetatype>(
        _: Old.Type, _: New.Type, _ body: @escaping @Sendable (Old, (New) throws -> Void) throws -> Bool
    ) -> RecordTransform {
        RecordTransform(sourceEntity: Old.entityName, targetEntity: New.entityName, concurrentApply: { bytes, environment in
            try rewrite(bytes, environment, body)
        })
    }

    /// One record's rewrite: `bytes` decoded as `Old` and handed to `body`, which passes the
    /// new record to be encoded into `environment`'s session, or drops it (nil).
    private static func rewrite<Old: PersistentRecord, New: PersistentRecord>(
        _ bytes: UnsafeRawBufferPointer, _ environment: TransformEnvironment, _ body: (Old, (New) throws -> Void) throws -> Bool
    ) throws -> UnsafeRawBufferPointer? {
        let record: Old
        do { record = try environment.old.decode(Old.self, from: bytes, session: environment.decoding) } catch {
            throw StrataError.recordCoding(reason: "reading \(Old.entityName) as \(Old.self) of the old version: \(error)")
        }
        var encoded = UnsafeRawBufferPointer(start: nil, count: 0)
        let kept = try body(record) { result in
            do { encoded = try environment.new.encodeInPlace(result, with: environment.session) } catch {
                throw StrataError.recordCoding(reason: "writing \(New.self) of the new version: \(error)")
            }
        }
        guard kept else { return nil }
        // An identifier a dry run handed out and app code kept is never stored (MigrationWriter).
        return try environment.writer.resolvingDryRunIDs(in: encoded) ?? encoded
    }
}

/// What a transform's type-erased step reads and writes with. Each thread that runs
/// transforms has one of its own (its session is not thread-safe); the bindings and layouts
/// are immutable.
package struct TransformEnvironment {
    let old: SchemaBinding
    let oldLayout: RecordLayout
    /// Decodes the old records with `oldLayout`, reusing its state.
    let decoding: RecordDecodingSession
    let new: SchemaBinding
    /// Encodes the new records with the target entity's layout, reusing its state and buffer.
    let session: RecordEncodingSession
    let writer: MigrationWriter

    package init(old: SchemaBinding, oldLayout: RecordLayout, new: SchemaBinding, session: RecordEncodingSession, writer: MigrationWriter) {
        self.old = old
        self.oldLayout = oldLayout
        decoding = RecordDecodingSession(layout: oldLayout)
        self.new = new
        self.session = session
        self.writer = writer
    }
}
