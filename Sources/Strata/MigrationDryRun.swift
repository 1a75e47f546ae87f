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
    /// scratch store in memory; work of the closures' own beyond that is not seen.
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

    /// What a metadata-only stage costs (a catalog page and a commit).
    static let metadataStageCost = Duration.milliseconds(5)
    /// The cost per record of a later step's transform when no earlier stage was measured (the
    /// store's records are not in its old version yet): `migrate-split`'s order of magnitude.
    static let laterStepCost = Duration.microseconds(1)
    /// Records per transform the dry run samples: `sampleRuns` runs of `sampleRunLength`.
    static let sampleRuns = 8
    static let sampleRunLength = 250

    /// `dryRun` through `fileSystem` (tests).
    package static func dryRun(at path: String, schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)?,
                               launchBudget: Duration = .milliseconds(400), configuration: Configuration,
                               fileSystem: any FileSystem) throws -> MigrationEstimate {
        let plan = try MigrationPlanCheck(schemas: migrationPlan?.schemas ?? [schema], stages: (migrationPlan?.stages ?? []).map(\.planned))
        guard let last = plan.versions.last, ObjectIdentifier(last.type) == ObjectIdentifier(schema) else {
            throw MigrationPlanError.currentSchemaNotLast(current: schema.displayName, last: plan.versions.last?.name ?? "none")
        }
        let target = last.schema
        return try peek(at: path, configuration: configuration, fileSystem: fileSystem) { records in
            let snapshot = try records.snapshot()
            func estimate(stored: Schema.Version?, stages: [MigrationEstimate.Stage] = [], interrupted: Bool = false,
                          dropped: [MigrationEstimate.DroppedValues] = []) -> MigrationEstimate {
                MigrationEstimate(storedVersion: stored, targetVersion: target.version, stages: stages, resumesInterruptedMigration: interrupted,
                                  estimatedDuration: stages.reduce(Duration.zero) { $0 + $1.estimatedDuration }, launchBudget: launchBudget,
                                  droppedValues: dropped)
            }
            guard let catalog = try MigrationRunner.catalog(of: records), let latest = catalog.latest else {
                return estimate(stored: nil)
            }
            let interrupted = snapshot.root.migration
            // The version the migration starts from: an interrupted one's, else the store's.
            let fromChecksum = interrupted.flatMap { catalog.version(id: $0.fromCatalogVersion)?.checksum } ?? latest.checksum
            let storedVersion = interrupted.flatMap { catalog.version(id: $0.fromCatalogVersion)?.schemaVersion } ?? latest.schemaVersion
            if fromChecksum == target.checksum && interrupted == nil { return estimate(stored: storedVersion) }
            if storedVersion > target.version { throw StrataError.storeIsNewer(stored: storedVersion, current: target.version) }
            guard migrationPlan != nil else {
                // Without a plan only a lightweight difference opens (or schemaMismatch, at open).
                return estimate(stored: storedVersion, stages: [MigrationEstimate.Stage(
                    name: "automatic lightweight \(storedVersion) → \(target.version)", isMetadataOnly: true, records: 0,
                    estimatedDuration: metadataStageCost)])
            }
            guard let start = plan.position(of: fromChecksum),
                  let fromVersion = catalog.versions.last(where: { $0.checksum == fromChecksum }) else {
                throw StrataError.unknownModelVersion(stored: storedVersion, checksum: "\(fromChecksum)")
            }
            let oldBinding = SchemaBinding(catalog: catalog, versionID: fromVersion.id, version: fromVersion)
            var stages: [MigrationEstimate.Stage] = []
            var dropped: [MigrationEstimate.DroppedValues] = []
            for step in start..<plan.steps.count {
                let name = MigrationRunner.name(ofStep: step, in: plan)
                dropped += try countDropped(plan.steps[step].dropped, stage: name, version: step == start ? fromVersion : latest, snapshot: snapshot)
                guard let stage = plan.steps[step].stage?.stage, case .custom(let transforms, _, _) = stage.kind else {
                    stages.append(MigrationEstimate.Stage(name: name, isMetadataOnly: true, records: 0, estimatedDuration: metadataStageCost))
                    continue
                }
                // Closures cannot run in a dry run. Estimated as what a didMigrate backfill does:
                // every record of each entity the step changes, no transform writes, read and
                // updated through a context as the new version's type.
                var backfilled: [any PersistentRecord.Type] = []
                if stage.hasClosures {
                    let changed = Set(plan.steps[step].differences.map(\.entity)).subtracting(transforms.map(\.targetEntity))
                    backfilled = plan.versions[step + 1].type.models.filter { changed.contains($0.entityName) }
                }
                guard !transforms.isEmpty || !backfilled.isEmpty else {
                    stages.append(MigrationEstimate.Stage(name: name, isMetadataOnly: true, records: 0, estimatedDuration: metadataStageCost))
                    continue
                }
                // Transforms of the first step read the store's records; later steps' sources are
                // what earlier steps write, estimated with the same counts and the cost per record
                // of the last rewriting stage (a backfill, which reads the records through the new
                // version, is sampled whenever they read so).
                var duration = metadataStageCost
                var count: UInt64 = 0
                let earlier = stages.last { !$0.isMetadataOnly }.map { ($0.estimatedDuration - metadataStageCost) / Double(max(1, $0.records)) }
                let targetSchema = plan.versions[step + 1].schema
                for transform in transforms {
                    let sourceID = try? oldBinding.entityID(of: transform.sourceEntity)
                    let records = sourceID.flatMap { snapshot.root.entities[$0]?.tree.count } ?? 0
                    count += records
                    var cost: Duration?
                    if let sourceID, step == start {
                        cost = try sampleCost(transform, source: sourceID, old: oldBinding, catalog: catalog, target: targetSchema,
                                              snapshot: snapshot, configuration: configuration)
                    }
                    duration += (cost ?? earlier ?? laterStepCost) * Double(records)
                }
                for type in backfilled {
                    // The records read through the new version (a closures-only step is readable so).
                    let sourceID = try? oldBinding.entityID(of: type.entityName)
                    let records = sourceID.flatMap { snapshot.root.entities[$0]?.tree.count } ?? 0
                    count += records
                    func measure<Record: PersistentRecord>(_ type: Record.Type) -> Duration? {
                        guard let sourceID else { return nil }
                        return try? backfillCost(type, source: sourceID, catalog: catalog, target: targetSchema, snapshot: snapshot,
                                                 configuration: configuration)
                    }
                    duration += (measure(type) ?? earlier ?? laterStepCost) * Double(records)
                }
                stages.append(MigrationEstimate.Stage(name: name, isMetadataOnly: false, records: count, estimatedDuration: duration))
            }
            return estimate(stored: storedVersion, stages: stages, interrupted: interrupted != nil, dropped: dropped)
        }
    }

    /// Counts, in the store, the values of each dropped property (by name, in `version`).
    private static func countDropped(_ dropped: [(entity: String, property: String?)], stage: String, version: CatalogVersion,
                                     snapshot: RecordSnapshot) throws -> [MigrationEstimate.DroppedValues] {
        try dropped.compactMap { entity, property in
            guard let entityID = version.entity(named: entity)?.id else { return nil }
            guard let property else {
                return MigrationEstimate.DroppedValues(stage: stage, entity: entity, property: nil,
                                                       values: snapshot.root.entities[entityID]?.tree.count ?? 0)
            }
            let id = version.resolvedAttributes(ofEntity: entityID).first { $0.name == property }?.id
                ?? version.resolvedRelationships(ofEntity: entityID).first { $0.name == property }?.id
            guard let id else { return nil }
            var values: UInt64 = 0
            try snapshot.reader(for: entityID).scan(mapped: false) { _, bytes in
                if case .null = try RecordCodec.value(of: id, in: bytes) {} else { values += 1 }
                return true
            }
            return MigrationEstimate.DroppedValues(stage: stage, entity: entity, property: property, values: values)
        }
    }

    /// Records of an entity sampled across it: `sampleRuns` runs of `sampleRunLength` records
    /// at evenly spaced identifiers (long enough that descending to a run's first leaf is a
    /// small part of reading it), and what reading each record cost in each run.
    private static func sample(_ source: UInt32, in snapshot: RecordSnapshot) throws
        -> (runs: [[(id: UInt64, bytes: [UInt8])]], reading: [Duration]) {
        let next = snapshot.root.entities[source]?.nextRowID ?? 1
        guard (snapshot.root.entities[source]?.tree.count ?? 0) > 0 else { return ([], []) }
        let clock = ContinuousClock()
        var runs: [[(id: UInt64, bytes: [UInt8])]] = []
        var reading: [Duration] = []
        let reader = snapshot.reader(for: source)
        let spacing = max(1, (next - 1) / UInt64(sampleRuns))
        var from: UInt64 = 1
        while runs.count < sampleRuns && from < next {
            var run: [(id: UInt64, bytes: [UInt8])] = []
            let elapsed = try clock.measure {
                try reader.scan(from: from, mapped: false) { id, bytes in
                    run.append((id, Array(bytes)))
                    return run.count < sampleRunLength
                }
            }
            guard let last = run.last else { break }
            reading.append(elapsed / Double(run.count))
            runs.append(run)
            from = max(last.id + 1, from + spacing)
        }
        return (runs, reading)
    }

    /// The new version's binding on the store's catalog (what the stage registers).
    private static func targetBinding(_ catalog: SchemaCatalog, _ target: Schema) throws -> SchemaBinding? {
        let registered = try catalog.register(target)
        guard let version = registered.catalog.version(id: registered.versionID) else { return nil }
        return SchemaBinding(catalog: registered.catalog, versionID: version.id, version: version)
    }

    /// The time one record takes through a stage's `transform`, measured on a sample spread
    /// over the source entity (see `dryRun`): reading, transforming and writing, with the
    /// transform's share spread over the cores a concurrent transform gets. Zero when the
    /// entity has no record.
    private static func sampleCost(_ transform: RecordTransform, source: UInt32, old: SchemaBinding, catalog: SchemaCatalog,
                                   target: Schema, snapshot: RecordSnapshot, configuration: Configuration) throws -> Duration {
        guard let new = try targetBinding(catalog, target), let targetID = try? new.entityID(of: transform.targetEntity) else { return .zero }
        let (runs, reading) = try sample(source, in: snapshot)
        guard !runs.isEmpty else { return .zero }
        let clock = ContinuousClock()
        // Transforming: each run through the transform; a writer without a transaction (inserts
        // of other entities are encoded, not written).
        let environment = TransformEnvironment(
            old: old, oldLayout: old.layout(of: source), new: new, session: RecordEncodingSession(layout: new.layout(of: targetID)),
            writer: MigrationWriter(binding: new, transaction: nil,
                                    state: MigrationInsertState(old: old.version, new: new, sources: [source], targets: [targetID],
                                                                root: snapshot.root), isDryRun: true))
        var transforming: [Duration] = []
        var written: [[(id: UInt64, bytes: [UInt8])]] = []
        for run in runs {
            var output: [(id: UInt64, bytes: [UInt8])] = []
            // The fastest of three passes: the machine's noise only adds time.
            let elapsed = (0..<3).map { pass in
                clock.measure {
                    for record in run {
                        let result: [UInt8]? = try? record.bytes.withUnsafeBytes { bytes -> [UInt8]? in
                            try transform.apply(bytes, environment).map { Array($0) }
                        }
                        if pass == 0, let result { output.append((record.id, result)) }
                    }
                }
            }.min() ?? .zero
            transforming.append(elapsed / Double(run.count))
            written.append(output)
        }
        // Writing: the new records into a record tree of a scratch store in memory, leaves
        // compressed as the stage's shadow trees are.
        var options = configuration.storage.recordTreeOptions
        if options.defersShadowCompression { options.compressLeaves = false }
        let scratch = RecordStore(log: try PageLog.open(directory: "/dry-run", fileSystem: MemoryFileSystem(),
                                                        options: configuration.storage.pageLogOptions),
                                  cache: NodeCache(budget: 1 << 20), treeOptions: options)
        defer { try? scratch.log.close() }
        var writing: [Duration] = []
        for (index, output) in written.enumerated() {
            // The fastest of three passes, each into a tree of its own.
            let elapsed = try (1...3).map { pass in
                try scratch.write(durability: .relaxed) { transaction in
                    let tree = transaction.tree(for: UInt32(index * 3 + pass), schemaVersion: 1)
                    return try clock.measure { for record in output { try tree.insert(record.id, bytes: record.bytes) } }
                }
            }.min() ?? .zero
            writing.append(elapsed / Double(max(1, runs[index].count)))
        }
        let read = median(ofGroups: reading), apply = median(ofGroups: transforming), write = median(ofGroups: writing)
        // A concurrent transform: the migration's thread reads and writes while the transforms
        // share all the threads (TransformPipeline).
        let workers = transform.concurrentApply == nil ? 0 : TransformPipeline.workerCount(cores: ProcessInfo.processInfo.activeProcessorCount)
        guard workers > 0 else { return read + apply + write }
        return max(read + write, (read + apply + write) / Double(workers + 1))
    }

    /// The time one record takes through a closure's backfill of `Record`'s entity: reading the
    /// stored record, then what a `didMigrate` loop does with a context — `enumerate`, decode
    /// as `Record`, `update`, `save()` — measured on the sample copied into a scratch store in
    /// memory bound to the new version. The closure's own work is not seen. Zero when the
    /// entity has no record.
    private static func backfillCost<Record: PersistentRecord>(_ type: Record.Type, source: UInt32, catalog: SchemaCatalog,
                                                               target: Schema, snapshot: RecordSnapshot,
                                                               configuration: Configuration) throws -> Duration {
        guard let new = try targetBinding(catalog, target) else { return .zero }
        let (runs, reading) = try sample(source, in: snapshot)
        guard !runs.isEmpty else { return .zero }
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
                for record in run { try transaction.insert(try new.decode(Record.self, from: record.bytes)) }
            }
            // The fastest of three loops (the machine's noise only adds time).
            let elapsed = try (0..<3).map { _ in
                let context = Context(scratch)
                return try clock.measure {
                    try context.enumerate(FetchDescriptor<Record>()) { try context.update($0.id, to: $0.record) }
                    try context.save()
                }
            }.min() ?? .zero
            backfilling.append(elapsed / Double(run.count))
        }
        return median(ofGroups: reading) + median(ofGroups: backfilling)
    }

    /// The median of the means of five groups of consecutive values: one huge record moves one
    /// group's mean, not the result.
    private static func median(ofGroups values: [Duration]) -> Duration {
        guard !values.isEmpty else { return .zero }
        let groups = min(5, values.count), size = (values.count + groups - 1) / groups
        var means: [Duration] = []
        var index = 0
        while index < values.count {
            let group = values[index..<min(values.count, index + size)]
            means.append(group.reduce(Duration.zero, +) / Double(group.count))
            index += size
        }
        means.sort()
        return means[means.count / 2]
    }
}
