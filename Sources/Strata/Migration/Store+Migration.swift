import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataHistory
import StrataMigration

extension Store {
    /// Opens (creating when missing) the store in the folder at `path` for the current
    /// version of the app's schema, migrating it first when it was written with an older
    /// version of `migrationPlan`.
    ///
    /// The plan is validated before anything is read (``SchemaMigrationPlan/validate()``).
    /// Then, from the version the store was written with to `schema`, each step runs in the
    /// plan's order: a lightweight one (declared or not) writes the new catalog version only;
    /// a custom one runs its `willMigrate` on the old version, applies the schema change and
    /// runs its `didMigrate` on the new version; changes the closures leave unsaved are saved
    /// with the stage. The whole migration is one unit: if any part fails — or the app is
    /// killed — the store goes back to exactly what it was before (every file byte for byte),
    /// and the next open starts the migration again (Docs/Migrations.md).
    ///
    /// - Parameters:
    ///   - schema: The app's current schema version; the plan's last.
    ///   - migrationPlan: The plan, or nil: without one, lightweight differences are applied
    ///     automatically and any other difference throws `StrataError.schemaMismatch`.
    /// - Throws: ``MigrationPlanError`` for a plan that is not valid; `StrataError.storeIsNewer`
    ///   when the store was written with a newer version; `.unknownModelVersion` when its
    ///   schema is none of the plan's; `.migrationFailed` with a report when a stage fails;
    ///   and what `init(at:schema:configuration:)` throws.
    public convenience init(at path: String, schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
                            configuration: Configuration = Configuration()) throws {
        try self.init(at: path, schema: schema, migrationPlan: migrationPlan, configuration: configuration,
                      fileSystem: configuration.storage.fileSystem)
    }

    /// `init(at:schema:migrationPlan:configuration:)` through `fileSystem` (tests: the
    /// in-memory file system that simulates power loss).
    package convenience init(at path: String, schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)?,
                             configuration: Configuration, fileSystem: any FileSystem) throws {
        let plan: MigrationPlanCheck
        if let migrationPlan {
            plan = try MigrationPlanCheck(plan: migrationPlan)
            guard let last = plan.versions.last, ObjectIdentifier(last.type) == ObjectIdentifier(schema) else {
                throw MigrationPlanError.currentSchemaNotLast(current: schema.displayName, last: plan.versions.last?.name ?? "none")
            }
        } else {
            plan = try MigrationPlanCheck(schemas: [schema], stages: [])
        }
        let current = plan.versions[plan.versions.count - 1].schema
        try self.init(at: path, schema: current, plan: migrationPlan == nil ? nil : plan, stages: migrationPlan?.stages ?? [],
                      configuration: configuration, fileSystem: fileSystem)
    }

    /// Whether this app's plan can finish the interrupted migration `marker` describes: its
    /// stage is one of the plan's steps and the store's catalog is where that stage left it
    /// (the stage's old version, or its new one once switched). A plan that changed shape since
    /// cannot: the migration is then undone and run again from the start.
    static func canResume(_ marker: MigrationMarker, plan: MigrationPlanCheck, records: RecordStore) throws -> Bool {
        let expected = Int(marker.stage) + (marker.phase == .switched ? 1 : 0)
        guard expected < plan.versions.count, let latest = try MigrationRunner.catalog(of: records)?.latest else { return false }
        return plan.versions[expected].schema.checksum == latest.checksum
    }

    /// Opens the page log and record store at `path`: an interrupted migration found there is
    /// undone first (its rollback point, invariant 26), then `plan`'s steps from the stored
    /// version to the last run (`MigrationRunner`). Returns the record store to bind.
    static func openRecords(at path: String, schema: Schema, plan: MigrationPlanCheck?, stages: [MigrationStage],
                            configuration: Configuration, fileSystem: any FileSystem) throws -> RecordStore {
        func open() throws -> RecordStore {
            try translatingErrors {
                // Read-only: a follower of whatever process writes the store (no lock, nothing written).
                RecordStore(log: try PageLog.open(directory: path, fileSystem: fileSystem, options: configuration.storage.pageLogOptions,
                                                  readOnly: configuration.isReadOnly),
                            cache: NodeCache(budget: configuration.cacheBytes), treeOptions: configuration.storage.recordTreeOptions)
            }
        }
        if configuration.isReadOnly, try !translatingErrors({ try PageLog.holdsStore(directory: path, fileSystem: fileSystem) }) {
            throw StrataError.storeNotFound(path: path)
        }
        var records = try open()
        do {
            var resuming: MigrationMarker?
            if let marker = try translatingErrors({ try records.snapshot().root.migration }),
               !configuration.isMigrationOwner || configuration.isReadOnly {
                // A migration is in progress; only its owner may finish or undo it.
                let stored = try MigrationRunner.catalog(of: records)?.version(id: marker.fromCatalogVersion)?.schemaVersion
                throw StrataError.migrationRequired(stored: stored, required: schema.version)
            } else if let marker = try translatingErrors({ try records.snapshot().root.migration }),
               let plan, marker.targetChecksum == schema.checksum.bytes, !marker.closureFlushed,
               try Self.canResume(marker, plan: plan, records: records) {
                // Killed during a migration this app runs too: finish it from where it got.
                resuming = marker
            } else if let marker = try translatingErrors({ try records.snapshot().root.migration }) {
                // Killed during a migration to another version — or part way through a closure
                // that had flushed changes, which cannot be resumed (it would run again on
                // half-changed data): go back to the store as it was before the migration.
                try translatingErrors {
                    try records.log.close()
                    try PageLog.rollBack(directory: path, fileSystem: fileSystem,
                                         to: LogPosition(segment: marker.rollbackSegment, offset: marker.rollbackOffset))
                }
                records = try open()
            }
            try MigrationRunner(path: path, fileSystem: fileSystem, settings: migrationSettings(configuration), current: schema, plan: plan,
                                host: StoreMigrationHost(stages: stages, configuration: configuration))
                .run(&records, resuming: resuming)
            return records
        } catch {
            try? records.log.close()
            throw error
        }
    }
}

extension Store {
    /// What a migration reads of `configuration`.
    static func migrationSettings(_ configuration: Configuration) -> MigrationSettings {
        MigrationSettings(isReadOnly: configuration.isReadOnly, isMigrationOwner: configuration.isMigrationOwner,
                          progress: configuration.migrationProgress, pageLogOptions: configuration.storage.pageLogOptions,
                          recordTreeOptions: configuration.storage.recordTreeOptions, cacheBytes: configuration.cacheBytes,
                          journaling: journaling(configuration))
    }
}

/// Runs a plan's closures for the migration layer: each on a `Context` of a store over the
/// migration's records, every commit durable (`MigrationHost`).
struct StoreMigrationHost: MigrationHost {
    /// The plan's stages, in its order (a `PlannedStage`'s index is a position here).
    let stages: [MigrationStage]
    let configuration: Store.Configuration

    func stageSession(records: RecordStore, schema: Schema) throws -> any MigrationStageSession {
        var durable = configuration
        durable.durability = .durable
        let context = Context(try Store(records: records, schema: schema, configuration: durable), author: HistoryJournaling.migrationAuthor)
        context.savesWithStage = true
        return Session(context: context, stages: stages)
    }

    func handOutOldVersion(records: RecordStore, schema: Schema) throws -> (() -> Void)? {
        guard let handOut = configuration.migrationOldVersion else { return nil }
        var readOnly = configuration
        readOnly.isReadOnly = true
        readOnly.migrationProgress = nil
        readOnly.migrationOldVersion = nil
        let store = try Store(records: records, schema: schema, configuration: readOnly, ownsLog: false)
        handOut(store)
        return { store.retired.store(true, ordering: .releasing) }
    }

    /// A stage closure's context.
    struct Session: MigrationStageSession {
        let context: Context
        let stages: [MigrationStage]

        func run(_ phase: StageClosurePhase, ofStage stageIndex: Int, finishing: @escaping (RecordTransaction) throws -> Void) throws {
            defer { try? context.waitForFlush() }  // a failing closure: its flush ends before the undo
            if stages.indices.contains(stageIndex) { try stages[stageIndex].closure(phase)?(context) }
            try context.saveWithStage(finishing)
        }
    }
}

/// What a store says of its schema, read without binding a schema or migrating anything
/// (`Store.storedSchema(at:configuration:)`).
public struct StoredSchema: Sendable, Equatable {
    /// The version number of the store's newest schema.
    public let version: Schema.Version
    /// Its schema checksum.
    public let checksum: SchemaChecksum
    /// Whether a migration was interrupted (its owner finishes it at the next open).
    public let isMigrating: Bool

    /// A description of a stored schema.
    public init(version: Schema.Version, checksum: SchemaChecksum, isMigrating: Bool) {
        self.version = version
        self.checksum = checksum
        self.isMigrating = isMigrating
    }
}

extension Store {
    /// The schema version and checksum of the store at `path` — to decide, say in a widget,
    /// whether to wait for the app to migrate it — reading the store's catalog only: no schema
    /// is bound, nothing is migrated or written (not even a checkpoint). Nil for a store with
    /// no schema yet.
    ///
    /// It reads as a read-only store does, without the store's lock: it works while another
    /// process has the store open, and sees that process's latest commit.
    /// - Throws: `StrataError.storeNotFound`, `.corruption`, `.io`.
    public static func storedSchema(at path: String, configuration: Configuration = Configuration()) throws -> StoredSchema? {
        try storedSchema(at: path, configuration: configuration, fileSystem: configuration.storage.fileSystem)
    }

    /// `storedSchema(at:configuration:)` through `fileSystem` (tests).
    package static func storedSchema(at path: String, configuration: Configuration = Configuration(),
                                     fileSystem: any FileSystem) throws -> StoredSchema? {
        try peek(at: path, configuration: configuration, fileSystem: fileSystem) { records in
            let root = try records.snapshot().root
            guard let latest = try MigrationRunner.catalog(of: records)?.latest else { return nil }
            return StoredSchema(version: latest.schemaVersion, checksum: latest.checksum, isMigrating: root.migration != nil)
        }
    }

    /// The interrupted migration of the store at `path`, read as `storedSchema` reads (tests):
    /// its stage, phase and whether a closure had flushed changes; nil when none.
    package static func interruptedMigration(at path: String, fileSystem: any FileSystem)
        throws -> (stage: Int, phase: UInt8, closureFlushed: Bool)? {
        try peek(at: path, configuration: Configuration(), fileSystem: fileSystem) { records in
            try records.snapshot().root.migration.map { (Int($0.stage), $0.phase.rawValue, $0.closureFlushed) }
        }
    }

    /// Runs `body` on the store at `path` opened for reading only what it needs, as a follower
    /// of whatever process writes it (`PageLog.open(…, readOnly: true)`): no lock, nothing
    /// written, not even at close.
    /// - Throws: `StrataError.storeNotFound` (nothing is created) when the folder holds no
    ///   store — not when it cannot be read (`.io`) or lost its superblock (`.corruption`) —
    ///   and what opening and `body` throw.
    static func peek<T>(at path: String, configuration: Configuration, fileSystem: any FileSystem,
                        _ body: (RecordStore) throws -> T) throws -> T {
        guard try translatingErrors({ try PageLog.holdsStore(directory: path, fileSystem: fileSystem) }) else {
            throw StrataError.storeNotFound(path: path)
        }
        return try translatingErrors {
            let records = RecordStore(log: try PageLog.open(directory: path, fileSystem: fileSystem, options: configuration.storage.pageLogOptions,
                                                            readOnly: true),
                                      cache: NodeCache(budget: 1 << 20))
            defer { try? records.log.close() }
            return try body(records)
        }
    }
}
