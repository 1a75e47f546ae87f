#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataRecords
import StrataSchema

/// `Context.fetchCount`: counting what a descriptor selects without reading what it need not
/// (Architecture.md, "Counting").
extension Context {
    /// How many records a descriptor selects — `fetch(descriptor).count`, unsaved changes
    /// included, records of sub-entities included — without reading what it need not:
    ///
    /// - Without a predicate, no record is read: the count is the sum of the record counts the
    ///   store root keeps for the entity and its sub-entities, adjusted for this context's
    ///   unsaved inserts (added) and deletes of saved records (subtracted); unsaved updates
    ///   change nothing.
    /// - With a predicate, only the records the byte-level pre-filter cannot decide are
    ///   decoded and given to the predicate; the others are counted from the fields the
    ///   predicate tests (a record stored in overflow pages is judged from its first bytes
    ///   when its tested fields come before its large values). When an index holds exactly the
    ///   records the predicate selects (a conjunction of comparisons of one indexed attribute
    ///   with constants, bounded on both sides or an equality), the count comes from the index
    ///   entries without reading records.
    ///
    /// The offset and limit apply as in `fetch`: `min(limit, max(0, total − offset))`; the sort
    /// order does not matter. Unlike `fetch`, a count does not fail on a stored record that
    /// cannot be read as `Record` when it needs no decoding to be counted.
    /// - Throws: `.recordCoding` for a record that must be decoded and cannot be read as
    ///   `Record`; an error the predicate throws; storage errors.
    public func fetchCount<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>) throws -> Int {
        let entityID = try store.entityID(of: Record.self)
        let family = store.model.family(of: entityID)  // the entity and its sub-entities
        var pending = pendingChanges(of: entityID)
        for member in family where member != entityID { pending.merge(pendingChanges(of: member)) { first, _ in first } }
        let snapshot = try readSnapshot()
        let condition = try descriptor.predicate.map { try store.condition(for: $0) } ?? .constant(true)
        let offset = max(0, descriptor.fetchOffset ?? 0)
        let total: Int
        if condition == .constant(true) {
            total = try countAll(family, pending: pending, in: snapshot)
        } else {
            // Enough matches for the limit: the trees need not be read further.
            let wanted = descriptor.fetchLimit.map { max(0, $0) + offset }
            total = try countMatches(descriptor, condition: condition, family: family, pending: pending, wanted: wanted, in: snapshot)
        }
        let count = max(0, total - offset)
        return descriptor.fetchLimit.map { min(count, max(0, $0)) } ?? count
    }

    /// How many records of `family` this context sees: the trees' counts from the store root,
    /// less the saved records that have an unsaved change (each looked up, not read), plus
    /// the unsaved inserts and updates.
    private func countAll(_ family: [UInt32], pending: [UInt64: Change], in snapshot: RecordSnapshot) throws -> Int {
        var total = family.reduce(0) { $0 + Int(clamping: snapshot.root.entities[$1]?.tree.count ?? 0) }
        for (id, change) in pending {
            if case .upsert = change { total += 1 }
            // An unsaved insert's id is new: no tree holds it — unless a flush being written
            // (a migration stage's closure) has committed it since.
            if case .upsert(_, true) = change, flushing == nil { continue }
            for member in family where try translatingErrors({ try snapshot.reader(for: member).contains(id) }) {
                total -= 1
                break
            }
        }
        return total
    }

    /// How many records of `family` the predicate selects (as `fetch` sees them), counted
    /// without decoding the ones the pre-filter decides; stops reading the trees once
    /// `wanted` matched (the count is then cut to the limit anyway).
    private func countMatches<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>, condition: RecordCondition,
                                                        family: [UInt32], pending: [UInt64: Change], wanted: Int?,
                                                        in snapshot: RecordSnapshot) throws -> Int {
        let filters = condition.isUseful
        let (filter, prefixFilter) = Self.scanFilters(condition)
        var found = 0
        // Generic, so called only for records the pre-filter leaves undecided.
        func matches(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
            let record = try store.decode(Record.self, from: bytes)
            return try descriptor.predicate.map { try $0.evaluate(record) } ?? true
        }
        func consider(_ bytes: UnsafeRawBufferPointer, decided: Bool?) throws {
            if let decided { if decided { found += 1 } } else if try matches(bytes) { found += 1 }
        }
        let unsaved = pending  // a constant: the per-record closures read it without exclusivity checks
        for member in family {
            if let wanted, found >= wanted { break }
            let reader = snapshot.reader(for: member)
            let records = Int(clamping: snapshot.root.entities[member]?.tree.count ?? 0)
            if filters, let plan = store.indexPlan(for: member, condition: condition, in: snapshot) {
                // The index's entries are the answer (each re-checked only when its key was cut).
                if let index = snapshot.root.indexes[StoreRoot.IndexID(entityID: member, attributeID: plan.attributeID)],
                   Self.indexIsExact(for: condition, attributeID: plan.attributeID, range: plan.range, defaultKey: index.defaultKey) {
                    let scanned: Void? = try store.translating {
                        try snapshot.scanIndexExactly(entityID: member, attributeID: plan.attributeID, range: plan.range) { id, exact in
                            guard unsaved.isEmpty || unsaved[id] == nil else { return true }
                            if exact {
                                found += 1
                            } else {
                                try readCandidate(id, reader, member, condition) { try consider($0, decided: $1) }
                            }
                            return wanted.map { found < $0 } ?? true
                        }
                    }
                    if scanned != nil {
                        store.fetchPlans.indexed.add(1, ordering: .relaxed)
                        continue
                    }
                }
                let ids = try store.translating { try snapshot.indexedIDs(entityID: member, attributeID: plan.attributeID, range: plan.range) }
                // Reading most of the records one by one costs more than one scan.
                if ids.count <= records / 4 {
                    store.fetchPlans.indexed.add(1, ordering: .relaxed)
                    for id in ids.sorted() {
                        if let wanted, found >= wanted { break }
                        guard unsaved.isEmpty || unsaved[id] == nil else { continue }
                        try readCandidate(id, reader, member, condition) { try consider($0, decided: $1) }
                    }
                    continue
                }
            }
            store.fetchPlans.scanned.add(1, ordering: .relaxed)
            let threads = store.configuration.scanThreads
            let parallel = filters && wanted == nil && threads > 1 && UInt64(records) >= Self.parallelScanMinimum
            if parallel { store.fetchPlans.scannedInParallel.add(1, ordering: .relaxed) }
            // Records the pre-filter accepts are counted unread; an overflowed one is judged
            // from its first bytes and not assembled unless they leave it undecided.
            try translatingErrors {
                try reader.scanFiltered(threads: parallel ? threads : 1, filter: filter, prefixFilter: prefixFilter,
                                        readsAccepted: false) { id, bytes, decided in
                    guard unsaved.isEmpty || unsaved[id] == nil else { return true }
                    try consider(bytes, decided: decided)
                    return wanted.map { found < $0 } ?? true
                }
            }
        }
        for change in pending.values {
            if case .upsert(let bytes, _) = change {
                try bytes.withUnsafeBytes { bytes in
                    let decided = filters ? condition.evaluate(bytes) : nil
                    if decided != false { try consider(bytes, decided: decided) }
                }
            }
        }
        return found
    }

    /// Reads record `id` (a candidate an index named) and passes its bytes and the pre-filter's
    /// answer to `consider` unless the pre-filter rejects it.
    private func readCandidate(_ id: UInt64, _ reader: RecordTreeReader, _ member: UInt32, _ condition: RecordCondition,
                               _ consider: (UnsafeRawBufferPointer, Bool?) throws -> Void) throws {
        let present: Void? = try translatingErrors {
            try reader.withRecord(id) { bytes in
                let decided = condition.evaluate(bytes)
                if decided != false { try consider(bytes, decided) }
            }
        }
        guard present != nil else {
            throw StrataError.corruption(file: "index of entity \(member)", offset: 0,
                                         reason: "the index names record \(id), which does not exist")
        }
    }

    /// Whether the records an index yields for `range` (read by `Store.indexPlan` from
    /// `condition`) are exactly those `condition` accepts, so a count need not read them:
    /// `condition` is one comparison of the attribute with a constant, or a conjunction of
    /// such, all of one value type, none `!=`; the range is an equality or bounded on both
    /// sides (so it holds no null keys, no NaN after +∞ and no key of another kind); the
    /// value a record lacking the attribute reads as is the index's default (the key it is
    /// indexed by), and is not null unless the condition is equalities only (a missing value
    /// is then never equal); a record lacking an attribute without default that does not
    /// decode without it is keyed null, outside the range, and not counted (a fetch would
    /// throw on it). Entries whose keys were stored cut are still re-checked
    /// (`scanIndexExactly`). Strings and data compare as index keys order them: by canonical
    /// equivalence and NFC bytes (invariant 22, `IndexKey`), as Swift compares them.
    static func indexIsExact(for condition: RecordCondition, attributeID: UInt32, range: IndexRange, defaultKey: [UInt8]) -> Bool {
        var constants: [Value] = []
        var equalitiesOnly = true
        var absentValue: Value??
        func collect(_ condition: RecordCondition) -> Bool {
            switch condition {
            case .and(let a, let b): return collect(a) && collect(b)
            case .compare(let id, let comparison, let constant, let absent) where id == attributeID && comparison != .notEqual:
                guard !constant.isNull else { return false }
                if case .double(let d) = constant, d.isNaN { return false }
                if let first = absentValue, first != absent { return false }
                absentValue = .some(absent)
                if comparison != .equal { equalitiesOnly = false }
                constants.append(constant)
                return true
            default: return false
            }
        }
        guard collect(condition), let first = constants.first, let absentValue else { return false }
        guard constants.allSatisfy({ $0.hasSameType(as: first) }) else { return false }
        switch first {
        case .int, .double, .date, .string: break
        case .bool, .uuid: guard equalitiesOnly else { return false }
        default: return false
        }
        guard range.lower != nil, range.upper != nil else { return false }
        // A record lacking the attribute is keyed by the default; with none (the null key,
        // outside the range) it does not decode (a fetch would throw) or, for an optional, is
        // nil, which only equalities decide (false).
        guard let absent = absentValue else { return defaultKey == IndexKey.nullKey }
        if absent.isNull { return equalitiesOnly && defaultKey == IndexKey.nullKey }
        return IndexKey.encode(absent) == defaultKey
    }
}
