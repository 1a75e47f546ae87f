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

/// A custom stage's streaming part (Architecture.md, invariants 27 and 28), its progress and
/// its batches' durability.
extension MigrationRunner {
    /// Runs the stage's transforms, batch by batch, from where the marker says each got;
    /// returns the pending catalog's version (the stage's target) and the root pages of the
    /// source trees read whole from their first record here, none of whose records overflowed.
    func stream(_ transforms: [RecordTransform], batchSize: Int, rejected: RejectedRecordPolicy, stageName: String,
                        records: RecordStore, meter: ProgressMeter) throws -> (CatalogVersion, Set<UInt64>) {
        let (oldBinding, newBinding) = try attributing(.schemaChange) { () throws -> (SchemaBinding, SchemaBinding) in
            try translatingErrors {
                try records.write { transaction in
                    guard let oldBytes = try transaction.catalogBytes(), let newBytes = try transaction.pendingCatalogBytes() else {
                        throw StrataError.corruption(file: "schema catalog", offset: 0, reason: "a migrating store lacks its pending catalog")
                    }
                    let old = try SchemaCatalog.decode(oldBytes), new = try SchemaCatalog.decode(newBytes)
                    guard let oldVersion = old.latest, let newVersion = new.latest else {
                        throw StrataError.corruption(file: "schema catalog", offset: 0, reason: "an empty catalog")
                    }
                    return (SchemaBinding(catalog: old, versionID: oldVersion.id, version: oldVersion),
                            SchemaBinding(catalog: new, versionID: newVersion.id, version: newVersion))
                }
            }
        }
        // Where transforms may write: their targets, and entities the new version adds.
        var targets: [UInt32] = []
        for transform in transforms {
            let target = try attributing(.schemaChange) { () throws -> UInt32 in
                guard let target = try? newBinding.entityID(of: transform.targetEntity) else { throw StrataError.unknownEntity(transform.targetEntity) }
                guard let source = try? oldBinding.entityID(of: transform.sourceEntity) else { throw StrataError.unknownEntity(transform.sourceEntity) }
                guard target == source || oldBinding.version.entity(id: target) == nil else {
                    throw StrataError.invalidSchema(reason: "a transform from \(transform.sourceEntity) writes \(transform.targetEntity), "
                        + "which the old version has: write into the same entity or a new one")
                }
                guard !targets.contains(target) else {
                    throw StrataError.invalidSchema(reason: "two transforms of one stage write \(transform.targetEntity)")
                }
                return target
            }
            targets.append(target)
        }
        // Progress: every source entity's records, those already in shadow trees done.
        let start = try translatingErrors { try records.snapshot().root }
        let sources = try transforms.map { try oldBinding.entityID(of: $0.sourceEntity) }
        let inserts = MigrationInsertState(old: oldBinding.version, new: newBinding, sources: sources, targets: targets, root: start)
        meter.recordsTotal = transforms.reduce(0) { total, transform in
            total + ((try? oldBinding.entityID(of: transform.sourceEntity)).flatMap { start.entities[$0]?.tree.count } ?? 0)
        }
        meter.recordsDone = targets.reduce(0) { $0 + (start.migration?.shadows[$1]?.tree.count ?? 0) }
        if !transforms.isEmpty { meter.report() }
        var withoutOverflow: Set<UInt64> = []
        for (transform, target) in zip(transforms, targets) {
            let source = try oldBinding.entityID(of: transform.sourceEntity)
            // Whether this run reads the source tree from its first record, and met an overflowed one.
            let sourceRoot = start.entities[source]?.tree.rootPageID ?? 0
            let shadowAtStart = start.migration?.shadows[target]
            let readsWhole = (shadowAtStart?.cursor ?? 0) == 0 && shadowAtStart?.isDone != true && sourceRoot != 0
            var sawOverflow = false
            let session = RecordEncodingSession(layout: newBinding.layout(of: target))
            let environment = { (transaction: RecordTransaction) in
                TransformEnvironment(old: oldBinding, oldLayout: oldBinding.layout(of: source), new: newBinding, session: session,
                                     writer: MigrationWriter(binding: newBinding, transaction: transaction, state: inserts))
            }
            // A pure transform runs on the other cores too (`RecordTransform.mapConcurrently`).
            let workers = TransformPipeline.workerCount(cores: ProcessInfo.processInfo.activeProcessorCount)
            let pipeline = transform.concurrentApply.flatMap { apply in
                workers == 0 ? nil : TransformPipeline(workers: workers, apply: apply) {
                    // No writer: a concurrent transform cannot insert. Layouts of its own: one
                    // shared by threads would be retained by each of them for every record.
                    TransformEnvironment(old: oldBinding, oldLayout: RecordLayout(privateCopyOf: oldBinding.layout(of: source)),
                                         new: newBinding,
                                         session: RecordEncodingSession(layout: RecordLayout(privateCopyOf: newBinding.layout(of: target))),
                                         writer: MigrationWriter(binding: newBinding, transaction: nil, state: nil))
                }
            }
            defer { pipeline?.shutDown() }
            // Each batch is made durable while the next one runs, which waits for it before it
            // commits: at most one batch is ever committed and not yet durable (a crash then
            // resumes after the batch before, as a crash during that batch's commit would).
            let durability = DeferredSync()
            defer { try? durability.wait() }  // never leave a sync running: undoing closes and cuts the log
            var undurable: (records: Int, bytes: UInt64)?  // the last batch, committed, not reported
            func reportDurable() {
                guard let batch = undurable else { return }
                undurable = nil
                meter.recordsDone += UInt64(batch.records)
                meter.bytesDone += batch.bytes
                meter.report()
            }
            while true {
                // One batch: the old records after the cursor, read from the snapshot (the old
                // trees never change during a stage) inside the write transaction that puts
                // their new versions in the shadow tree, committed with the new cursor.
                let snapshot = try translatingErrors { try records.snapshot() }
                let shadow = snapshot.root.migration?.shadows[target]
                if shadow?.isDone == true { break }
                let sourceNext = snapshot.root.entities[source]?.nextRowID ?? 1
                var count = 0, bytesRead: UInt64 = 0
                let commitEnd = try translatingErrors {
                    try records.writeDeferringSync { transaction in
                        // A batch writes hundreds of leaves: all compressed on the frame pipeline.
                        transaction.pipelinesEveryPage()
                        let tree = transaction.shadowTree(for: target, schemaVersion: newBinding.versionID)
                        transaction.updateMigration { marker in
                            if let next = marker.shadows[target]?.nextRowID, next < sourceNext { marker.shadows[target]?.nextRowID = sourceNext }
                        }
                        // Each record's outcome, in identifier order: its new version inserted,
                        // nothing (dropped), or the transform's error — failing the stage, or
                        // the record quarantined (kept as it was, with why).
                        func deliver(_ id: UInt64, _ old: UnsafeRawBufferPointer, _ outcome: Result<UnsafeRawBufferPointer?, any Error>) throws {
                            switch outcome {
                            case .success(let new?):
                                try tree.insert(id, raw: new)
                                if inserts.tracksDeliveries(into: target) { try inserts.delivered(new, id: id, entityID: target) }
                            case .success(nil): break
                            case .failure(let error):
                                guard rejected == .quarantine else {
                                    throw StepFailure(category: .transform, recordID: "\(transform.sourceEntity)#\(id)", underlying: error)
                                }
                                _ = try transaction.quarantine(QuarantinedRecord.encode(
                                    entity: transform.sourceEntity, id: id, catalogVersion: oldBinding.versionID, stage: stageName,
                                    reason: "\(error)", bytes: Array(old)))
                            }
                        }
                        // Consecutive records whose transforms all wrote new bytes (the pipeline's):
                        // inserted at once, as `deliver` would insert them one after another.
                        func deliverWritten(_ ids: UnsafeBufferPointer<UInt64>, _ bytes: UnsafeRawBufferPointer, _ start: Int,
                                            _ ends: UnsafeBufferPointer<Int>) throws {
                            try tree.insert(ids: ids, bytes: bytes, start: start, ends: ends)
                            guard inserts.tracksDeliveries(into: target) else { return }
                            for index in 0..<ids.count {
                                let from = index == 0 ? start : ends[index - 1]
                                try inserts.delivered(UnsafeRawBufferPointer(rebasing: bytes[from..<ends[index]]), id: ids[index], entityID: target)
                            }
                        }
                        var last: UInt64 = 0
                        let reader = snapshot.reader(for: source)
                        if let pipeline {
                            pipeline.begin()
                            try reader.scanRuns(from: (shadow?.cursor ?? 0) + 1, mapped: false) { run in
                                if run.isOverflowed { sawOverflow = true }
                                let taken = run.slice(0..<min(run.count, batchSize - count))
                                count += taken.count
                                bytesRead += UInt64(taken.allBytes.count)
                                last = taken.id(taken.count - 1)
                                try pipeline.add(taken, deliverWritten: deliverWritten, deliver: deliver)
                                return count < batchSize
                            }
                            try pipeline.finish(deliverWritten: deliverWritten, deliver: deliver)
                        } else {
                            let environment = environment(transaction)
                            try reader.scanRuns(from: (shadow?.cursor ?? 0) + 1, mapped: false) { run in
                                if run.isOverflowed { sawOverflow = true }
                                for index in 0..<run.count {
                                    let id = run.id(index), bytes = run.bytes(index)
                                    count += 1
                                    bytesRead += UInt64(bytes.count)
                                    last = id
                                    try deliver(id, bytes, Result { try transform.apply(bytes, environment) })
                                    if count == batchSize { return false }
                                }
                                return true
                            }
                        }
                        transaction.updateMigration { marker in
                            if count > 0 { marker.shadows[target]?.cursor = last }
                            if count < batchSize { marker.shadows[target]?.isDone = true }
                        }
                        try durability.wait()  // the batch before is durable before this one commits
                    }.commitEnd
                }
                reportDurable()
                undurable = (count, bytesRead)
                if let commitEnd { durability.start(records.log, upTo: commitEnd) }
            }
            try translatingErrors { try durability.wait() }
            reportDurable()
            if readsWhole && !sawOverflow { withoutOverflow.insert(sourceRoot) }
        }
        // Declared inverses follow what the transforms wrote (invariant 30).
        try attributing(.transform) { try maintainInverses(records: records, version: newBinding.version) }
        return (newBinding.version, withoutOverflow)
    }
}

/// Reports a migration's progress (`Configuration.migrationProgress`) as its stages run.
final class ProgressMeter {
    let callback: (@Sendable (MigrationProgress) -> Void)?
    let started: ContinuousClock.Instant
    let stageCount: Int
    private var progress: MigrationProgress?
    private var stageStarted = ContinuousClock.now
    private var recordsAtStageStart: UInt64 = 0
    var recordsTotal: UInt64 = 0
    var recordsDone: UInt64 = 0
    var bytesDone: UInt64 = 0

    init(callback: (@Sendable (MigrationProgress) -> Void)?, started: ContinuousClock.Instant, stageCount: Int) {
        self.callback = callback
        self.started = started
        self.stageCount = stageCount
    }

    /// A stage starts.
    func begin(stage: Int, name: String, isMetadataOnly: Bool) {
        progress = MigrationProgress(stageIndex: stage, stageCount: stageCount, stageName: name, isMetadataOnly: isMetadataOnly,
                                     recordsDone: 0, recordsTotal: 0, bytesDone: 0, bytesTotal: 0, elapsed: .zero,
                                     estimatedRemaining: nil, isStageFinished: false)
        stageStarted = ContinuousClock.now
        recordsTotal = 0
        recordsDone = 0
        bytesDone = 0
        recordsAtStageStart = 0
        report()
    }

    /// Reports the counters now. The first report after the totals are known sets the start of
    /// the throughput measurement (records done before it — a resumed stage — do not count).
    func report() {
        guard var progress, let callback else { return }
        if progress.recordsTotal == 0 && recordsTotal > 0 {
            recordsAtStageStart = recordsDone
            stageStarted = ContinuousClock.now
        }
        let now = ContinuousClock.now
        progress.recordsTotal = recordsTotal
        progress.recordsDone = min(recordsDone, recordsTotal)
        progress.bytesDone = bytesDone
        progress.bytesTotal = recordsDone == 0 ? 0 : UInt64(Double(bytesDone) / Double(max(1, recordsDone - recordsAtStageStart)) * Double(recordsTotal))
        progress.elapsed = now - started
        let measured = recordsDone > recordsAtStageStart ? recordsDone - recordsAtStageStart : 0
        if measured > 0 {
            let perRecord = (now - stageStarted) / Double(measured)
            progress.estimatedRemaining = perRecord * Double(recordsTotal > recordsDone ? recordsTotal - recordsDone : 0)
        }
        self.progress = progress
        callback(progress)
    }

    /// The stage is done.
    func finish() {
        guard var progress, let callback else { return }
        progress.recordsDone = progress.recordsTotal
        progress.bytesTotal = bytesDone
        progress.bytesDone = bytesDone
        progress.elapsed = ContinuousClock.now - started
        progress.estimatedRemaining = .zero
        progress.isStageFinished = true
        self.progress = progress
        callback(progress)
    }
}

/// Makes a migration batch's commit durable on a thread of its own while the migration's
/// thread goes on with the next batch (`PageLog.sync(upTo:exactly:)`: the durable position
/// later commits record is the one a synchronous sync would have left, so the bytes written do
/// not depend on the timing).
///
/// Thread-safety (`@unchecked Sendable`): `pending` is the migration's thread's; `failure` is
/// written by the sync before it signals and read after the wait, which orders the two.
private final class DeferredSync: @unchecked Sendable {
    private let queue = DispatchQueue(label: "strata.migration.sync")
    private let finished = DispatchSemaphore(value: 0)
    private var pending = false
    private var failure: (any Error)?

    /// Starts making `log` durable up to `position`.
    func start(_ log: PageLog, upTo position: LogPosition) {
        pending = true
        queue.async { [self] in
            do { try log.sync(upTo: position, exactly: true) } catch { failure = error }
            finished.signal()
        }
    }

    /// Waits for the sync started last, if one is running; throws what it threw.
    func wait() throws {
        guard pending else { return }
        pending = false
        finished.wait()
        if let error = failure {
            failure = nil
            throw error
        }
    }
}
