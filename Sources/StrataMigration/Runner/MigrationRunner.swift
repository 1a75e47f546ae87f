import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataHistory
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema

/// Takes a store from the schema version it was written with to the current one: checks
/// which version that is, then runs the plan's steps (Docs/Migrations.md, "What opening does").
package struct MigrationRunner {
    let path: String
    let fileSystem: any FileSystem
    let settings: MigrationSettings
    let current: Schema
    let plan: MigrationPlanCheck?
    /// What runs the stages' closures and hands out the old version (the facade).
    let host: any MigrationHost

    /// A runner migrating the store at `path` to `current` along `plan`.
    package init(path: String, fileSystem: any FileSystem, settings: MigrationSettings, current: Schema, plan: MigrationPlanCheck?,
                 host: any MigrationHost) {
        self.path = path
        self.fileSystem = fileSystem
        self.settings = settings
        self.current = current
        self.plan = plan
        self.host = host
    }

    /// Migrates `records` (replaced by a reopened store when a failed migration was undone),
    /// or finishes the interrupted migration `resuming` describes.
    /// - Throws: `StrataError.storeIsNewer`, `.unknownModelVersion`, `.migrationFailed`.
    package func run(_ records: inout RecordStore, resuming: MigrationMarker?) throws {
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
                if settings.isReadOnly { return }  // read through the app's version, if lightweight (Store.readOnlyBinding)
                throw StrataError.storeIsNewer(stored: latest.schemaVersion, current: current.version)
            }
            if !settings.isMigrationOwner || settings.isReadOnly {
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
        let meter = ProgressMeter(callback: settings.progress, started: started, stageCount: plan.steps.count)
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
            _ = try translatingErrors { try records.bind(plan.versions[(start + 1)...].map(\.schema), journal: settings.journaling.migrationHook) }
        } catch {
            throw StrataError.migrationFailed(MigrationFailureReport(
                storePath: path, storedVersion: stored.schemaVersion, targetVersion: current.version, stageIndex: start,
                stageCount: plan.steps.count, stageName: Self.name(ofStep: start, in: plan),
                category: Self.category(of: error, otherwise: .schemaChange), recordID: nil,
                underlyingError: "\(error)", storeBytes: storeBytes(), seconds: Self.seconds(since: started)))
        }
        let meter = ProgressMeter(callback: settings.progress, started: started, stageCount: plan.steps.count)
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
        guard let (stageIndex, stage) = plan.steps[step].stage, case .custom(let transforms, let batchSize, let rejected) = stage.kind else {
            _ = try attributing(.schemaChange) { try translatingErrors { try records.bind(to.schema, journal: settings.journaling.migrationHook) } }
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
                try Self.checkRewrites(from: latest, to: target, nullFieldIDs: stored.mayHoldNullFields(through: latest.id), transforms: transforms)
                return registered.catalog
            }
            let session = try host.stageSession(records: records, schema: from.schema)
            try attributing(.willMigrate) {
                try session.run(.willMigrate, ofStage: stageIndex) { transaction in
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
            let retireOldVersion = try transforms.isEmpty ? nil
                : attributing(.storage) { try host.handOutOldVersion(records: records, schema: from.schema) }
            defer { retireOldVersion?() }  // also when the stage fails
            let target: CatalogVersion
            (target, withoutOverflow) = try stream(transforms, batchSize: batchSize, rejected: rejected,
                                                   stageName: Self.name(ofStep: step, in: plan), records: records, meter: meter)
            retireOldVersion?()  // before the switch makes the new trees the store's
            _ = try attributing(.schemaChange) {
                try translatingErrors {
                    do {
                        try records.write { transaction in
                            settings.journaling.begin(transaction, author: HistoryJournaling.migrationAuthor)
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
        let session = try host.stageSession(records: records, schema: to.schema)
        try attributing(.didMigrate) { try session.run(.didMigrate, ofStage: stageIndex, finishing: advance) }
    }

    /// Every entity whose change needs its records rewritten must be a transform's target.
    private static func checkRewrites(from old: CatalogVersion, to new: CatalogVersion, nullFieldIDs: Set<UInt32>,
                                      transforms: [RecordTransform]) throws {
        let targets = Set(transforms.map(\.targetEntity))
        let blocking = new.differences(from: old, nullFieldIDs: nullFieldIDs).filter { $0.isBlocking && !targets.contains($0.entity) }
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
            records = RecordStore(log: try PageLog.open(directory: path, fileSystem: fileSystem, options: settings.pageLogOptions),
                                  cache: NodeCache(budget: settings.cacheBytes), treeOptions: settings.recordTreeOptions)
        }
    }

    /// The store's catalog, or nil for a new store.
    package static func catalog(of records: RecordStore) throws -> SchemaCatalog? {
        try catalog(in: translatingErrors { try records.snapshot() })
    }

    /// The catalog of a snapshot, or nil for a new store.
    package static func catalog(in snapshot: RecordSnapshot) throws -> SchemaCatalog? {
        try translatingErrors {
            guard let bytes = try snapshot.catalogBytes() else { return nil }
            do { return try SchemaCatalog.decode(bytes) } catch {
                throw StrataError.corruption(file: "schema catalog", offset: 0, reason: "\(error)")
            }
        }
    }

    package static func name(ofStep step: Int, in plan: MigrationPlanCheck) -> String {
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
