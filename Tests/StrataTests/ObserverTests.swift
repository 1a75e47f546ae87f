#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `Store.write` called synchronously (the async overload is preferred in async code).
func commit<T>(_ store: Store, author: String? = nil, _ body: (Store.WriteTransaction) throws -> T) throws -> T {
    try store.write(author: author, body)
}

@Suite struct ObserverTests {
    @Test func historyObserverDeliversTheBacklogThenEachNewCommitFiltered() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try HistoryTests.open(folder)
        try commit(store, author: "app") { _ = try $0.insert(Note(title: "1", body: "", rank: 1)) }
        try commit(store, author: "widget") { _ = try $0.insert(Note(title: "2", body: "", rank: 2)) }
        var all = store.observeHistory(after: .start).makeAsyncIterator()
        var notesByApp = store.observeHistory(after: .start, entities: [Note.self], excludedAuthors: ["widget"]).makeAsyncIterator()
        #expect(try await all.next()?.token == HistoryToken(rawValue: 1))
        #expect(try await all.next()?.token == HistoryToken(rawValue: 2))
        #expect(try await notesByApp.next()?.token == HistoryToken(rawValue: 1))
        // The next commits arrive as they are made: from another task while this one waits.
        let writer = Task.detached {
            try commit(store, author: "widget") { _ = try $0.insert(Note(title: "3", body: "", rank: 3)) }
            try commit(store, author: "app") { _ = try $0.insert(Folder(name: "f")) }
            try commit(store, author: "app") { _ = try $0.insert(Note(title: "5", body: "", rank: 5)) }
        }
        #expect(try await all.next()?.author == "widget")
        #expect(try await all.next()?.changes.first?.entityName == "Folder")
        #expect(try await all.next()?.token == HistoryToken(rawValue: 5))
        // Token 3 is the widget's, 4 a Folder: the filtered observer skips both.
        #expect(try await notesByApp.next()?.token == HistoryToken(rawValue: 5))
        try await writer.value
    }

    @Test func historyObserverEndsWhenItsTaskIsCancelled() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try HistoryTests.open(folder)
        let observing = Task {
            var received = 0
            for try await _ in store.observeHistory(after: .start) { received += 1 }
            return received
        }
        try commit(store) { _ = try $0.insert(Note(title: "1", body: "", rank: 1)) }
        // Cancelling ends the loop whether it is waiting or delivering; no commit is needed.
        observing.cancel()
        let received = try await observing.value
        #expect(received <= 1)
    }

    @Test func observersWaitingForACommitEndWhenTheStoreCloses() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try HistoryTests.open(folder)
        let observing = Task {
            var iterator = store.observeHistory(after: .start).makeAsyncIterator()
            _ = try await iterator.next()  // waits: nothing is journaled yet
        }
        let results = Task {
            var iterator = store.observeResults(FetchDescriptor<Note>()).makeAsyncIterator()
            _ = try await iterator.next()  // the first results, at once
            _ = try await iterator.next()  // waits for a commit
        }
        try await Task.sleep(for: .milliseconds(50))  // lets both start waiting (the test holds either way)
        // A bound so an observer that never wakes fails the test (cancelled, it ends without
        // the error) instead of hanging it; not a timing assertion.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            observing.cancel()
            results.cancel()
        }
        try store.close()
        await #expect(throws: StrataError.closed) { try await observing.value }
        await #expect(throws: StrataError.closed) { try await results.value }
        watchdog.cancel()
    }

    @Test func historyObserverThrowsTruncatedWhenRetentionPassesIt() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try HistoryTests.open(folder)
        for index in 0..<3 { try commit(store) { _ = try $0.insert(Note(title: "\(index)", body: "", rank: index)) } }
        var iterator = store.observeHistory(after: .start).makeAsyncIterator()
        try store.deleteHistory(before: HistoryToken(rawValue: 3))
        await #expect(throws: StrataError.historyTruncated(requested: .start, oldestAvailable: HistoryToken(rawValue: 2))) {
            _ = try await iterator.next()
        }
    }

    @Test func resultsObserverPatchesTheResultsLikeARefetch() async throws {
        let seed = SeededRandom.seed(default: 2026_11_30)
        print("ObserverTests.resultsObserverPatchesTheResultsLikeARefetch seed \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try HistoryTests.open(folder)
        var ids: [RecordID<Note>] = try commit(store) { transaction in
            try (0..<300).map { try transaction.insert(Note(title: "n\($0)", body: "", rank: $0 % 50)) }
        }
        let descriptor = FetchDescriptor<Note>(predicate: #Predicate { $0.rank >= 10 }, sortBy: [RecordSort(\.rank, order: .reverse), RecordSort(\.title)])
        var iterator = store.observeResults(descriptor).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.records == (try Context(store).fetch(descriptor)))
        #expect(first.changes.inserted == Array(first.records.indices))
        var current = first.records
        for round in 0..<60 {
            var changed = Set<RecordID<Note>>()
            let touchesNotes = round % 7 != 3
            try commit(store) { transaction in
                guard touchesNotes else { _ = try transaction.insert(Folder(name: "unrelated \(round)")); return }
                for _ in 0..<Int.random(in: 1...(round % 10 == 0 ? 400 : 4), using: &random) {
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0:
                        let id = try transaction.insert(Note(title: "r\(round)", body: "", rank: Int.random(in: 0..<60, using: &random)))
                        ids.append(id)
                        changed.insert(id)
                    case 1 where !ids.isEmpty:
                        let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                        try transaction.update(id, to: Note(title: "u\(round)", body: "", rank: Int.random(in: 0..<60, using: &random)))
                        changed.insert(id)
                    case 2 where !ids.isEmpty:
                        let id = ids.remove(at: Int.random(in: 0..<ids.count, using: &random))
                        try transaction.delete(id)
                        changed.insert(id)
                    default: break
                    }
                }
            }
            let expected = try Context(store).fetch(descriptor)
            guard expected != current else { continue }  // nothing to deliver
            let next = try #require(try await iterator.next())
            #expect(next.records == expected, "round \(round)")
            ResultsChangesTests.check(next.changes, from: current, to: expected, changed: changed, "round \(round)")
            current = expected
        }
        // A commit that changes none of the results delivers nothing; the next one that does is
        // delivered alone.
        try commit(store) { _ = try $0.insert(Note(title: "low", body: "", rank: 0)) }  // fails the predicate
        let top = try commit(store) { try $0.insert(Note(title: "top", body: "", rank: 99)) }
        let next = try #require(try await iterator.next())
        #expect(next.records.first?.id == top)
        #expect(next.changes == ResultsChanges(deleted: [], inserted: [0], updated: [], moved: []))
    }

    @Test func resultsObserverWithALimitRefetchesAndReportsTheWindow() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try HistoryTests.open(folder)
        let ids = try commit(store) { transaction in try (0..<10).map { try transaction.insert(Note(title: "n\($0)", body: "", rank: $0)) } }
        var iterator = store.observeResults(FetchDescriptor<Note>(sortBy: [RecordSort(\.rank)], fetchLimit: 3)).makeAsyncIterator()
        #expect(try await iterator.next()?.records.map(\.id) == Array(ids[0..<3]))
        try commit(store) { _ = try $0.delete(ids[1]) }
        let next = try #require(try await iterator.next())
        #expect(next.records.map(\.id) == [ids[0], ids[2], ids[3]])
        #expect(next.changes == ResultsChanges(deleted: [1], inserted: [2], updated: [], moved: []))
    }
}

/// The history observer across processes: a child process writes the store while the parent,
/// which opened it read-only, observes its history (Docs/History.md, "Observing").
@Suite(.serialized) struct CrossProcessHistoryTests {
    /// Run by `aReadOnlyObserverReceivesAnotherProcesssTransactions` as a child process: writes two
    /// transactions as "child" to the store named by STRATA_HISTORY_WRITE_STORE, then reports
    /// to STRATA_HISTORY_REPORT.
    @Test func childWritesTwoTransactions() throws {
        guard let folder = getenv("STRATA_HISTORY_WRITE_STORE").map({ String(cString: $0) }),
              let report = getenv("STRATA_HISTORY_REPORT").map({ String(cString: $0) }) else { return }
        do {
            let store = try Store(at: folder, schema: PeopleV1.self)
            try store.write(author: "child") { transaction in
                for age in 100..<105 { try transaction.insert(PeopleV1.Person(fullName: "From the child", age: age)) }
            }
            try store.write(author: "child") { try $0.update(RecordID<PeopleV1.Person>(rawValue: 1), to: PeopleV1.Person(fullName: "Renamed", age: 0)) }
            try store.close()
            writeTextFile(report, "done")
        } catch {
            writeTextFile(report, "\(error)")
        }
    }

    @Test func aReadOnlyObserverReceivesAnotherProcesssTransactions() async throws {
        guard getenv("STRATA_HISTORY_WRITE_STORE") == nil else { return }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: 10)  // token 1
        var configuration = Store.Configuration()
        configuration.isReadOnly = true
        let reader = try Store(at: folder, schema: PeopleV1.self, configuration: configuration)
        let start = try reader.currentHistoryToken()
        #expect(start == HistoryToken(rawValue: 1))
        let report = folder + "-report"
        defer { unlink(report) }
        let observing = Task {
            var received: [HistoryTransaction] = []
            for try await transaction in reader.observeHistory(after: start, authors: ["child"]) {
                received.append(transaction)
                if received.count == 2 { break }
            }
            return received
        }
        // A bound so a broken observer fails the test instead of hanging it (not a timing assertion).
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            observing.cancel()
        }
        let child = ChildRun("CrossProcessHistoryTests/childWritesTwoTransactions",
                             environment: ["STRATA_HISTORY_WRITE_STORE": folder, "STRATA_HISTORY_REPORT": report])
        let received = try await observing.value
        watchdog.cancel()
        #expect(child.wait() == 0)
        #expect(readTextFile(report) == "done")
        #expect(received.map(\.token.rawValue) == [2, 3])
        #expect(received.first?.changes.count == 5)
        #expect(received.first?.changes.allSatisfy { $0.kind == .insert && $0.entityName == "Person" } == true)
        #expect(received.last?.changes.first?.updatedAttributes == [AttributeChange(name: "fullName", oldValue: "Last0, First0", newValue: "Renamed")])
        try reader.close()
    }
}
