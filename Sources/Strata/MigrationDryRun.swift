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
    /// times the per-record cost measured here, on this device: its transforms run on a sample
    /// of the first records (decoded, transformed and encoded, nothing written), plus the cost
    /// of writing a record, measured as `tree-insert` (Docs/Benchmarks.md). A metadata-only
    /// stage costs a few milliseconds whatever the size.
    ///
    /// - Throws: what opening throws before migrating: ``MigrationPlanError``,
    ///   `StrataError.storeIsNewer`, `.unknownModelVersion`, `.storeNotFound`.
    public static func dryRun(at path: String, schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)?,
                              launchBudget: Duration = .milliseconds(400),
                              configuration: Configuration = Configuration()) throws -> MigrationEstimate {
        try dryRun(at: path, schema: schema, migrationPlan: migrationPlan, launchBudget: launchBudget, configuration: configuration,
                   fileSystem: configuration.storage.fileSystem)
    }

    /// The time writing one rewritten record takes beyond its transform (tree insert, LZ4,
    /// checksum, log write), from the `tree-insert` benchmark on the reference machine (about
    /// 0.6 µs); a conservative 1 µs.
    static let writeCostPerRecord = Duration.microseconds(1)
    /// What a metadata-only stage costs (a catalog page and a commit).
    static let metadataStageCost = Duration.milliseconds(5)
    /// Records per transform the dry run samples.
    static let sampleSize = 2_000

    /// `dryRun` through `fileSystem` (tests).
    package static func dryRun(at path: String, schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)?,
                               launchBudget: Duration = .milliseconds(400), configuration: Configuration,
                               fileSystem: any FileSystem) throws -> MigrationEstimate {
        let plan = try MigrationPlanCheck(schemas: migrationPlan?.schemas ?? [schema], stages: migrationPlan?.stages ?? [])
        guard let last = plan.versions.last, ObjectIdentifier(last.type) == ObjectIdentifier(schema) else {
            throw MigrationPlanError.currentSchemaNotLast(current: schema.displayName, last: plan.versions.last?.name ?? "none")
        }
        let target = last.schema
        return try peek(at: path, configuration: configuration, fileSystem: fileSystem) { records in
            let snapshot = try records.snapshot()
            guard let catalog = try MigrationRunner.catalog(of: records), let latest = catalog.latest else {
                return MigrationEstimate(storedVersion: nil, targetVersion: target.version, stages: [], resumesInterruptedMigration: false,
                                         estimatedDuration: .zero, launchBudget: launchBudget)
            }
            let interrupted = snapshot.root.migration
            // The version the migration starts from: an interrupted one's, else the store's.
            let fromChecksum = interrupted.flatMap { catalog.version(id: $0.fromCatalogVersion)?.checksum } ?? latest.checksum
            let storedVersion = interrupted.flatMap { catalog.version(id: $0.fromCatalogVersion)?.schemaVersion } ?? latest.schemaVersion
            if fromChecksum == target.checksum && interrupted == nil {
                return MigrationEstimate(storedVersion: storedVersion, targetVersion: target.version, stages: [],
                                         resumesInterruptedMigration: false, estimatedDuration: .zero, launchBudget: launchBudget)
            }
            if storedVersion > target.version { throw StrataError.storeIsNewer(stored: storedVersion, current: target.version) }
            guard migrationPlan != nil else {
                // Without a plan only a lightweight difference opens (or schemaMismatch, at open).
                let stage = MigrationEstimate.Stage(name: "automatic lightweight \(storedVersion) → \(target.version)", isMetadataOnly: true,
                                                    records: 0, estimatedDuration: metadataStageCost)
                return MigrationEstimate(storedVersion: storedVersion, targetVersion: target.version, stages: [stage],
                                         resumesInterruptedMigration: false, estimatedDuration: stage.estimatedDuration, launchBudget: launchBudget)
            }
            guard let start = plan.position(of: fromChecksum) else {
                throw StrataError.unknownModelVersion(stored: storedVersion, checksum: "\(fromChecksum)")
            }
            let oldBinding = catalog.versions.last { $0.checksum == fromChecksum }.map { SchemaBinding(catalog: catalog, versionID: $0.id, version: $0) }
            var stages: [MigrationEstimate.Stage] = []
            for step in start..<plan.steps.count {
                let name = MigrationRunner.name(ofStep: step, in: plan)
                guard case .custom(_, _, let transforms, _, _)? = plan.steps[step].stage?.stage.kind, !transforms.isEmpty else {
                    stages.append(MigrationEstimate.Stage(name: name, isMetadataOnly: true, records: 0, estimatedDuration: metadataStageCost))
                    continue
                }
                // Transforms of the first step read the store's records; later steps' sources are
                // what earlier steps write, estimated with the same counts and the sample's cost.
                var count: UInt64 = 0
                var perRecord = writeCostPerRecord
                for transform in transforms {
                    let sourceID = try? oldBinding?.entityID(of: transform.sourceEntity)
                    count += sourceID.flatMap { snapshot.root.entities[$0]?.tree.count } ?? 0
                    if step == start, let oldBinding, let sourceID {
                        perRecord = max(perRecord, try sampleCost(transform, source: sourceID, old: oldBinding, catalog: catalog,
                                                                  target: plan.versions[step + 1].schema, snapshot: snapshot) + writeCostPerRecord)
                    }
                }
                stages.append(MigrationEstimate.Stage(name: name, isMetadataOnly: false, records: count,
                                                      estimatedDuration: perRecord * Double(count) + metadataStageCost))
            }
            let total = stages.reduce(Duration.zero) { $0 + $1.estimatedDuration }
            return MigrationEstimate(storedVersion: storedVersion, targetVersion: target.version, stages: stages,
                                     resumesInterruptedMigration: interrupted != nil, estimatedDuration: total, launchBudget: launchBudget)
        }
    }

    /// The time one record of the sample takes through `transform` (decode, transform, encode),
    /// writing nothing; zero when the entity has no record.
    private static func sampleCost(_ transform: RecordTransform, source: UInt32, old: SchemaBinding, catalog: SchemaCatalog,
                                   target: Schema, snapshot: RecordSnapshot) throws -> Duration {
        let registered = try catalog.register(target)
        guard let version = registered.catalog.version(id: registered.versionID),
              let targetID = try? SchemaBinding(catalog: registered.catalog, versionID: version.id, version: version).entityID(of: transform.targetEntity)
        else { return .zero }
        let new = SchemaBinding(catalog: registered.catalog, versionID: version.id, version: version)
        var sample: [[UInt8]] = []
        try snapshot.reader(for: source).scan(mapped: false) { _, bytes in
            sample.append(Array(bytes))
            return sample.count < sampleSize
        }
        guard !sample.isEmpty else { return .zero }
        // A writer without a transaction: inserts of other entities are encoded, not written.
        let environment = TransformEnvironment(old: old, oldLayout: old.layout(of: source), new: new,
                                               session: RecordEncodingSession(layout: new.layout(of: targetID)),
                                               writer: MigrationWriter(binding: new, transaction: nil, insertable: []))
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for bytes in sample { _ = try? bytes.withUnsafeBytes { try transform.apply($0, environment) } }
        }
        return elapsed / Double(sample.count)
    }
}
