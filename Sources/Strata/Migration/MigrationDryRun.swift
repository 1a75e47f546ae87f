#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataMigration

extension Store {
    /// Estimates the migration that opening the store at `path` with `schema` and
    /// `migrationPlan` would run, without changing the store (it is read as a read-only store
    /// reads it, without its lock — so also while the app has it open — and nothing is written).
    ///
    /// The estimate of a stage that rewrites records is its record count (from the store root)
    /// times the per-record cost measured here, on this device, on a sample spread over the
    /// whole entity (runs of records at evenly spaced identifiers): reading the old records
    /// (pages verified and decompressed), the transform (decoded, transformed, encoded) and
    /// writing the new records (into a record tree of a scratch store in memory, compressed as
    /// the stage would). A transform declared with `mapConcurrently` is modelled on the cores
    /// it would use. The per-record cost is a median of the sample's groups, so a few huge
    /// records do not skew it. A metadata-only stage costs a few milliseconds whatever the size.
    /// A stage's `willMigrate` / `didMigrate` cannot run here: it is estimated as a backfill of
    /// every record of each entity the step changes (and no transform writes) — the loop a
    /// `didMigrate` runs (`enumerate`, `update`, `save()`), timed on the sample copied into a
    /// scratch store in memory, its writing overlapped with the loop as a stage's flushes are
    /// when a second core is free; work of the closures' own beyond that is not seen.
    ///
    /// The sample runs the stage's transforms — nothing they insert through their
    /// `MigrationWriter` is written (see ``MigrationWriter`` for its identifiers), but any other
    /// side effect of theirs happens; keep transforms free of them.
    ///
    /// - Throws: what opening throws before migrating: ``MigrationPlanError``,
    ///   `StrataError.storeIsNewer`, `.unknownModelVersion`, `.storeNotFound`.
    public static func dryRun(at path: String, schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)?,
                              launchBudget: Duration = .milliseconds(400),
                              configuration: Configuration = Configuration()) throws -> MigrationEstimate {
        try dryRun(at: path, schema: schema, migrationPlan: migrationPlan, launchBudget: launchBudget, configuration: configuration,
                   fileSystem: configuration.storage.fileSystem)
    }

    /// `dryRun` through `fileSystem` (tests).
    package static func dryRun(at path: String, schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)?,
                               launchBudget: Duration = .milliseconds(400), configuration: Configuration,
                               fileSystem: any FileSystem) throws -> MigrationEstimate {
        let plan = try MigrationPlanCheck(schemas: migrationPlan?.schemas ?? [schema], stages: (migrationPlan?.stages ?? []).map(\.planned))
        guard let last = plan.versions.last, ObjectIdentifier(last.type) == ObjectIdentifier(schema) else {
            throw MigrationPlanError.currentSchemaNotLast(current: schema.displayName, last: plan.versions.last?.name ?? "none")
        }
        return try peek(at: path, configuration: configuration, fileSystem: fileSystem) { records in
            try MigrationDryRun(plan: plan, hasPlan: migrationPlan != nil, launchBudget: launchBudget,
                                settings: migrationSettings(configuration), host: StoreMigrationHost(stages: [], configuration: configuration))
                .estimate(records)
        }
    }
}

extension StoreMigrationHost {
    /// What a `didMigrate` loop does with a context — `enumerate`, decode as `type`, `update`,
    /// `save()` — on each run of records copied into a scratch store in memory bound to
    /// `target`: the fastest of three loops per run, per record — its reading and changing and
    /// its writing overlapped as a stage's flushes overlap them. The closure's own work is not
    /// seen.
    func backfillTimes(of type: any PersistentRecord.Type, runs: [[(id: UInt64, bytes: [UInt8])]], binding: SchemaBinding,
                       target: Schema) throws -> [Duration] {
        try backfillTimes(type, runs: runs, binding: binding, target: target)
    }

    private func backfillTimes<Record: PersistentRecord>(_ type: Record.Type, runs: [[(id: UInt64, bytes: [UInt8])]], binding: SchemaBinding,
                                                        target: Schema) throws -> [Duration] {
        var scratchConfiguration = configuration
        scratchConfiguration.durability = .relaxed
        scratchConfiguration.storage.compressesDeferredLeavesInBackground = false
        let clock = ContinuousClock()
        var backfilling: [Duration] = []
        for run in runs {
            // A scratch store per run: each loop reads exactly its run.
            let scratch = try Store(at: "/dry-run-backfill", schema: target, configuration: scratchConfiguration, fileSystem: MemoryFileSystem())
            defer { try? scratch.close() }
            try scratch.write { transaction in
                for record in run { try transaction.insert(try binding.decode(Record.self, from: record.bytes)) }
            }
            // The fastest of three loops (the machine's noise only adds time), the loop and the
            // writing of its changes timed apart: in the stage, a closure's context writes its
            // changes on a thread of its own while the loop goes on (`flushIfNeeded`: with a
            // second core, and no unique attribute to check), so the slower of the two sets the
            // pace; on one core, or with unique attributes, they add up.
            var loop = Duration.seconds(Int64.max), writing = Duration.seconds(Int64.max)
            for _ in 0..<3 {
                let context = Context(scratch)
                loop = min(loop, try clock.measure {
                    try context.enumerate(FetchDescriptor<Record>()) { try context.update($0.id, to: $0.record) }
                })
                writing = min(writing, try clock.measure { try context.save() })
            }
            let overlaps = Processors.usable > 1 && scratch.engine.uniqueAttributes.isEmpty
            backfilling.append((overlaps ? max(loop, writing) : loop + writing) / Double(run.count))
        }
        return backfilling
    }
}
