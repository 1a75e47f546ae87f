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
        try self.init(at: path, schema: current, plan: migrationPlan == nil ? nil : plan, configuration: configuration,
                      fileSystem: fileSystem)
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
    static func openRecords(at path: String, schema: Schema, plan: MigrationPlanCheck?, configuration: Configuration,
                            fileSystem: any FileSystem) throws -> RecordStore {
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
            try MigrationRunner(path: path, fileSystem: fileSystem, configuration: configuration, current: schema, plan: plan)
                .run(&records, resuming: resuming)
            return records
        } catch {
            try? records.log.close()
            throw error
        }
    }
}

/// Takes a store from the schema version it was written with to the current one: checks
/// which version that is, then runs the plan's steps (Docs/Migrations.md, "What opening does").
struct MigrationRunner {
    let path: String
    let fileSystem: any FileSystem
    let configuration: Store.Configuration
    let current: Schema
    let plan: MigrationPlanCheck?

    /// Migrates `records` (replaced by a reopened store when a failed migration was undone),
    /// or finishes the interrupted migration `resuming` describes.
    /// - Throws: `StrataError.storeIsNewer`, `.unknownModelVersion`, `.migrationFailed`.
    func run(_ records: inout RecordStore, resuming: MigrationMarker?) throws {
        let started = ContinuousClock.now
        let marker: MigrationMarker
        let stored: CatalogVersion
        if let resuming, let plan {
            let catalog = try Self.catalog(of: records)
            guard let from = catalog?.version(id: resuming.fromCatalogVersion), Int(resuming.stage) <= plan.steps.count else {
                throw StrataError.corruption(file: "store root", offset: 0,
                                             reason: "the interrupted migration names catalog version \(resuming.fromCatalogVersion), which the catalog lacks")
            }
            stored = from
            marker = resuming
        } else {
            guard let latest = try Self.catalog(of: records)?.latest, latest.checksum != current.checksum else { return }
            if latest.schemaVersion > current.version {
                if configuration.isReadOnly { return }  // read through the app's version, if lightweight (Store.readOnlyBinding)
                throw StrataError.storeIsNewer(stored: latest.schemaVersion, current: current.version)
            }
            if !configuration.isMigrationOwner || configuration.isReadOnly {
                throw StrataError.migrationRequired(stored: latest.schemaVersion, required: current.version)
            }
            guard let plan else { return }  // binding applies a lightweight difference or throws schemaMismatch
            guard let start = plan.position(of: latest.checksum) else {
                throw StrataError.unknownModelVersion(stored: latest.schemaVersion, checksum: "\(latest.checksum)")
            }
            guard start < plan.steps.count else { return }
            if plan.steps[start...].allSatisfy({ !($0.stage?.stage.rewritesOrRunsCode ?? false) }) {
                // Only lightweight steps: one transaction registers every version in turn — atomic
                // without a rollback point, and one sync instead of one per marker change.
                try bindLightweightSteps(from: start, of: plan, stored: latest, records: records, started: started)
                return
            }
            stored = latest
            // One rollback point for the whole migration: its marker commits first (invariant 26).
            marker = try translatingErrors {
                try records.write { $0.beginMigration(fromCatalogVersion: latest.id, stage: UInt32(start), targetChecksum: current.checksum.bytes) }
            }
        }
        guard let plan else { return }
        var failure: (step: Int, category: MigrationFailureReport.Category, recordID: String?, error: any Error)?
        let meter = ProgressMeter(callback: configuration.migrationProgress, started: started, stageCount: plan.steps.count)
        for step in Int(marker.stage)..<plan.steps.count {
            do {
                let stage = plan.steps[step].stage?.stage
                meter.begin(stage: step, name: Self.name(ofStep: step, in: plan), isMetadataOnly: !(stage?.rewritesRecords ?? false))
                try runStep(step, of: plan, phase: step == Int(marker.stage) ? marker.phase : .started, records: records, meter: meter)
                meter.finish()
            } catch let error as StepFailure {
                failure = (step, Self.category(of: error.underlying, otherwise: error.category), error.recordID, error.underlying)
                break
            } catch {
                failure = (step, .storage, nil, error)
                break
            }
        }
        if let failure {
            let report = MigrationFailureReport(
                storePath: path, storedVersion: stored.schemaVersion, targetVersion: current.version,
                stageIndex: failure.step, stageCount: plan.steps.count, stageName: Self.name(ofStep: failure.step, in: plan),
                category: failure.category, recordID: failure.recordID, underlyingError: "\(failure.error)", storeBytes: storeBytes(),
                seconds: Self.seconds(since: started))
            try undo(&records, to: marker)
            throw StrataError.migrationFailed(report)
        }
        try translatingErrors { try records.write { $0.endMigration() } }
    }

    /// Leaves of a replaced tree freed per commit after a switch.
    static let leavesFreedPerCommit = 4_096

    /// Binds the versions after `start` in one transaction (every remaining step lightweight),
    /// reporting each step's progress once it is done.
    /// - Throws: `StrataError.migrationFailed` (nothing stored) when a step is not possible.
    private func bindLightweightSteps(from start: Int, of plan: MigrationPlanCheck, stored: CatalogVersion, records: RecordStore,
                                      started: ContinuousClock.Instant) throws {
        do {
            _ = try translatingErrors { try records.bind(plan.versions[(start + 1)...].map(\.schema), journal: Store.journaling(configuration).migrationHook) }
        } catch {
            throw StrataError.migrationFailed(MigrationFailureReport(
                storePath: path, storedVersion: stored.schemaVersion, targetVersion: current.version, stageIndex: start,
                stageCount: plan.steps.count, stageName: Self.name(ofStep: start, in: plan),
                category: Self.category(of: error, otherwise: .schemaChange), recordID: nil,
                underlyingError: "\(error)", storeBytes: storeBytes(), seconds: Self.seconds(since: started)))
        }
        let meter = ProgressMeter(callback: configuration.migrationProgress, started: started, stageCount: plan.steps.count)
        for step in start..<plan.steps.count {
            meter.begin(stage: step, name: Self.name(ofStep: step, in: plan), isMetadataOnly: true)
            meter.finish()
        }
    }

    /// A stage's failure: which part of it failed, and the record concerned when known.
    struct StepFailure: Error {
        let category: MigrationFailureReport.Category
        var recordID: String?
        let underlying: any Error
    }

    /// The category of a stage that failed with `error`: `.storage` when reading or writing
    /// the store failed (damaged bytes, I/O) whatever the stage was doing, else `otherwise`.
    static func category(of error: any Error, otherwise: MigrationFailureReport.Category) -> MigrationFailureReport.Category {
        var translated = error as? StrataError
        if translated == nil {
            do { try translatingErrors { () throws -> Void in throw error } } catch let strata as StrataError { translated = strata } catch {}
        }
        switch translated {
        case .corruption?, .io?, .unsupportedFormatVersion?, .poisoned?: return .storage
        default: return otherwise
        }
    }

    /// Runs `body`, reporting what it throws as a failure of `category`.
    func attributing<T>(_ category: MigrationFailureReport.Category, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as StepFailure { throw error } catch { throw StepFailure(category: category, underlying: error) }
    }

    /// The configuration of the stores a stage's closures get: every commit durable.
    private var stageConfiguration: Store.Configuration {
        var configuration = configuration
        configuration.durability = .durable
        return configuration
    }

    /// The step from `plan.versions[step]` to the next version, from `phase` on (a resumed
    /// stage skips what it committed already). Each phase's work commits together with the
    /// marker's next phase, so a crash repeats no committed work (Architecture.md, "Migration").
    private func runStep(_ step: Int, of plan: MigrationPlanCheck, phase: MigrationMarker.Phase, records: RecordStore,
                         meter: ProgressMeter) throws {
        let from = plan.versions[step], to = plan.versions[step + 1]
        let advance = { (transaction: RecordTransaction) in
            transaction.updateMigration { marker in
                marker.stage = UInt32(step + 1)
                marker.phase = .started
            }
        }
        guard case .custom(let willMigrate, let didMigrate, let transforms, let batchSize, let rejected)? = plan.steps[step].stage?.stage.kind else {
            _ = try attributing(.schemaChange) { try translatingErrors { try records.bind(to.schema, journal: Store.journaling(configuration).migrationHook) } }
            try translatingErrors { try records.write(advance) }
            return
        }
        if phase == .started {
            // The catalog the stage goes to, checked against its transforms, written (pending)
            // with willMigrate's changes.
            let catalog = try attributing(.schemaChange) { () throws -> SchemaCatalog in
                guard let stored = try Self.catalog(of: records), let latest = stored.latest else {
                    throw StrataError.corruption(file: "schema catalog", offset: 0, reason: "a migrating store has no catalog")
                }
                let registered = try stored.register(to.schema)
                guard let target = registered.catalog.version(id: registered.versionID) else {
                    throw StrataError.invalidSchema(reason: "\(to.name): its catalog version is missing after registration")
                }
                try Self.checkRewrites(from: latest, to: target, transforms: transforms)
                return registered.catalog
            }
            let context = Context(try Store(records: records, schema: from.schema, configuration: stageConfiguration), author: "migration")
            context.savesWithStage = true
            try attributing(.willMigrate) {
                defer { try? context.waitForFlush() }  // a failing closure: its flush ends before the undo
                try willMigrate?(context)
                try context.saveWithStage { transaction in
                    try transaction.setPendingCatalog(catalog.encoded())
                    transaction.updateMigration { $0.phase = .streaming }
                }
            }
        }
        // Replaced trees this run read whole and found no overflowed record in: their leaves
        // need not be read again to be freed.
        var withoutOverflow: Set<UInt64> = []
        if phase != .switched {
            // The old version stays readable while the stage streams (its trees do not change).
            var oldVersion: Store?
            if let handOut = configuration.migrationOldVersion, !transforms.isEmpty {
                var readOnly = configuration
                readOnly.isReadOnly = true
                readOnly.migrationProgress = nil
                readOnly.migrationOldVersion = nil
                let store = try attributing(.storage) { try Store(records: records, schema: from.schema, configuration: readOnly, ownsLog: false) }
                oldVersion = store
                handOut(store)
            }
            defer { oldVersion?.retired.store(true, ordering: .releasing) }  // also when the stage fails
            let target: CatalogVersion
            (target, withoutOverflow) = try stream(transforms, batchSize: batchSize, rejected: rejected,
                                                   stageName: Self.name(ofStep: step, in: plan), records: records, meter: meter)
            oldVersion?.retired.store(true, ordering: .releasing)  // before the switch makes the new trees the store's
            _ = try attributing(.schemaChange) {
                try translatingErrors {
                    do {
                        try records.write { transaction in
                            Store.journaling(configuration).begin(transaction, author: HistoryJournaling.migrationAuthor)
                            transaction.recordShadowCounts()
                            try transaction.switchToShadows(version: target)
                            try transaction.history?.recordSchemaChange(to: target.schemaVersion)
                            transaction.updateMigration { $0.phase = .switched }
                        }
                    } catch let RecordTreeError.uniqueConstraintViolation(entityID, attributeID, recordID, existingID) {
                        // Named as binding names it (a new unique constraint the records break).
                        throw StrataError.uniqueConstraintViolation(
                            entity: target.entity(id: entityID)?.name ?? "#\(entityID)",
                            attribute: target.resolvedAttributes(ofEntity: entityID).first { $0.id == attributeID }?.name ?? "#\(attributeID)",
                            existing: "records \(existingID) and \(recordID)")
                    }
                }
            }
        }
        // The replaced trees' pages are freed in bounded batches (no commit grows with the store).
        // Relaxed commits: the step's last commit (`didMigrate`'s, durable) makes them durable,
        // and a crash before it loses only frees the marker still lists, done again on resume.
        while try !translatingErrors({
            try records.write(durability: .relaxed) {
                try $0.freeRetiredTrees(maximumLeaves: Self.leavesFreedPerCommit, withoutOverflow: withoutOverflow)
            }
        }) {}
        let context = Context(try Store(records: records, schema: to.schema, configuration: stageConfiguration), author: "migration")
        context.savesWithStage = true
        try attributing(.didMigrate) {
            defer { try? context.waitForFlush() }  // a failing closure: its flush ends before the undo
            try didMigrate?(context)
            try context.saveWithStage(advance)
        }
    }

    /// Every entity whose change needs its records rewritten must be a transform's target.
    private static func checkRewrites(from old: CatalogVersion, to new: CatalogVersion, transforms: [RecordTransform]) throws {
        let targets = Set(transforms.map(\.targetEntity))
        let blocking = new.differences(from: old).filter { $0.isBlocking && !targets.contains($0.entity) }
        guard blocking.isEmpty else {
            throw StrataError.schemaMismatch(stored: "\(old.schemaVersion)", current: "\(new.schemaVersion)",
                                             differences: SchemaDifference.explained(blocking))
        }
    }

    /// Closes the store and cuts its log back to the migration's rollback point; reopens it so
    /// the caller can close it as usual.
    private func undo(_ records: inout RecordStore, to marker: MigrationMarker) throws {
        try translatingErrors {
            try records.log.close()  // checkpoints are held: nothing is written
            try PageLog.rollBack(directory: path, fileSystem: fileSystem,
                                 to: LogPosition(segment: marker.rollbackSegment, offset: marker.rollbackOffset))
            records = RecordStore(log: try PageLog.open(directory: path, fileSystem: fileSystem, options: configuration.storage.pageLogOptions),
                                  cache: NodeCache(budget: configuration.cacheBytes), treeOptions: configuration.storage.recordTreeOptions)
        }
    }

    /// The store's catalog, or nil for a new store.
    static func catalog(of records: RecordStore) throws -> SchemaCatalog? {
        try catalog(in: translatingErrors { try records.snapshot() })
    }

    /// The catalog of a snapshot, or nil for a new store.
    static func catalog(in snapshot: RecordSnapshot) throws -> SchemaCatalog? {
        try translatingErrors {
            guard let bytes = try snapshot.catalogBytes() else { return nil }
            do { return try SchemaCatalog.decode(bytes) } catch {
                throw StrataError.corruption(file: "schema catalog", offset: 0, reason: "\(error)")
            }
        }
    }

    static func name(ofStep step: Int, in plan: MigrationPlanCheck) -> String {
        "\(plan.steps[step].stage?.stage.kindName ?? "automatic lightweight") \(plan.versions[step].name) → \(plan.versions[step + 1].name)"
    }

    /// The bytes of the store's files.
    private func storeBytes() -> UInt64 {
        guard let names = try? fileSystem.contentsOfDirectory(path) else { return 0 }
        return names.reduce(0) { total, name in
            guard let file = try? fileSystem.openFile(joinPath(path, name), create: false) else { return total }
            defer { file.close() }
            return total + ((try? file.size()) ?? 0)
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
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
