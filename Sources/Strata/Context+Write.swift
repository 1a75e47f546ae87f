#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataPageLog
import StrataRecords

/// Writing a context's changes: one transaction per save, and a migration closure's flushes
/// (Docs/Migrations.md, "Closures on large stores").
extension Context {
    /// What a migration closure's context carries from flush to flush.
    final class StageFlush {
        /// Unsaved changes (records inserted, updated or deleted) past which they are flushed.
        let maximumChanges: Int
        /// Encoded bytes of unsaved inserts and updates past which they are flushed.
        let maximumBytes: Int
        /// Flushes so far.
        var flushes = 0
        /// The history journal's per-entity counts of the flushes so far, journaled with the
        /// closure's last commit.
        var counts: [UInt32: (inserted: UInt64, updated: UInt64, deleted: UInt64)] = [:]
        /// Per root entity, the first id the closure's inserts get: records at or above it were
        /// inserted by this closure (ids are never reused and the closure is the only writer).
        let firstNewIDs: [UInt32: UInt64]

        init(store: Store) {
            maximumChanges = store.configuration.migrationFlushChanges
            maximumBytes = store.configuration.migrationFlushBytes
            firstNewIDs = store.nextIDsSnapshot()
        }
    }

    /// Journal counts per entity: inserted, updated, deleted.
    typealias Counts = [UInt32: (inserted: UInt64, updated: UInt64, deleted: UInt64)]

    /// What a closure's commit needs of `StageFlush`: flushes so far, the first new id of each
    /// hierarchy and the counts carried so far.
    struct FlushState: Sendable {
        var flushes: Int
        var firstNewIDs: [UInt32: UInt64]
        var counts: Counts
    }
    /// How a write belongs to a migration stage: a flush of a closure's changes (not waited for,
    /// flagged in the marker) or the closure's last commit, with the stage's progress.
    enum StageWrite {
        case flush(FlushState)
        case last(FlushState?, (RecordTransaction) throws -> Void)
    }

    /// Writes `changes` in one record-store transaction (relationships maintained, unique
    /// values checked: see ``save()``).
    /// Returns, for a flush, the closure's journal counts with this flush's added.
    @discardableResult
    static func write(_ changes: [UInt32: [UInt64: Change]], to store: Store, author: String?,
                              stage: StageWrite? = nil) throws -> Counts {
        try store.checkWritable()
        var carried: Counts = [:]
        func commit(_ body: (RecordTransaction) throws -> Void) throws {
            if case .flush? = stage {
                // Before the closure's last commit a flush need not be durable: after a crash
                // the migration is undone anyway (invariant 26), and the last commit's sync
                // makes every flush durable with it.
                _ = try store.records.writeDeferringSync(body)
            } else {
                try store.records.write(durability: store.configuration.durability, body)
            }
        }
        try store.translating {
            try commit { transaction in
                store.beginJournal(transaction, author: author)
                var flush: FlushState?
                if let stage {
                    // A migration stage's closures: their changes are summarized per entity,
                    // carried from flush to flush and journaled once, with the closure's last commit.
                    transaction.history?.summarizes = true
                    transaction.mappedReads = false  // a closure may rewrite a whole store: leave none of it mapped
                    transaction.defersLeafCompression = true  // compressed after the launch, as a transform's records
                    switch stage {
                    case .flush(let state): flush = state
                    case .last(let state, _): flush = state
                    }
                    if let flush, flush.flushes > 0 {
                        let model = store.model, first = flush.firstNewIDs
                        transaction.history?.firstInsertedEarlier = { first[model.rootID(of: $0), default: 1] }
                    }
                }
                let graph = GraphTransaction(store: store, transaction: transaction)
                graph.reserveUpserts(changes.values.reduce(0) { $0 + $1.count })
                // In the order the trees are written (per entity: updates, then inserts, each by
                // id), so the graph's sort finds its input sorted.
                for (entityID, entityChanges) in changes.sorted(by: { $0.key < $1.key }) {
                    var inserts: [(id: UInt64, bytes: [UInt8])] = []
                    // The identifiers sorted, not the changes: moving a change copies its bytes' reference.
                    for id in entityChanges.keys.sorted() {
                        guard let change = entityChanges[id] else { continue }
                        switch change {
                        case .upsert(let bytes, true): inserts.append((id, bytes))
                        case .upsert(let bytes, false): graph.stageUpsert(entityID: entityID, id: id, bytes: bytes, isNew: false)
                        case .delete: graph.stageDelete(entityID: entityID, id: id)
                        }
                    }
                    for insert in inserts { graph.stageUpsert(entityID: entityID, id: insert.id, bytes: insert.bytes, isNew: true) }
                }
                try graph.commit()
                guard let stage else { return }
                var counts = flush?.counts ?? [:]
                if let (taken, retracted) = transaction.history?.takeSummary() {
                    for (entity, count) in taken {
                        counts[entity, default: (0, 0, 0)].inserted += count.inserted
                        counts[entity, default: (0, 0, 0)].updated += count.updated
                        counts[entity, default: (0, 0, 0)].deleted += count.deleted
                    }
                    for (entity, number) in retracted {
                        counts[entity, default: (0, 0, 0)].inserted -= min(number, counts[entity]?.inserted ?? 0)
                    }
                }
                switch stage {
                case .flush:
                    transaction.updateMigration { $0.closureFlushed = true }
                    // Kept once the commit succeeded (the caller): a failed flush leaves the counts as they were.
                    carried = counts
                case .last(_, let extra):
                    for (entity, count) in counts.sorted(by: { $0.key < $1.key }) where count != (0, 0, 0) {
                        transaction.history?.recordMigration(entityID: entity, inserted: count.inserted, updated: count.updated,
                                                             deleted: count.deleted)
                    }
                    transaction.updateMigration { $0.closureFlushed = false }
                    try extra(transaction)
                }
            }
        }
        return carried
    }

    /// Commits every unsaved change and `extra`'s writes (the stage's progress) in one
    /// durable transaction — what a migration stage does with its closures' contexts. The
    /// history journal gets one summary per entity for the closure, its flushes included.
    func saveWithStage(_ extra: @escaping (RecordTransaction) throws -> Void) throws {
        try Self.write(changes, to: store, author: author, stage: .last(stageFlush.map(state(of:)), extra))
        forgetChanges()
    }

    func state(of flush: StageFlush) -> FlushState {
        FlushState(flushes: flush.flushes, firstNewIDs: flush.firstNewIDs, counts: flush.counts)
    }

    /// A migration closure's context: writes the unsaved changes into the store when they pass
    /// the flush bounds, in a commit of the migration that flags the marker (so a crash
    /// before the closure's last commit undoes the migration instead of resuming the closure).
    /// The flush is written on the closure's thread, and not synced: the closure's last commit
    /// syncs it. (Written on a thread of its own while the closure went on, it cost more CPU
    /// time than it saved on two cores: Docs/Migrations.md, "Closures on large stores".)
    func flushIfNeeded() throws {
        guard let stageFlush, unsavedChangeCount >= stageFlush.maximumChanges || unsavedBytes >= stageFlush.maximumBytes else { return }
        stageFlush.counts = try Self.write(changes, to: store, author: author, stage: .flush(state(of: stageFlush)))
        stageFlush.flushes += 1
        forgetChanges()
    }
}
