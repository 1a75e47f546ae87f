#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataPageLog
import StrataRecords
import StrataSchema

/// `Context.enumerate`: reading a descriptor's records batch by batch, in memory bounded by a
/// batch, while the block changes records through the context.
extension Context {
    /// Calls `block` with each record a descriptor selects, reading the store `batchSize`
    /// records at a time — SwiftData's `enumerate(_:batchSize:)`: memory is bounded by a batch,
    /// not by the store, where ``fetch(_:)`` holds every result at once.
    ///
    /// Records come in identifier order (records of sub-entities included, read as `Record`),
    /// each batch read from the store's latest snapshot with the context's unsaved changes
    /// applied, as `fetch` applies them; a predicate is evaluated as `fetch` evaluates it (the
    /// byte-level pre-filter first, so rejected records are never decoded). `fetchOffset` and
    /// `fetchLimit` apply to that order. Records inserted after the enumeration started (by
    /// `block` or another context) are not visited.
    ///
    /// `block` may insert, update and delete records through this context while it runs (there
    /// is no `allowEscapingMutations` to set): each record is visited **at most once**, and
    /// with the values it has when its turn comes — a record deleted before its turn is not
    /// visited, one updated before its turn is visited with its new values (and only if the
    /// predicate still accepts them). In a migration stage's `willMigrate` and `didMigrate`,
    /// the changes `block` makes are flushed into the store as they pile up (Docs/Migrations.md,
    /// "Closures on large stores"), so the whole loop — read, change, `save()` — runs in memory
    /// bounded by the batch and the flush, whatever the store's size.
    ///
    /// With `sortBy`, the records must be ordered before the first is visited: the matching
    /// records are read as `fetch` reads them (all held at once while they are sorted), then
    /// only their identifiers are kept and each record is read again, with its current
    /// values, at its turn. Memory then grows with the number of matching records.
    ///
    /// - Parameters:
    ///   - descriptor: The predicate, sort order, offset and limit.
    ///   - batchSize: How many records are read from the store at a time (at least 1).
    ///   - block: Called with each record and its identifier; what it throws ends the
    ///     enumeration and is rethrown.
    /// - Throws: `.recordCoding` for a stored record that cannot be read as `Record`; an error
    ///   the predicate or `block` throws; storage errors.
    @inlinable
    public func enumerate<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>, batchSize: Int = 5_000,
                                                    _ block: (Identified<Record>) throws -> Void) throws {
        // Inlinable, so the app's compiler specializes this shell for `Record` (decoding, the
        // predicate, `Identified`, the call of `block`); finding the records is not generic.
        var skip = max(0, descriptor.fetchOffset ?? 0)
        var remaining = descriptor.fetchLimit.map { max(0, $0) } ?? .max
        guard remaining > 0 else { return }
        if !descriptor.sortBy.isEmpty { return try enumerateSorted(descriptor, skip: skip, remaining: remaining, block) }
        try enumerateCandidates(of: Record.self, predicate: descriptor.predicate, batchSize: batchSize) { id, bytes, decided in
            let record = try decodeRecord(Record.self, from: bytes)
            if decided == nil, let predicate = descriptor.predicate, try !predicate.evaluate(record) { return true }
            if skip > 0 { skip -= 1; return true }
            // Moved into the pair, not copied (a copy retains and releases each of its strings).
            try block(Identified(id: RecordID(rawValue: id), record: consume record))
            remaining -= 1
            return remaining > 0
        }
    }

    /// `enumerate` with a sort order: every matching record is read as `fetch` reads them
    /// (all held at once while they are sorted), then only their identifiers are kept and each
    /// record is read again, with its current values, at its turn.
    @usableFromInline
    func enumerateSorted<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>, skip: Int, remaining: Int,
                                                   _ block: (Identified<Record>) throws -> Void) throws {
        var skip = skip, remaining = remaining
        var unlimited = descriptor
        unlimited.fetchLimit = nil
        unlimited.fetchOffset = nil
        let order = try fetch(unlimited).map(\.id.rawValue)
        for id in order {
            var current: Record?
            try withRecordBytes(of: Record.self, id: id) { current = try decodeRecord(Record.self, from: $0) }
            guard let record = current else { continue }  // deleted before its turn
            if let predicate = descriptor.predicate, try !predicate.evaluate(record) { continue }
            if skip > 0 { skip -= 1; continue }
            try block(Identified(id: RecordID(rawValue: id), record: record))
            remaining -= 1
            if remaining == 0 { return }
        }
    }

    /// The records of `type`'s entity and its sub-entities, in identifier order, as this
    /// context sees each one when its turn comes (see `enumerate`): `visit` gets each record's
    /// identifier, its bytes and the pre-filter's answer (nil: the predicate must decide), and
    /// returns whether to go on. While `visit` runs, `visiting` names the record.
    @usableFromInline
    func enumerateCandidates<Record: PersistentRecord>(of type: Record.Type, predicate: Predicate<Record>?, batchSize: Int,
                                                       _ visit: (UInt64, UnsafeRawBufferPointer, Bool?) throws -> Bool) throws {
        let entityID = try store.entityID(of: Record.self)
        let family = store.model.family(of: entityID)
        let condition = try predicate.map { try store.condition(for: $0) } ?? .constant(true)
        let filters = condition.isUseful
        // Records inserted from now on have larger identifiers: they are not visited.
        let end: UInt64 = pinnedSnapshot != nil ? .max : store.engine.nextID(ofHierarchyOf: entityID)
        let stretch = Stretch(family: family, end: end, count: max(1, batchSize), condition: condition, filters: filters)
        let watch = ReadWatch()
        readWatches.append(watch)
        defer { readWatches.removeAll { $0 === watch } }
        var cursor: UInt64 = 0  // the last identifier visited or passed
        // Stored records up to it were read in a batch whose candidates were all visited or
        // passed, and have not changed in the store since: the next batch's stored records
        // start after it (its unsaved ones, after the cursor).
        var readUpTo: UInt64 = 0
        // A batch's buffers, emptied and filled again for the next one (new ones each time were
        // new memory to fault in, a batch's worth per batch).
        var stored = StoredRecords(bound: end)
        var batch: [Candidate] = []
        while true {
            var generation = changeGeneration
            watch.staleUpTo = 0
            try stretch.read(in: try readSnapshot(), after: max(cursor, readUpTo), into: &stored, keepingImagesIn: stageFlush?.pageImages)
            merge(stored, family: family, after: cursor, filters: filters, condition: condition, into: &batch)
            if batch.isEmpty && stored.bound >= end { return }
            for candidate in batch {
                // Changes written into the store (saved, flushed) or rolled back reach past the
                // cursor: records after it may have changed, the batch is stale; read the
                // records after the cursor again. (Changes behind the cursor leave it as it is.)
                if watch.staleUpTo > cursor { break }
                generation = changeGeneration
                cursor = candidate.id
                // The record as this context sees it now: `visit` may have changed it since the
                // batch was read.
                var current: [UInt8]? = candidate.unsaved
                var decided = candidate.decided
                let own = ownChange(candidate.entity, candidate.id)
                switch own ?? inFlightChange(candidate.entity, candidate.id) {
                case .delete?: continue
                case .upsert(let bytes, _)?:
                    if candidate.unsaved.map({ $0 != bytes }) ?? true {
                        current = bytes
                        decided = filters ? bytes.withUnsafeBytes { condition.evaluate($0) } : nil
                        if decided == false { continue }
                    }
                case nil:
                    if candidate.unsaved != nil { continue }  // an unsaved insert since deleted
                }
                visiting = (candidate.id, candidate.entity, generation, own == nil ? changeStamp : nil)
                defer { visiting = nil }
                let goesOn = try current.map { try $0.withUnsafeBytes { try visit(candidate.id, $0, decided) } }
                    ?? stored.bytes.withUnsafeBytes { try visit(candidate.id, UnsafeRawBufferPointer(rebasing: $0[candidate.range]), decided) }
                if !goesOn { return }
            }
            readUpTo = watch.staleUpTo > cursor ? cursor : stored.bound - 1
        }
    }

    /// A record `enumerate` visits: its concrete entity, where its bytes lie in its
    /// `StoredRecords` buffer (no array per record), the pre-filter's answer, and the bytes of
    /// the unsaved change it came from (then `range` is empty).
    private struct Candidate {
        var id: UInt64
        var entity: UInt32
        var range: Range<Int>
        var decided: Bool?
        var unsaved: [UInt8]?
    }

    /// Stored records of a stretch of identifiers that the pre-filter does not reject, as one
    /// snapshot holds them: their bytes back to back in one buffer, and `bound`, below which
    /// every identifier of the stretch was read in every tree of the family.
    private struct StoredRecords {
        var records: [Candidate] = []
        var bytes: [UInt8] = []
        var bound: UInt64
    }

    /// How `enumerate` reads the store: which trees, up to which identifier, how many records
    /// and bytes a batch holds at most, and the pre-filter.
    private struct Stretch {
        /// The bytes past which a batch ends (after the record that passed them): records of
        /// megabytes do not make a batch of gigabytes.
        static let maximumBytes = 4 << 20

        let family: [UInt32]
        let end: UInt64
        let count: Int
        let condition: RecordCondition
        let filters: Bool

        /// Up to about `count` records of `family` in `snapshot` with identifiers after
        /// `cursor` and below `end` that the pre-filter does not reject, in identifier order:
        /// at most `count` (and about `maximumBytes`) from each tree, so the next batch starts
        /// after `bound`. Replaces what `stored` held, keeping its buffers.
        func read(in snapshot: RecordSnapshot, after cursor: UInt64, into stored: inout StoredRecords,
                  keepingImagesIn images: PageImages?) throws {
            stored.records.removeAll(keepingCapacity: true)
            stored.bytes.removeAll(keepingCapacity: true)
            stored.bound = end
            guard cursor < end - 1 || end == .max else { return }
            for member in family {
                var kept = 0
                let limit = stored.bound
                let firstByte = stored.bytes.count
                try translatingErrors {
                    // Read with pread, not through the memory map: a pass over a whole store leaves
                    // nothing of it mapped into the process.
                    // A migration closure's flush rewrites the leaves read: their images are
                    // kept for it (`StageFlush.pageImages`).
                    try snapshot.reader(for: member).scan(from: cursor + 1, mapped: false, keepingImagesIn: images) { id, bytes in
                        guard id < limit else { return false }
                        let decided = filters ? condition.evaluate(bytes) : nil
                        guard decided != false else { return true }
                        let start = stored.bytes.count
                        stored.bytes.append(contentsOf: bytes)
                        stored.records.append(Candidate(id: id, entity: member, range: start..<stored.bytes.count, decided: decided, unsaved: nil))
                        kept += 1
                        if kept == count || stored.bytes.count - firstByte >= Self.maximumBytes {
                            stored.bound = id + 1
                            return false
                        }
                        return true
                    }
                }
            }
            if family.count > 1 {
                let bound = stored.bound
                stored.records.removeAll { $0.id >= bound }
            }
        }
    }

    /// The records `enumerate` visits after `cursor`, as this context sees them now: the
    /// stored ones without an unsaved change (of this context or the flush being written),
    /// and the unsaved inserts and updates below the stored records' bound — in identifier
    /// order.
    private func merge(_ stored: StoredRecords, family: [UInt32], after cursor: UInt64, filters: Bool,
                       condition: RecordCondition, into batch: inout [Candidate]) {
        batch.removeAll(keepingCapacity: true)
        batch.reserveCapacity(stored.records.count)
        // No unsaved change has an identifier above these (an enumeration that changes each
        // record at its turn looks nothing up).
        let ownAbove = largestChangedID, inFlightAbove = flushing?.largestID ?? 0
        for record in stored.records where record.id > cursor {
            // The unsaved change wins (below).
            if record.id <= ownAbove, changes[record.entity]?[record.id] != nil { continue }
            if record.id <= inFlightAbove, flushing?.changes[record.entity]?[record.id] != nil { continue }
            batch.append(record)
        }
        var added = false
        if ownAbove > cursor || inFlightAbove > cursor {
            func add(_ entries: [UInt64: Change], member: UInt32, unless shadowing: [UInt64: Change]) {
                for (id, change) in entries where id > cursor && id < stored.bound && shadowing[id] == nil {
                    guard case .upsert(let bytes, _) = change else { continue }
                    let decided = filters ? bytes.withUnsafeBytes { condition.evaluate($0) } : nil
                    if decided != false { batch.append(Candidate(id: id, entity: member, range: 0..<0, decided: decided, unsaved: bytes)) }
                    added = true
                }
            }
            for member in family {
                let unsaved = changes[member] ?? [:]
                add(flushing?.changes[member] ?? [:], member: member, unless: unsaved)  // the context's own change wins
                add(unsaved, member: member, unless: [:])
            }
        }
        // The trees' records interleave, and the unsaved ones go between them.
        if family.count > 1 || added { batch.sort { $0.id < $1.id } }
    }

}

// MARK: - Staleness

extension Context {
    /// Records with identifiers up to `id` that an enumeration under way read (from the
    /// store, or from this context's changes) may no longer be what the store and the context
    /// hold: this context's changes up to `id` were written into the store (saved, flushed),
    /// or left it unwritten (rolled back, taken back: `.max`). Changes that only move into the
    /// flush being written are no such event: reads still see them (``inFlightChange(_:_:)``).
    func recordsWentStale(upTo id: UInt64) {
        guard !readWatches.isEmpty else { return }
        // A write may also change records it was not given: the inverses of relationships,
        // the record an insert's unique value matched in the store.
        let upTo = store.model.hasRelationships || !store.engine.uniqueAttributes.isEmpty ? UInt64.max : id
        for watch in readWatches { watch.wentStale(upTo: upTo) }
    }
}

/// What an enumeration under way (``Context/enumerate(_:batchSize:_:)``) learns from its
/// context: up to which identifier the records it read may have gone stale since
/// (``Context/recordsWentStale(upTo:)``). Records after the enumeration's position with
/// larger identifiers are still as read.
final class ReadWatch {
    /// Since the batch being visited was read.
    var staleUpTo: UInt64 = 0

    func wentStale(upTo id: UInt64) { staleUpTo = max(staleUpTo, id) }
}
