import StrataSchema

/// What a failed migration reports (in `StrataError.migrationFailed`): enough to act on from a
/// crash report or a support request, without the store at hand. The store itself is exactly
/// as it was before the migration began.
public struct MigrationFailureReport: Sendable, Equatable, CustomStringConvertible {
    /// Which part of a stage failed.
    public enum Category: String, Sendable, Equatable {
        /// The stage's `willMigrate` closure threw (or saving its changes failed).
        case willMigrate
        /// The stage's `didMigrate` closure threw (or saving its changes failed).
        case didMigrate
        /// Changing the schema itself failed: the change needs records rewritten that the
        /// stage did not rewrite, or records violate a new unique constraint.
        case schemaChange
        /// A record transform threw, or its result could not be written (`recordID` names the
        /// old record).
        case transform
        /// Reading or writing the store failed (I/O, corruption).
        case storage
    }

    /// The store folder.
    public var storePath: String
    /// The schema version the store had before the migration.
    public var storedVersion: Schema.Version
    /// The schema version the migration was going to.
    public var targetVersion: Schema.Version
    /// The failing stage's position among the steps migrated (0-based).
    public var stageIndex: Int
    /// How many steps the migration had.
    public var stageCount: Int
    /// The failing stage's name ("custom SchemaV1 (1.0.0) → SchemaV2 (2.0.0)").
    public var stageName: String
    /// Which part of the stage failed.
    public var category: Category
    /// The record concerned, when known (such as `Person#42`).
    public var recordID: String?
    /// The error that made the stage fail, in words.
    public var underlyingError: String
    /// The store's size in bytes when the migration failed (before it was undone).
    public var storeBytes: UInt64
    /// Seconds from the start of the migration to the failure.
    public var seconds: Double

    /// A report of these facts (built by the migration runner).
    package init(storePath: String, storedVersion: Schema.Version, targetVersion: Schema.Version, stageIndex: Int, stageCount: Int,
                 stageName: String, category: Category, recordID: String?, underlyingError: String, storeBytes: UInt64,
                 seconds: Double) {
        self.storePath = storePath
        self.storedVersion = storedVersion
        self.targetVersion = targetVersion
        self.stageIndex = stageIndex
        self.stageCount = stageCount
        self.stageName = stageName
        self.category = category
        self.recordID = recordID
        self.underlyingError = underlyingError
        self.storeBytes = storeBytes
        self.seconds = seconds
    }

    /// A paragraph for a person.
    public var description: String {
        "migration of \(storePath) from \(storedVersion) to \(targetVersion) failed at stage \(stageIndex + 1) of \(stageCount) "
            + "(\(stageName)), in \(category.rawValue)\(recordID.map { ", record \($0)" } ?? ""): \(underlyingError). "
            + "The store (\(storeBytes) bytes) was left exactly as before the migration; \(Int((seconds * 1000).rounded())) ms spent"
    }
}
