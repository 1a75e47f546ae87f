#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataRecords
import StrataHistory

/// Live results of a fetch: an `AsyncSequence` whose first element is the descriptor's
/// results now, and each next one the results after a commit that changed them, with what
/// changed. SwiftUI lists and collection views apply `changes` as a batch update.
///
/// ```swift
/// for try await results in store.observeResults(FetchDescriptor<Person>(sortBy: [RecordSort(\.fullName)])) {
///     rows = results.records
///     apply(results.changes)  // see ResultsChanges: what each array means, in which list, in what order
/// }
/// ```
///
/// After the first element, results are computed incrementally from the history journal: only
/// the records a commit inserted, updated or deleted are read, checked against the predicate and
/// placed by binary search in the sort order — not the whole query again. The query is run
/// again instead when a commit changed more than an eighth of the results (or 1,000 records),
/// when the descriptor has a fetch limit or offset, when the journal is off or no longer holds
/// the commits since the last element, or after a migration. A commit that changes nothing
/// in the results delivers nothing. The sequence ends (returns nil) when its task is cancelled.
public struct ResultsObserver<Record: PersistentRecord>: AsyncSequence {
    /// The results with what changed since the previous element.
    public typealias Element = LiveResults<Record>

    let store: Store
    let descriptor: FetchDescriptor<Record>

    /// Live results of `descriptor` in `store`.
    public init(store: Store, descriptor: FetchDescriptor<Record>) {
        self.store = store
        self.descriptor = descriptor
    }

    /// An iterator whose first element is the current results.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(store: store, descriptor: descriptor) }

    /// Delivers the results after each commit that changes them.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: Store
        let descriptor: FetchDescriptor<Record>
        /// The results last delivered, and the token they are as of (nil: none delivered yet).
        var current: [Identified<Record>] = []
        /// `current`'s identifiers, kept in step: the patch path scans these, not the records.
        var ids: [UInt64] = []
        var token: HistoryToken?

        init(store: Store, descriptor: FetchDescriptor<Record>) {
            self.store = store
            self.descriptor = descriptor
        }

        /// The next results: at once the first time, then after the next commit that changes
        /// them; nil once the task is cancelled.
        /// - Throws: what a fetch throws.
        public mutating func next() async throws -> LiveResults<Record>? {
            try await next(isolation: nil)
        }

        /// The next results, running in the caller's isolation.
        /// - Throws: as ``next()``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> LiveResults<Record>? {
            while true {
                if Task.isCancelled { return nil }
                let generation = store.records.commitGeneration
                if let results = try store.nextResults(descriptor, after: &token, current: &current, ids: &ids) { return results }
                await store.waitForChange(after: generation)
            }
        }
    }
}

/// The results of a fetch at one moment, and how they differ from the previous element of a
/// ``ResultsObserver``.
public struct LiveResults<Record: PersistentRecord> {
    /// The records the descriptor selects, in its order.
    public let records: [Identified<Record>]
    /// What changed since the previous element (for the first: every record inserted).
    public let changes: ResultsChanges
    /// The results are as of this transaction (`HistoryToken.start` when none was journaled).
    public let token: HistoryToken
}

extension LiveResults: Sendable where Record: Sendable {}

/// How a list of results changed: what turns the previous list into the new one.
///
/// Index spaces: `deleted` and each move's `from` are indices in the **previous** list;
/// `inserted`, `updated` and each move's `to` are indices in the **new** list. Each array is
/// sorted ascending (`moved` by `to`).
///
/// - `deleted`: the records in the previous list that are not in the new one.
/// - `inserted`: the records in the new list that were not in the previous one.
/// - `moved`: the records in both lists that changed place. The records in both lists that
///   are not moved — the ones that stay — are in the same order in both: the previous list
///   without its deleted and moved records equals the new list without its inserted and moved
///   records. A record is moved whether or not its own values changed (of two records that
///   swap places, one is moved), and no move is listed that the others do not make necessary:
///   keeping any one moved record in place would break that order. When the history journal
///   tells which records changed, unchanged ones are never moved (they cannot change order
///   among themselves); when nothing tells (the journal is off, no longer reaches back, or a
///   migration ran), moves are computed from the two lists alone: as few as keep the others
///   in order.
/// - `updated`: the records in both lists whose values changed, moved or not; when nothing
///   tells which changed, every record in both lists.
///
/// Applied in this order, they turn the previous list into the new one:
/// 1. remove the records at `deleted` and at each move's `from` from the previous list (all at
///    once, or one by one from the highest index down);
/// 2. insert, in ascending order of their new index, the new list's records at `inserted`
///    and each moved record at its move's `to`;
/// 3. replace the records at `updated` with the new list's values.
///
/// These are the index spaces of a list view's batch update: deletions and move sources in the
/// old list, insertions and move destinations in the new one.
public struct ResultsChanges: Sendable, Equatable {
    /// Indices in the previous results of the records no longer in the results.
    public let deleted: [Int]
    /// Indices in the new results of records that were not in the previous results.
    public let inserted: [Int]
    /// Indices in the new results of records in both whose values changed, whether they moved
    /// or not (every record in both when nothing tells which changed).
    public let updated: [Int]
    /// The records in both results that changed place, as (index in the previous results,
    /// index in the new), sorted by the new index: removing them and the deleted records from
    /// the previous results leaves the records that stay, in their order in the new results;
    /// inserting them and the inserted records at their new indices, lowest first, gives the
    /// new results. See ``ResultsChanges`` for the whole definition.
    public let moved: [Move]

    /// A record that changed place.
    public struct Move: Sendable, Equatable {
        /// Its index in the previous results.
        public let from: Int
        /// Its index in the new results.
        public let to: Int

        /// A move from index `from` to index `to`.
        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { deleted.isEmpty && inserted.isEmpty && updated.isEmpty && moved.isEmpty }

    /// A change set.
    public init(deleted: [Int], inserted: [Int], updated: [Int], moved: [Move]) {
        self.deleted = deleted
        self.inserted = inserted
        self.updated = updated
        self.moved = moved
    }
}

extension Store {
    /// Live results of `descriptor`: see ``ResultsObserver``.
    public func observeResults<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>) -> ResultsObserver<Record> {
        ResultsObserver(store: self, descriptor: descriptor)
    }

    /// The results after `token` (nil: the first, all inserted), or nil when no commit since
    /// changed them; updates `token`, `current` and `ids` (`current`'s identifiers).
    func nextResults<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>, after token: inout HistoryToken?,
                                               current: inout [Identified<Record>], ids: inout [UInt64]) throws -> LiveResults<Record>? {
        let snapshot = try translating { try self.snapshot() }
        let context = Context(self, reading: snapshot)
        let newest = HistoryToken(rawValue: (snapshot.history?.nextToken ?? 1) - 1)
        guard let previous = token else {
            current = try context.fetch(descriptor)
            ids = current.map(\.id.rawValue)
            token = newest
            return LiveResults(records: current, changes: ResultsChanges(deleted: [], inserted: Array(current.indices), updated: [], moved: []),
                               token: newest)
        }
        // What changed since: the journal's changes to the entity and its sub-entities (nil:
        // unknown — the journal is off, no longer reaches back, or a migration ran).
        var affected: Set<UInt64>? = []
        var canPatch = descriptor.fetchLimit == nil && descriptor.fetchOffset == nil
        if !configuration.history.isEnabled {
            affected = nil
        } else if newest == previous {
            return nil
        } else {
            let budget = max(1_000, current.count / 8)
            do {
                try scanHistory(HistoryDescriptor(after: previous, entities: [Record.self]), in: snapshot) { transaction in
                    for change in transaction.changes {
                        guard change.kind != .migration else { affected = nil; return false }
                        affected?.insert(change.recordNumber)
                    }
                    if (affected?.count ?? 0) > budget { canPatch = false }
                    return affected != nil
                }
            } catch StrataError.historyTruncated {
                affected = nil
            }
            if affected?.isEmpty == true { token = newest; return nil }
        }
        token = newest
        let changes: ResultsChanges
        if canPatch, let affected {
            let changed = AffectedRecords(affected)
            let before = Self.places(of: changed, in: ids)
            // Patched in place: the previous list is dropped first, so the array is not copied
            // (unless the app still holds the previous element's records).
            var results = current
            current = []
            do {
                try patch(&results, ids: &ids, removing: before, changed: changed, descriptor: descriptor, context: context)
            } catch {
                token = nil  // the list is half patched: a next call starts over with a full fetch
                throw error
            }
            changes = Self.patchChanges(before: before, after: Self.places(of: changed, in: ids))
            current = results
        } else {
            let results = try context.fetch(descriptor)
            changes = Self.changes(from: current, to: results, affected: affected)
            current = results
            ids = results.map(\.id.rawValue)
        }
        guard !changes.isEmpty else { return nil }
        return LiveResults(records: current, changes: changes, token: newest)
    }

    /// Patches `results`: removes the records at `places` (those `changed` names, found in
    /// it), then reads each changed record again and, when it exists and matches the predicate,
    /// places it by binary search in the sort order.
    private func patch<Record: PersistentRecord>(_ results: inout [Identified<Record>], ids: inout [UInt64],
                                                 removing places: [UInt64: (index: Int, rank: Int)], changed: AffectedRecords,
                                                 descriptor: FetchDescriptor<Record>, context: Context) throws {
        let doomed = places.values.map(\.index).sorted()
        if doomed.count > 8 {
            results.removeAll { changed.contains($0.id.rawValue) }
            ids.removeAll { changed.contains($0) }
        } else {
            for index in doomed.reversed() {
                results.remove(at: index)
                ids.remove(at: index)
            }
        }
        func precedes(_ a: Identified<Record>, _ b: Identified<Record>) -> Bool {
            for key in descriptor.sortBy {
                if let precedes = key.precedes(a.record, b.record) { return precedes }
            }
            return a.id < b.id
        }
        for number in changed.ids.sorted() {
            let id = RecordID<Record>(rawValue: number)
            guard let record = try context.record(for: id) else { continue }
            if let predicate = descriptor.predicate, try !predicate.evaluate(record) { continue }
            let item = Identified(id: id, record: record)
            var low = 0, high = results.count
            while low < high {
                let middle = (low + high) / 2
                if precedes(results[middle], item) { low = middle + 1 } else { high = middle }
            }
            results.insert(item, at: low)
            ids.insert(number, at: low)
        }
    }

    /// The change set from `old` to `new`, records matched by id: those in both are updated
    /// when `affected` names them (every one when `affected` is nil: nothing tells which
    /// changed); which of them moved, ``moves(_:)`` decides, the others staying in place.
    static func changes<Record>(from old: [Identified<Record>], to new: [Identified<Record>], affected: Set<UInt64>?) -> ResultsChanges {
        var oldIndex: [UInt64: Int] = [:]
        oldIndex.reserveCapacity(old.count)
        for (index, item) in old.enumerated() { oldIndex[item.id.rawValue] = index }
        var newIDs = Set<UInt64>()
        newIDs.reserveCapacity(new.count)
        for item in new { newIDs.insert(item.id.rawValue) }
        func isStable(_ id: UInt64) -> Bool { affected.map { !$0.contains(id) } ?? false }
        // A changed record's rank: how many stable records (in both, unchanged) precede it.
        var oldRank: [UInt64: Int] = [:]
        var stable = 0
        for item in old where newIDs.contains(item.id.rawValue) {
            if isStable(item.id.rawValue) { stable += 1 } else { oldRank[item.id.rawValue] = stable }
        }
        var inserted: [Int] = [], updated: [Int] = [], candidates: [MoveCandidate] = []
        stable = 0
        for (index, item) in new.enumerated() {
            let id = item.id.rawValue
            guard let from = oldIndex[id] else { inserted.append(index); continue }
            if isStable(id) { stable += 1; continue }
            updated.append(index)
            candidates.append(MoveCandidate(from: from, to: index, rankBefore: oldRank[id] ?? -1, rankAfter: stable))
        }
        let deleted = old.indices.filter { !newIDs.contains(old[$0].id.rawValue) }
        return ResultsChanges(deleted: deleted, inserted: inserted, updated: updated, moved: moves(candidates))
    }

    /// Where each record `changed` names is in `items`: its index, and its rank — how many
    /// records `changed` does not name precede it.
    static func places(of changed: AffectedRecords, in ids: [UInt64]) -> [UInt64: (index: Int, rank: Int)] {
        var places: [UInt64: (index: Int, rank: Int)] = [:]
        for (index, id) in ids.enumerated() where changed.contains(id) {
            places[id] = (index, index - places.count)
        }
        return places
    }

    /// The change set of a patch, from the changed records' places before and after: every
    /// other record is in both lists in the same order (the same result as
    /// ``changes(from:to:affected:)``, without hashing every record).
    static func patchChanges(before: [UInt64: (index: Int, rank: Int)], after: [UInt64: (index: Int, rank: Int)]) -> ResultsChanges {
        var deleted: [Int] = [], inserted: [Int] = [], updated: [Int] = [], candidates: [MoveCandidate] = []
        for (id, place) in before where after[id] == nil { deleted.append(place.index) }
        for (id, place) in after {
            guard let previous = before[id] else { inserted.append(place.index); continue }
            updated.append(place.index)
            candidates.append(MoveCandidate(from: previous.index, to: place.index, rankBefore: previous.rank, rankAfter: place.rank))
        }
        candidates.sort { $0.to < $1.to }
        return ResultsChanges(deleted: deleted.sorted(), inserted: inserted.sorted(), updated: updated.sorted(), moved: moves(candidates))
    }

    /// A record in both lists that may have changed place: its indices, and its ranks — how
    /// many records that stay in place regardless (unchanged ones) precede it — in each list.
    struct MoveCandidate {
        let from: Int, to: Int
        let rankBefore: Int, rankAfter: Int
    }

    /// Which of `candidates` (sorted by `to`) move: all but the largest set that can stay in
    /// place — in the same order in both lists, among themselves and among the records that
    /// stay regardless. A candidate whose rank changed crossed one of those and moves; of the
    /// others, a longest run whose `from` increases in the order of `to` stays (candidates of
    /// different ranks are then in order already: ranks follow both orders). Sorted by `to`.
    static func moves(_ candidates: [MoveCandidate]) -> [ResultsChanges.Move] {
        // Longest increasing subsequence of `from` (patience sorting): `tails[k]` is the
        // position in `candidates` of the smallest `from` ending an increasing run of k + 1,
        // `previous` links each position to the one before it in its run.
        var tails: [Int] = [], previous = [Int](repeating: -1, count: candidates.count)
        for (position, candidate) in candidates.enumerated() where candidate.rankBefore == candidate.rankAfter {
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if candidates[tails[middle]].from < candidate.from { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var staying = [Bool](repeating: false, count: candidates.count)
        var position = tails.last ?? -1
        while position >= 0 {
            staying[position] = true
            position = previous[position]
        }
        return candidates.indices.filter { !staying[$0] }.map { ResultsChanges.Move(from: candidates[$0].from, to: candidates[$0].to) }
    }
}

/// The record numbers a commit changed, with their range for a quick first test.
struct AffectedRecords {
    let ids: Set<UInt64>
    let lowest: UInt64, highest: UInt64

    init(_ ids: Set<UInt64>) {
        self.ids = ids
        lowest = ids.min() ?? .max
        highest = ids.max() ?? 0
    }

    func contains(_ id: UInt64) -> Bool { id >= lowest && id <= highest && ids.contains(id) }
}
