#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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
            try block(Identified(id: RecordID(rawValue: id), record: record))
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
        let size = max(1, batchSize)
        var cursor: UInt64 = 0  // the last identifier visited or passed
        while true {
            let generation = changeGeneration
            let batch = try readBatch(family: family, after: cursor, below: end, count: size, condition: condition, filters: filters)
            if batch.records.isEmpty { return }
            for candidate in batch.records {
                // The unsaved changes left the context (saved, flushed, rolled back): the batch is
                // stale; read the records after the cursor again.
                if changeGeneration != generation { break }
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
                    ?? batch.bytes.withUnsafeBytes { try visit(candidate.id, UnsafeRawBufferPointer(rebasing: $0[candidate.range]), decided) }
                if !goesOn { return }
            }
        }
    }

    /// Records `enumerate` read: the stored ones' bytes back to back in one buffer (no array
    /// per record), each record's concrete entity, the pre-filter's answer, and the bytes of
    /// an unsaved change it came from.
    private struct Batch {
        struct Record {
            var id: UInt64
            var entity: UInt32
            var range: Range<Int>
            var decided: Bool?
            var unsaved: [UInt8]?
        }
        var records: [Record] = []
        var bytes: [UInt8] = []
    }

    /// Up to about `count` records of `family` with identifiers after `cursor` and below `end`
    /// that the pre-filter does not reject, in identifier order, as this context sees them now:
    /// a stretch of identifiers read whole (at most `count` from each tree, plus the unsaved
    /// changes in that stretch), so the next batch starts after the last one.
    private func readBatch(family: [UInt32], after cursor: UInt64, below end: UInt64, count: Int,
                           condition: RecordCondition, filters: Bool) throws -> Batch {
        guard cursor < end - 1 || end == .max else { return Batch() }
        var batch = Batch()
        var bound = end  // identifiers below it are read whole in every tree
        let snapshot = try readSnapshot()
        for member in family {
            let pending = changes[member] ?? [:], inFlight = flushing?.changes[member] ?? [:]
            var kept = 0
            let limit = bound
            try translatingErrors {
                // Read with pread, not through the memory map: a pass over a whole store leaves
                // nothing of it mapped into the process.
                try snapshot.reader(for: member).scan(from: cursor + 1, mapped: false) { id, bytes in
                    guard id < limit else { return false }
                    if !pending.isEmpty, pending[id] != nil { return true }  // the unsaved change wins (below)
                    if !inFlight.isEmpty, inFlight[id] != nil { return true }
                    let decided = filters ? condition.evaluate(bytes) : nil
                    guard decided != false else { return true }
                    let start = batch.bytes.count
                    batch.bytes.append(contentsOf: bytes)
                    batch.records.append(Batch.Record(id: id, entity: member, range: start..<batch.bytes.count, decided: decided, unsaved: nil))
                    kept += 1
                    if kept == count {
                        bound = id + 1
                        return false
                    }
                    return true
                }
            }
        }
        for member in family {
            let unsaved = changes[member] ?? [:]
            for (id, change) in flushing?.changes[member] ?? [:] where id > cursor && id < bound && unsaved[id] == nil {
                guard case .upsert(let bytes, _) = change else { continue }
                let decided = filters ? bytes.withUnsafeBytes { condition.evaluate($0) } : nil
                if decided != false { batch.records.append(Batch.Record(id: id, entity: member, range: 0..<0, decided: decided, unsaved: bytes)) }
            }
            for (id, change) in unsaved where id > cursor && id < bound {
                guard case .upsert(let bytes, _) = change else { continue }
                let decided = filters ? bytes.withUnsafeBytes { condition.evaluate($0) } : nil
                if decided != false { batch.records.append(Batch.Record(id: id, entity: member, range: 0..<0, decided: decided, unsaved: bytes)) }
            }
        }
        if family.count > 1 { batch.records.removeAll { $0.id >= bound } }
        batch.records.sort { $0.id < $1.id }
        return batch
    }
}
