import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import StrataIO
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
        /// The images of the leaves the closure's enumerations read, which its flushes rewrite
        /// soon after: taken instead of read, verified and decompressed again. (Bounded: a
        /// flush's leaves, a few hundred of them, fit many times over.)
        let pageImages = PageImages(budget: 4 << 20)

        init(store: Store) {
            maximumChanges = store.configuration.migrationFlushChanges
            maximumBytes = store.configuration.migrationFlushBytes
            firstNewIDs = store.engine.nextIDsSnapshot()
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
        /// A flush written on a thread of its own waits for its sync there (the closure goes
        /// on meanwhile, and most of its bytes are durable by its last commit); one written on
        /// the closure's thread does not wait: the closure's last commit makes it durable.
        var inBackground = false
        /// `StageFlush.pageImages`.
        var pageImages: PageImages?
    }

    /// A flush in the background: its changes and, once written, its counts or error.
    final class Flushing: Sendable {
        let changes: [UInt32: [UInt64: Change]]
        /// The largest record id among `changes` (a lookup of a larger one need not hash it).
        let largestID: UInt64
        let finished = DispatchSemaphore(value: 0)
        let outcome = Lock<Result<Counts, any Error>?>(nil)

        init(changes: [UInt32: [UInt64: Change]]) {
            self.changes = changes
            largestID = changes.values.lazy.compactMap { $0.keys.max() }.max() ?? 0
        }
    }
    /// How a write belongs to a migration stage: a flush of a closure's changes (not waited for,
    /// flagged in the marker) or the closure's last commit, with the stage's progress.
    enum StageWrite {
        case flush(FlushState)
        case last(FlushState?, (RecordTransaction) throws -> Void)
    }

    /// Calls `body` with each of `changes` in ascending id order: the table walked once (no
    /// lookup per id), then ordered. The ids a context changes are often dense (a migration
    /// closure's enumeration, inserts of fresh ids): when they span at most four times their
    /// number, each is placed by id in a table of the span and the table read in order (linear
    /// time); otherwise they are sorted.
    static func forEachAscending(_ changes: [UInt64: Change], _ body: (UInt64, Change) throws -> Void) rethrows {
        var entries: [(id: UInt64, change: Change)] = []
        entries.reserveCapacity(changes.count)
        var low = UInt64.max, high: UInt64 = 0
        for (id, change) in changes {
            entries.append((id, change))
            low = min(low, id)
            high = max(high, id)
        }
        let count = entries.count
        if count > 1 && count < Int(Int32.max) && high - low < UInt64(count) &* 4 {
            var slots = [Int32](repeating: -1, count: Int(high - low) + 1)
            for index in entries.indices { slots[Int(entries[index].id - low)] = Int32(truncatingIfNeeded: index) }
            for slot in slots where slot >= 0 {
                let entry = entries[Int(slot)]
                try body(entry.id, entry.change)
            }
            return
        }
        entries.sort { $0.id < $1.id }
        for entry in entries { try body(entry.id, entry.change) }
    }

    /// Writes `changes` in one record-store transaction (relationships maintained, unique
    /// values checked: see ``save()``).
    /// Returns, for a flush, the closure's journal counts with this flush's added.
    @discardableResult
    static func write(_ changes: [UInt32: [UInt64: Change]], to store: Store, author: String?,
                              stage: StageWrite? = nil) throws -> Counts {
        try store.checkWritable()
        var carried: Counts = [:]
        var durability = store.configuration.durability
        var syncs = true
        if case .flush(let state)? = stage {
            // Before the closure's last commit a flush need not be durable: after a crash the
            // migration is undone anyway (invariant 26).
            durability = .durable
            syncs = state.inBackground
        }
        func commit(_ body: (RecordTransaction) throws -> Void) throws {
            if syncs {
                try store.records.write(durability: durability, body)
            } else {
                _ = try store.records.writeDeferringSync(body)
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
                    transaction.pageImages = flush?.pageImages
                    if let flush, flush.flushes > 0 {
                        let model = store.model, first = flush.firstNewIDs
                        transaction.history?.firstInsertedEarlier = { first[model.rootID(of: $0), default: 1] }
                    }
                }
                let graph = GraphTransaction(store: store, transaction: transaction)
                graph.reserveUpserts(changes.values.reduce(0) { $0 + $1.count })
                // In the order the trees are written (per entity: updates, then inserts, each by
                // id), so the graph's sort finds its input sorted.
                for entityID in changes.keys.sorted() {
                    guard let entityChanges = changes[entityID] else { continue }
                    var inserts: [(id: UInt64, bytes: [UInt8])] = []
                    Self.forEachAscending(entityChanges) { id, change in
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
        try waitForFlush()
        try Self.write(changes, to: store, author: author, stage: .last(stageFlush.map(state(of:)), extra))
        recordsWentStale(upTo: largestChangedID)
        forgetChanges()
    }

    func state(of flush: StageFlush) -> FlushState {
        FlushState(flushes: flush.flushes, firstNewIDs: flush.firstNewIDs, counts: flush.counts, pageImages: flush.pageImages)
    }

    /// A migration closure's context: writes the unsaved changes into the store when they pass
    /// the flush bounds, in a commit of the migration that flags the marker (so a crash
    /// before the closure's last commit undoes the migration instead of resuming the closure).
    ///
    /// When no entity of the store has a unique attribute and the process may run on two
    /// processors or more, the commit is written on a thread of its own while the closure goes
    /// on (its reads see the flushed changes through `flushing` meanwhile); the next flush, and
    /// the closure's last commit, wait for it first, and an error it met is thrown there. (A
    /// unique value is checked against the unsaved and the stored records: one being written
    /// would be neither. On one processor the two threads would only take turns: writing on the
    /// closure's thread saves the switches, about 10 % of a million-record split.)
    func flushIfNeeded() throws {
        guard let stageFlush, unsavedChangeCount >= stageFlush.maximumChanges || unsavedBytes >= stageFlush.maximumBytes else { return }
        try waitForFlush()
        var state = state(of: stageFlush)
        if !store.engine.uniqueAttributes.isEmpty || Processors.usable < 2 {
            stageFlush.counts = try Self.write(changes, to: store, author: author, stage: .flush(state))
            stageFlush.flushes += 1
            recordsWentStale(upTo: largestChangedID)
            forgetChanges()
            return
        }
        let flush = Flushing(changes: changes)
        let store = store, author = author
        state.inBackground = true
        let background = state
        // The thread writing the flush holds no reference to it: the context's is the last, so
        // the changes are freed on the closure's thread, which allocated them (`waitForFlush`).
        // The context lets go of a flush only once it is written (`waitForFlush`, `deinit`).
        let borrowed = Unmanaged.passUnretained(flush)
        DispatchQueue.global(qos: .userInitiated).async {
            borrowed._withUnsafeGuaranteedRef { flush in
                let outcome = Result { try Self.write(flush.changes, to: store, author: author, stage: .flush(background)) }
                flush.outcome.withLock { $0 = outcome }
                flush.finished.signal()
            }
        }
        flushing = flush
        stageFlush.flushes += 1
        forgetChanges()
    }

    /// Waits for the flush being written in the background, if any. On success its counts
    /// become the closure's; on error its changes come back into the context (under the ones
    /// made since) and the error is thrown.
    func waitForFlush() throws {
        guard let flush = flushing else { return }
        flush.finished.wait()
        flushing = nil
        // The flush's changes are freed on the closure's thread, which allocated them (freed on
        // another thread, each free took the allocator's arena lock the closure's allocations
        // take too: thousands of waits per million records): when its tables are emptied for
        // the next changes (`forgetChanges`), or here.
        switch flush.outcome.withLock({ $0 }) {
        case .success(let counts)?:
            recordsWentStale(upTo: flush.largestID)
            stageFlush?.counts = counts
            spareChanges = flush.changes  // its only holder once `flush` goes
        case .failure(let error)?:
            stageFlush?.flushes -= 1
            takeBack(flush.changes)
            throw error
        case nil:
            break
        }
    }
}
