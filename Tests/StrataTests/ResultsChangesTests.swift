#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// `ResultsChanges` as an app uses it: each change set the results observer delivers, applied to
/// the previous list exactly the way its documentation says, must give the new list — ids, order
/// and values — under every path that computes it (patched from the journal, refetched with the
/// journal's list of changed records, refetched with the journal off).
@Suite struct ResultsChangesTests {
    /// `old` with `changes` applied in the documented order: remove the records at `deleted` and
    /// at each move's `from` (old indices); insert, lowest new index first, `new`'s records at
    /// `inserted` and each moved record (as it was in `old`) at its move's `to`; replace the
    /// records at `updated` with `new`'s. Nil (and a recorded issue) when an index is out of
    /// range or listed twice.
    static func apply<Record>(_ changes: ResultsChanges, to old: [Identified<Record>], new: [Identified<Record>]) -> [Identified<Record>]? {
        let removed = changes.deleted + changes.moved.map(\.from)
        let added = changes.inserted + changes.moved.map(\.to)
        guard removed.allSatisfy(old.indices.contains), added.allSatisfy(new.indices.contains),
              changes.updated.allSatisfy(new.indices.contains), Set(removed).count == removed.count, Set(added).count == added.count else {
            Issue.record("indices out of range or listed twice: \(changes) from \(old.count) to \(new.count) records")
            return nil
        }
        let removing = Set(removed)
        var list = old.indices.filter { !removing.contains($0) }.map { old[$0] }
        let insertions = changes.inserted.map { (index: $0, item: new[$0]) } + changes.moved.map { (index: $0.to, item: old[$0.from]) }
        for insertion in insertions.sorted(by: { $0.index < $1.index }) {
            guard insertion.index <= list.count else {
                Issue.record("insertion at \(insertion.index) past the end (\(list.count) records): \(changes)")
                return nil
            }
            list.insert(insertion.item, at: insertion.index)
        }
        guard list.count == new.count else {
            Issue.record("\(list.count) records after removing and inserting, \(new.count) expected: \(changes)")
            return nil
        }
        for index in changes.updated { list[index] = new[index] }
        return list
    }

    /// Checks `changes` against its definition: applied to `old` it gives `new`; its arrays are
    /// sorted; no move is superfluous (keeping any one moved record in place breaks the order
    /// of the records that stay). With `changed` (the records the commits touched, known when
    /// the journal is on), `updated` names exactly those in both lists and only they move.
    static func check<Record: Equatable>(_ changes: ResultsChanges, from old: [Identified<Record>], to new: [Identified<Record>],
                                         changed: Set<RecordID<Record>>?, _ comment: Comment) {
        #expect(apply(changes, to: old, new: new) == new, comment)
        #expect(changes.deleted == changes.deleted.sorted() && changes.inserted == changes.inserted.sorted(), comment)
        #expect(changes.updated == changes.updated.sorted() && changes.moved.map(\.to) == changes.moved.map(\.to).sorted(), comment)
        for move in changes.moved { #expect(old[move.from].id == new[move.to].id, comment) }
        let oldIDs = old.map(\.id), newIDs = new.map(\.id)
        let movedIDs = Set(changes.moved.map { newIDs[$0.to] })
        let inBoth = Set(oldIDs).intersection(newIDs)
        for id in movedIDs {
            let staying = inBoth.subtracting(movedIDs).union([id])
            #expect(oldIDs.filter(staying.contains) != newIDs.filter(staying.contains), "\(comment): \(id) need not move")
        }
        if let changed {
            #expect(Set(changes.updated.map { newIDs[$0] }) == inBoth.intersection(changed), comment)
            #expect(movedIDs.isSubset(of: changed), "\(comment): a record no commit changed is moved")
        } else {
            #expect(changes.updated == Array(new.indices).filter { inBoth.contains(newIDs[$0]) }, comment)
        }
    }

    /// The three ways a change set is computed.
    enum Path: String, CaseIterable, CustomTestStringConvertible {
        /// Patched from the journal (and, in the rounds that change over 1,000 records,
        /// refetched with the journal's list of changed records).
        case patched
        /// Refetched with the journal's list of changed records: the descriptor has a limit.
        case limited
        /// Refetched with the journal off: moves computed from the two lists.
        case journalOff

        var testDescription: String { rawValue }
    }

    @Test(arguments: Path.allCases)
    func everyDeliveredChangeSetTurnsThePreviousListIntoARefetch(path: Path) async throws {
        let seed = SeededRandom.seed(default: 2026_12_21)
        print("ResultsChangesTests.everyDeliveredChangeSetTurnsThePreviousListIntoARefetch(\(path)) seed \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try HistoryTests.open(folder) { $0.history.isEnabled = path != .journalOff }
        func title(_ number: Int) -> String { "t" + String(1000 + number).dropFirst() }
        var ids: [RecordID<Note>] = try commit(store) { transaction in
            try (0..<200).map { try transaction.insert(Note(title: title($0 % 150), body: "", rank: $0 % 20)) }
        }
        let descriptor = FetchDescriptor<Note>(predicate: #Predicate { $0.rank >= 4 }, sortBy: [RecordSort(\.title), RecordSort(\.rank, order: .reverse)],
                                               fetchLimit: path == .limited ? 60 : nil)
        var iterator = store.observeResults(descriptor).makeAsyncIterator()
        var current = try #require(try await iterator.next()).records
        #expect(current == (try Context(store).fetch(descriptor)))
        var swaps = 0, moves = 0, delivered = 0
        for round in 0..<80 {
            var changed = Set<RecordID<Note>>()
            try commit(store) { transaction in
                func update(_ id: RecordID<Note>, _ change: (inout Note) -> Void) throws {
                    guard var note = try transaction.record(for: id) else { return }
                    change(&note)
                    try transaction.update(id, to: note)
                    changed.insert(id)
                }
                if round % 25 == 12 && path == .patched {
                    // Over 1,000 records changed: the results are refetched, not patched.
                    for number in 0..<1_050 {
                        let id = try transaction.insert(Note(title: title(number % 150) + "j", body: "", rank: number % 20))
                        ids.append(id)
                        changed.insert(id)
                    }
                }
                for _ in 0..<Int.random(in: 1...5, using: &random) {
                    switch Int.random(in: 0..<8, using: &random) {
                    case let kind where kind < 2 && current.count >= 2:
                        // Two neighbours swap places, both changed (issue 21: `t04` → `t05z`,
                        // `t05` → `t05a`), read as the list shows them.
                        let index = Int.random(in: 0..<(current.count - 1), using: &random)
                        let (first, second) = (current[index], current[index + 1])
                        try update(first.id) { $0.title = second.title + "z"; $0.rank = second.rank }
                        try update(second.id) { $0.title = second.title + "a"; $0.rank = first.rank }
                        swaps += 1
                    case 2 where !ids.isEmpty:
                        // A jump: to the front, the back, or anywhere.
                        let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                        let jump = ["", "~", title(Int.random(in: 0..<150, using: &random)) + "m"][Int.random(in: 0..<3, using: &random)]
                        try update(id) { $0.title = jump }
                    case 3 where !ids.isEmpty:
                        // The values change, the place does not (or the record enters or
                        // leaves the results through its rank).
                        let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                        try update(id) { $0.body += "b"; if Int.random(in: 0..<3, using: &random) == 0 { $0.rank = ($0.rank + 3) % 20 } }
                    case 4 where !ids.isEmpty:
                        let id = ids.remove(at: Int.random(in: 0..<ids.count, using: &random))
                        _ = try transaction.delete(id)
                        changed.insert(id)
                    default:
                        let id = try transaction.insert(Note(title: title(Int.random(in: 0..<150, using: &random)) + "i", body: "",
                                                             rank: Int.random(in: 0..<20, using: &random)))
                        ids.append(id)
                        changed.insert(id)
                    }
                }
            }
            let expected = try Context(store).fetch(descriptor)
            // With the journal on a commit that changes nothing in the results delivers
            // nothing; with it off every commit is delivered (nothing tells what changed).
            guard expected != current || path == .journalOff else { continue }
            let next = try #require(try await iterator.next())
            #expect(next.records == expected, "round \(round)")
            Self.check(next.changes, from: current, to: expected, changed: path == .journalOff ? nil : changed, "round \(round)")
            moves += next.changes.moved.count
            delivered += 1
            current = expected
        }
        print("ResultsChangesTests(\(path)): \(delivered) change sets, \(swaps) swaps, \(moves) moves")
        #expect(delivered >= 40 && swaps >= 20 && moves >= 20)
    }

    /// Ten notes `t00`…`t09` sorted by title, observed.
    static func tenNotes(journal: Bool) async throws -> (folder: String, store: Store, ids: [RecordID<Note>],
                                                       iterator: ResultsObserver<Note>.AsyncIterator) {
        let folder = try temporaryDirectory()
        let store = try HistoryTests.open(folder) { $0.history.isEnabled = journal }
        let ids = try commit(store) { transaction in try (0..<10).map { try transaction.insert(Note(title: "t0\($0)", body: "", rank: $0)) } }
        var iterator = store.observeResults(FetchDescriptor<Note>(sortBy: [RecordSort(\.title)])).makeAsyncIterator()
        #expect(try await iterator.next()?.records.map(\.id) == ids)
        return (folder, store, ids, iterator)
    }

    @Test(arguments: [true, false])
    func twoRecordsThatSwapPlacesAreReportedMoved(journal: Bool) async throws {
        let (folder, store, ids, observing) = try await Self.tenNotes(journal: journal)
        var iterator = observing
        defer { removeDirectory(folder) }
        try commit(store) { transaction in
            try transaction.update(ids[4], to: Note(title: "t05z", body: "", rank: 4))
            try transaction.update(ids[5], to: Note(title: "t05a", body: "", rank: 5))
        }
        let next = try #require(try await iterator.next())
        #expect(next.records.map(\.id) == ids[0..<4] + [ids[5], ids[4]] + ids[6...])
        // Before issue 21: updated [4, 5], moved [] — applied, the two kept their old order.
        #expect(next.changes == ResultsChanges(deleted: [], inserted: [], updated: journal ? [4, 5] : Array(0..<10),
                                               moved: [ResultsChanges.Move(from: 5, to: 4)]))
    }

    @Test func withTheJournalOffARecordThatJumpsFromFirstToLastIsMoved() async throws {
        let (folder, store, ids, observing) = try await Self.tenNotes(journal: false)
        var iterator = observing
        defer { removeDirectory(folder) }
        try commit(store) { try $0.update(ids[0], to: Note(title: "z", body: "", rank: 0)) }
        let next = try #require(try await iterator.next())
        #expect(next.records.map(\.id) == ids[1...] + [ids[0]])
        #expect(next.changes == ResultsChanges(deleted: [], inserted: [], updated: Array(0..<10), moved: [ResultsChanges.Move(from: 0, to: 9)]))
    }
}
