import FoundationEssentials
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema

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

    /// Opens the page log and record store at `path`: an interrupted migration found there is
    /// undone first (its rollback point, invariant 22), then `plan`'s steps from the stored
    /// version to the last run (`MigrationRunner`). Returns the record store to bind.
    static func openRecords(at path: String, schema: Schema, plan: MigrationPlanCheck?, configuration: Configuration,
                            fileSystem: any FileSystem) throws -> RecordStore {
        func open() throws -> RecordStore {
            try translatingErrors {
                RecordStore(log: try PageLog.open(directory: path, fileSystem: fileSystem, options: configuration.storage.pageLogOptions),
                            cache: NodeCache(budget: configuration.cacheBytes))
            }
        }
        var records = try open()
        do {
            if let marker = try translatingErrors({ try records.snapshot().root.migration }) {
                // Killed during a migration: go back to the store as it was before it.
                try translatingErrors {
                    try records.log.close()
                    try PageLog.rollBack(directory: path, fileSystem: fileSystem,
                                         to: LogPosition(segment: marker.rollbackSegment, offset: marker.rollbackOffset))
                }
                records = try open()
            }
            try MigrationRunner(path: path, fileSystem: fileSystem, configuration: configuration, current: schema, plan: plan)
                .run(&records)
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

    /// Migrates `records` (replaced by a reopened store when a failed migration was undone).
    /// - Throws: `StrataError.storeIsNewer`, `.unknownModelVersion`, `.migrationFailed`.
    func run(_ records: inout RecordStore) throws {
        let started = ContinuousClock.now
        guard let stored = try Self.storedVersion(of: records), stored.checksum != current.checksum else { return }
        if stored.schemaVersion > current.version {
            throw StrataError.storeIsNewer(stored: stored.schemaVersion, current: current.version)
        }
        guard let plan else { return }  // binding applies a lightweight difference or throws schemaMismatch
        guard let start = plan.position(of: stored.checksum) else {
            throw StrataError.unknownModelVersion(stored: stored.schemaVersion, checksum: "\(stored.checksum)")
        }
        let steps = Array(start..<plan.steps.count)
        guard !steps.isEmpty else { return }
        // One rollback point for the whole migration: its marker commits first (invariant 22).
        let marker = try translatingErrors {
            try records.write { $0.beginMigration(fromCatalogVersion: stored.id, stage: UInt32(start),
                                                  targetChecksum: current.checksum.bytes) }
        }
        var failure: (index: Int, category: MigrationFailureReport.Category, error: any Error)?
        for (index, step) in steps.enumerated() {
            do {
                try runStep(step, of: plan, records: records)
            } catch let error as StepFailure {
                failure = (index, error.category, error.underlying)
                break
            } catch {
                failure = (index, .storage, error)
                break
            }
        }
        if let failure {
            let report = MigrationFailureReport(
                storePath: path, storedVersion: stored.schemaVersion, targetVersion: current.version,
                stageIndex: failure.index, stageCount: steps.count, stageName: Self.name(ofStep: steps[failure.index], in: plan),
                category: failure.category, recordID: nil, underlyingError: "\(failure.error)", storeBytes: storeBytes(),
                seconds: Self.seconds(since: started))
            try undo(&records, to: marker)
            throw StrataError.migrationFailed(report)
        }
        try translatingErrors { try records.write { $0.endMigration() } }
    }

    /// A stage's failure and which part of it failed.
    private struct StepFailure: Error {
        let category: MigrationFailureReport.Category
        let underlying: any Error
    }

    /// Runs `body`, reporting what it throws as a failure of `category`.
    private func attributing<T>(_ category: MigrationFailureReport.Category, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as StepFailure { throw error } catch { throw StepFailure(category: category, underlying: error) }
    }

    /// The step from `plan.versions[step]` to the next version.
    private func runStep(_ step: Int, of plan: MigrationPlanCheck, records: RecordStore) throws {
        let from = plan.versions[step], to = plan.versions[step + 1]
        guard case .custom(let willMigrate, let didMigrate)? = plan.steps[step].stage?.stage.kind else {
            _ = try attributing(.schemaChange) { try translatingErrors { try records.bind(to.schema) } }
            return
        }
        if let willMigrate {
            try attributing(.willMigrate) {
                let context = Context(try Store(records: records, schema: from.schema, configuration: configuration), author: "migration")
                try willMigrate(context)
                try context.save()  // unsaved changes are saved with the stage, never dropped
            }
        }
        _ = try attributing(.schemaChange) { try translatingErrors { try records.bind(to.schema) } }
        if let didMigrate {
            try attributing(.didMigrate) {
                let context = Context(try Store(records: records, schema: to.schema, configuration: configuration), author: "migration")
                try didMigrate(context)
                try context.save()
            }
        }
    }

    /// Closes the store and cuts its log back to the migration's rollback point; reopens it so
    /// the caller can close it as usual.
    private func undo(_ records: inout RecordStore, to marker: StoreRoot.MigrationMarker) throws {
        try translatingErrors {
            try records.log.close()  // checkpoints are held: nothing is written
            try PageLog.rollBack(directory: path, fileSystem: fileSystem,
                                 to: LogPosition(segment: marker.rollbackSegment, offset: marker.rollbackOffset))
            records = RecordStore(log: try PageLog.open(directory: path, fileSystem: fileSystem, options: configuration.storage.pageLogOptions),
                                  cache: NodeCache(budget: configuration.cacheBytes))
        }
    }

    /// The newest catalog version of the store, or nil for a new store.
    static func storedVersion(of records: RecordStore) throws -> CatalogVersion? {
        try translatingErrors {
            guard let bytes = try records.snapshot().catalogBytes() else { return nil }
            do { return try SchemaCatalog.decode(bytes).latest } catch {
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
