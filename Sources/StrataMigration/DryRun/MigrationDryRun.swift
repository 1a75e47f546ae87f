#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema

/// Estimates the migration opening a store would run, without changing it
/// (`Store.dryRun(at:schema:migrationPlan:launchBudget:configuration:)` documents the method).
package struct MigrationDryRun {
    let plan: MigrationPlanCheck
    /// Whether the app gave a plan (without one only a lightweight difference opens).
    let hasPlan: Bool
    let launchBudget: Duration
    let settings: MigrationSettings
    /// What times a closure's backfill loop (the facade's `Context`).
    let host: any MigrationHost

    /// A dry run of `plan` (`hasPlan`: the app gave it) against `launchBudget`.
    package init(plan: MigrationPlanCheck, hasPlan: Bool, launchBudget: Duration, settings: MigrationSettings, host: any MigrationHost) {
        self.plan = plan
        self.hasPlan = hasPlan
        self.launchBudget = launchBudget
        self.settings = settings
        self.host = host
    }

    /// What a metadata-only stage costs (a catalog page and a commit).
    static let metadataStageCost = Duration.milliseconds(5)
    /// The cost per record of a later step's transform when no earlier stage was measured (the
    /// store's records are not in its old version yet): `migrate-split`'s order of magnitude.
    static let laterStepCost = Duration.microseconds(1)
    /// Records per transform the dry run samples: `sampleRuns` runs of `sampleRunLength`.
    static let sampleRuns = 8
    static let sampleRunLength = 250

    /// The estimate for the store `records` holds (opened read-only by the caller).
    /// - Throws: `StrataError.storeIsNewer`, `.unknownModelVersion`; storage errors.
    package func estimate(_ records: RecordStore) throws -> MigrationEstimate {
        guard let last = plan.versions.last else { throw MigrationPlanError.noSchemas }
        let target = last.schema
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
        guard hasPlan else {
            // Without a plan only a lightweight difference opens (or schemaMismatch, at open).
            return estimate(stored: storedVersion, stages: [MigrationEstimate.Stage(
                name: "automatic lightweight \(storedVersion) → \(target.version)", isMetadataOnly: true, records: 0,
                estimatedDuration: Self.metadataStageCost)])
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
            dropped += try Self.countDropped(plan.steps[step].dropped, stage: name, version: step == start ? fromVersion : latest, snapshot: snapshot)
            guard let stage = plan.steps[step].stage?.stage, case .custom(let transforms, _, _) = stage.kind else {
                stages.append(MigrationEstimate.Stage(name: name, isMetadataOnly: true, records: 0, estimatedDuration: Self.metadataStageCost))
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
                stages.append(MigrationEstimate.Stage(name: name, isMetadataOnly: true, records: 0, estimatedDuration: Self.metadataStageCost))
                continue
            }
            // Transforms of the first step read the store's records; later steps' sources are
            // what earlier steps write, estimated with the same counts and the cost per record
            // of the last rewriting stage (a backfill, which reads the records through the new
            // version, is sampled whenever they read so).
            var duration = Self.metadataStageCost
            var count: UInt64 = 0
            let earlier = stages.last { !$0.isMetadataOnly }.map { ($0.estimatedDuration - Self.metadataStageCost) / Double(max(1, $0.records)) }
            let targetSchema = plan.versions[step + 1].schema
            for transform in transforms {
                let sourceID = try? oldBinding.entityID(of: transform.sourceEntity)
                let records = sourceID.flatMap { snapshot.root.entities[$0]?.tree.count } ?? 0
                count += records
                var cost: Duration?
                if let sourceID, step == start {
                    cost = try sampleCost(transform, source: sourceID, old: oldBinding, catalog: catalog, target: targetSchema,
                                          snapshot: snapshot)
                }
                duration += (cost ?? earlier ?? Self.laterStepCost) * Double(records)
            }
            for type in backfilled {
                // The records read through the new version (a closures-only step is readable so).
                let sourceID = try? oldBinding.entityID(of: type.entityName)
                let records = sourceID.flatMap { snapshot.root.entities[$0]?.tree.count } ?? 0
                count += records
                let measured = sourceID.flatMap {
                    try? backfillCost(type, source: $0, catalog: catalog, target: targetSchema, snapshot: snapshot)
                }
                duration += (measured ?? earlier ?? Self.laterStepCost) * Double(records)
            }
            stages.append(MigrationEstimate.Stage(name: name, isMetadataOnly: false, records: count, estimatedDuration: duration))
        }
        return estimate(stored: storedVersion, stages: stages, interrupted: interrupted != nil, dropped: dropped)
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
    private func sampleCost(_ transform: RecordTransform, source: UInt32, old: SchemaBinding, catalog: SchemaCatalog,
                            target: Schema, snapshot: RecordSnapshot) throws -> Duration {
        guard let new = try Self.targetBinding(catalog, target), let targetID = try? new.entityID(of: transform.targetEntity) else { return .zero }
        let (runs, reading) = try Self.sample(source, in: snapshot)
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
        var options = settings.recordTreeOptions
        if options.defersShadowCompression { options.compressLeaves = false }
        let scratch = RecordStore(log: try PageLog.open(directory: "/dry-run", fileSystem: MemoryFileSystem(),
                                                        options: settings.pageLogOptions),
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
        let read = Self.median(ofGroups: reading), apply = Self.median(ofGroups: transforming), write = Self.median(ofGroups: writing)
        // A concurrent transform: the migration's thread reads and writes while the transforms
        // share all the threads (TransformPipeline, as many workers as the stage starts) — at
        // once only on as many processors as the process may run on.
        let workers = transform.concurrentApply == nil ? 0 : TransformPipeline.workerCount(cores: ProcessInfo.processInfo.activeProcessorCount)
        guard workers > 0 else { return read + apply + write }
        return max(read + write, (read + apply + write) / Double(min(workers + 1, Processors.usable)))
    }

    /// The time one record takes through a closure's backfill of `type`'s entity: reading the
    /// stored record (sampled here), then what a `didMigrate` loop does with a context, timed
    /// by the host on the sample (`MigrationHost.backfillTimes`). Zero when the entity has no
    /// record.
    private func backfillCost(_ type: any PersistentRecord.Type, source: UInt32, catalog: SchemaCatalog, target: Schema,
                              snapshot: RecordSnapshot) throws -> Duration {
        guard let new = try Self.targetBinding(catalog, target) else { return .zero }
        let (runs, reading) = try Self.sample(source, in: snapshot)
        guard !runs.isEmpty else { return .zero }
        return Self.median(ofGroups: reading) + Self.median(ofGroups: try host.backfillTimes(of: type, runs: runs, binding: new, target: target))
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
