#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema

/// What a migration would do to a store, found without changing it
/// (`Store.dryRun(at:schema:migrationPlan:launchBudget:configuration:)`), so an app can decide
/// before its first frame whether to migrate now, show progress, or defer.
public struct MigrationEstimate: Sendable {
    /// One stage that would run.
    public struct Stage: Sendable {
        /// Its name ("custom SchemaV1 (1.0.0) → SchemaV2 (2.0.0)").
        public let name: String
        /// Whether it writes metadata only (a lightweight step).
        public let isMetadataOnly: Bool
        /// The records its transforms would rewrite.
        public let records: UInt64
        /// The time it should take on this device (see ``MigrationEstimate``).
        public let estimatedDuration: Duration
    }

    /// The store's schema version now (nil: a new store, which needs no migration).
    public let storedVersion: Schema.Version?
    /// The version the app opens it with.
    public let targetVersion: Schema.Version
    /// The stages that would run, in order (empty when the store is already current).
    public let stages: [Stage]
    /// Whether an interrupted migration is waiting to be finished.
    public let resumesInterruptedMigration: Bool
    /// The sum of the stages' estimates.
    public let estimatedDuration: Duration
    /// The budget compared against (by default 400 ms, the time to an app's first frame).
    public let launchBudget: Duration
    /// The stored values the migration would drop without any transform reading them (an
    /// attribute or relationship removed, an entity removed), counted in the store: what
    /// ``SchemaMigrationPlan/lint()`` warns about, with the numbers of this store.
    public let droppedValues: [DroppedValues]

    /// Stored values a step drops (``MigrationLintWarning/dropsStoredValues(schema:entity:property:probableMove:)``).
    public struct DroppedValues: Sendable, Equatable {
        /// The stage's name.
        public let stage: String
        /// The entity (its name in the step's old version).
        public let entity: String
        /// The attribute or relationship, or nil when the whole entity is removed.
        public let property: String?
        /// How many records of the store hold a value of it (all the entity's records for a
        /// removed entity). For a step after the first, counted on the store as it is now.
        public let values: UInt64
    }

    /// Whether the migration should finish within the launch budget (an app can migrate in
    /// its launch path); otherwise, show progress or defer.
    public var fitsLaunchBudget: Bool { estimatedDuration <= launchBudget }
}
