#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

struct Note: PersistentRecord, Equatable {
    var title: String
    var body: String
    var rank: Int
    static var attributeOptions: [String: Attribute.Options] { ["title": [.preserveValueOnDeletion]] }
}

struct Folder: PersistentRecord, Equatable {
    var name: String
}

@Suite struct HistoryTests {
    static func open(_ folder: String, configure: (inout Store.Configuration) -> Void = { _ in }) throws -> Store {
        var configuration = Store.Configuration()
        configure(&configuration)
        return try Store(at: folder, for: [Note.self, Folder.self], configuration: configuration)
    }

    @Test func insertsUpdatesAndDeletesAreJournaledWithTokensAuthorsAndValues() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        #expect(try store.currentHistoryToken() == .start)
        let context = Context(store, author: "app")
        let first = try context.insert(Note(title: "a", body: "one", rank: 1))
        let second = try context.insert(Note(title: "b", body: "two", rank: 2))
        let folderID = try context.insert(Folder(name: "inbox"))
        try context.save()
        let afterInsert = try store.currentHistoryToken()
        #expect(afterInsert == HistoryToken(rawValue: 1))

        try context.update(first, to: Note(title: "a", body: "uno", rank: 10))
        try context.delete(second)
        context.author = "sync"
        try context.save()
        try store.write(author: "importer") { try $0.update(folderID, to: Folder(name: "archive")) }

        let all = try store.fetchHistory()
        #expect(all.map(\.token.rawValue) == [1, 2, 3])
        #expect(all.map(\.author) == ["app", "sync", "importer"])
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        let inserts = all[0].changes
        #expect(inserts.count == 3)
        #expect(inserts.map(\.kind) == [.insert, .insert, .insert])
        #expect(Set(inserts.map(\.entityName)) == ["Note", "Folder"])
        #expect(inserts.compactMap { $0.recordID(as: Note.self) } == [first, second])
        #expect(inserts.compactMap { $0.recordID(as: Folder.self) }.count == 1)
        #expect(inserts.compactMap { $0.recordID(as: Folder.self) } == [folderID])

        let changes = all[1].changes
        #expect(changes.count == 2)
        let update = try #require(changes.first { $0.kind == .update })
        #expect(update.recordID(as: Note.self) == first)
        #expect(update.updatedAttributes.map(\.name).sorted() == ["body", "rank"])
        #expect(update.updatedAttributes.first { $0.name == "body" }.map { ($0.oldValue, $0.newValue) } ?? (.null, .null) == (.string("one"), .string("uno")))
        #expect(update.updatedAttributes.first { $0.name == "rank" }.map { ($0.oldValue, $0.newValue) } ?? (.null, .null) == (.int(1), .int(10)))
        let delete = try #require(changes.first { $0.kind == .delete })
        #expect(delete.recordID(as: Note.self) == second)
        #expect(delete.tombstone == ["title": .string("b")])  // only the attribute marked preserveValueOnDeletion

        // After a token, up to a token, by entity, by author, reverse with a limit.
        #expect(try store.fetchHistory(HistoryDescriptor(after: afterInsert)).map(\.token.rawValue) == [2, 3])
        var descriptor = HistoryDescriptor()
        descriptor.through = HistoryToken(rawValue: 2)
        #expect(try store.fetchHistory(descriptor).map(\.token.rawValue) == [1, 2])
        let folders = try store.fetchHistory(HistoryDescriptor(after: nil, entities: [Folder.self]))
        #expect(folders.map(\.token.rawValue) == [1, 3])
        #expect(folders[0].changes.count == 1 && folders[0].changes[0].entityName == "Folder")
        descriptor = HistoryDescriptor()
        descriptor.excludedAuthors = ["app"]
        #expect(try store.fetchHistory(descriptor).map(\.token.rawValue) == [2, 3])
        descriptor = HistoryDescriptor()
        descriptor.authors = ["app", "importer"]
        #expect(try store.fetchHistory(descriptor).map(\.token.rawValue) == [1, 3])
        descriptor = HistoryDescriptor()
        descriptor.order = .reverse
        descriptor.limit = 2
        #expect(try store.fetchHistory(descriptor).map(\.token.rawValue) == [3, 2])
        descriptor = HistoryDescriptor()
        descriptor.until = all[1].timestamp
        #expect(try store.fetchHistory(descriptor).map(\.token.rawValue).allSatisfy { $0 <= 2 })

        // An update that changes nothing and an empty save are not journaled.
        try context.update(first, to: Note(title: "a", body: "uno", rank: 10))
        try context.save()
        #expect(try store.currentHistoryToken() == HistoryToken(rawValue: 3))
    }

    @Test func historySurvivesReopenAndTokensKeepIncreasing() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        do {
            let store = try Self.open(folder)
            try store.write(author: "one") { _ = try $0.insert(Note(title: "x", body: "", rank: 0)) }
            try store.close()
        }
        let store = try Self.open(folder)
        try store.write(author: "two") { _ = try $0.insert(Note(title: "y", body: "", rank: 0)) }
        let history = try store.fetchHistory()
        #expect(history.map(\.token.rawValue) == [1, 2])
        #expect(history.map(\.author) == ["one", "two"])
    }

    @Test func aBulkInsertIsOneRunOfChanges() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        let ids = try store.write { transaction in
            try (0..<10_000).map { try transaction.insert(Note(title: "n\($0)", body: "", rank: $0)) }
        }
        let history = try store.fetchHistory()
        #expect(history.count == 1)
        #expect(history[0].changes.count == 10_000)
        #expect(history[0].changes.compactMap { $0.recordID(as: Note.self) }.elementsEqual(ids))
    }

    @Test func largeTransactionsSpanManyParts() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        let ids = try store.write { transaction in
            try (0..<3_000).map { try transaction.insert(Note(title: "n\($0)", body: "", rank: $0)) }
        }
        try store.write { transaction in
            for (index, id) in ids.enumerated() { try transaction.update(id, to: Note(title: "n\(index)", body: String(repeating: "b", count: 40), rank: -index - 1)) }
        }
        try store.write { transaction in
            for id in ids.reversed() { try transaction.delete(id) }
        }
        for order in [HistoryDescriptor.Order.forward, .reverse] {
            var descriptor = HistoryDescriptor()
            descriptor.order = order
            let history = try store.fetchHistory(descriptor)
            #expect(history.map(\.token.rawValue) == (order == .forward ? [1, 2, 3] : [3, 2, 1]))
            let updates = try #require(history.first { $0.token.rawValue == 2 }).changes
            #expect(updates.count == 3_000)
            #expect(updates.allSatisfy { $0.kind == .update && $0.updatedAttributes.count == 2 })
            #expect(updates[2_999].updatedAttributes.first { $0.name == "rank" }?.newValue == .int(-3_000))
            let deletes = try #require(history.first { $0.token.rawValue == 3 }).changes
            // In the order the transaction made them.
            #expect(deletes.compactMap { $0.recordID(as: Note.self) }.elementsEqual(ids.reversed()))
            #expect(deletes[17].tombstone == ["title": .string("n2982")])
        }
    }

    @Test func deletedHistoryThrowsTruncatedForOlderTokens() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        for index in 0..<10 { try store.write { _ = try $0.insert(Note(title: "\(index)", body: "", rank: index)) } }
        try store.deleteHistory(before: HistoryToken(rawValue: 6))
        #expect(try store.oldestHistoryToken() == HistoryToken(rawValue: 5))
        #expect(try store.fetchHistory().map(\.token.rawValue) == [6, 7, 8, 9, 10])
        #expect(try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: 5))).count == 5)
        #expect(throws: StrataError.historyTruncated(requested: HistoryToken(rawValue: 4), oldestAvailable: HistoryToken(rawValue: 5))) {
            try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: 4)))
        }
    }

    /// `deleteHistory(before:)` does not wait for registered consumers (Docs/History.md,
    /// "Retention"): a consumer it passed keeps its cursor and gets `historyTruncated`.
    @Test func deleteHistoryPassesConsumersCursors() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        for index in 0..<8 { try store.write { _ = try $0.insert(Note(title: "\(index)", body: "", rank: index)) } }
        try store.setHistoryCursor(HistoryToken(rawValue: 2), for: "sync")
        try store.deleteHistory(before: HistoryToken(rawValue: 6))
        #expect(try store.oldestHistoryToken() == HistoryToken(rawValue: 5))
        let cursor = try #require(try store.historyCursor(for: "sync"))
        #expect(cursor == HistoryToken(rawValue: 2))
        #expect(throws: StrataError.historyTruncated(requested: cursor, oldestAvailable: HistoryToken(rawValue: 5))) {
            try store.fetchHistory(HistoryDescriptor(after: cursor))
        }
    }

    @Test func consumersHoldHistoryUntilEveryOneHasPassedIt() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        for index in 0..<6 { try store.write { _ = try $0.insert(Note(title: "\(index)", body: "", rank: index)) } }
        try store.setHistoryCursor(HistoryToken(rawValue: 2), for: "sync")
        #expect(try store.oldestHistoryToken() == HistoryToken(rawValue: 2))  // the only consumer passed 1 and 2
        try store.setHistoryCursor(HistoryToken(rawValue: 4), for: "widget")
        #expect(try store.oldestHistoryToken() == HistoryToken(rawValue: 2))
        #expect(try store.fetchHistory().map(\.token.rawValue) == [3, 4, 5, 6])
        try store.setHistoryCursor(HistoryToken(rawValue: 5), for: "sync")
        #expect(try store.oldestHistoryToken() == HistoryToken(rawValue: 4))
        #expect(try store.historyConsumers() == ["widget": HistoryToken(rawValue: 4), "sync": HistoryToken(rawValue: 5)])
        try store.removeHistoryConsumer("widget")
        try store.write { _ = try $0.insert(Note(title: "7", body: "", rank: 7)) }
        #expect(try store.oldestHistoryToken() == HistoryToken(rawValue: 5))
        #expect(try store.fetchHistory().map(\.token.rawValue) == [6, 7])
        #expect(throws: StrataError.invalidHistoryConsumer(name: "", reason: "a consumer name has 1 to 255 UTF-8 bytes")) {
            try store.setHistoryCursor(.start, for: "")
        }
    }

    @Test func sizeAndAgeLimitsDeleteTheOldestTransactions() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        do {
            let store = try Self.open(folder) { $0.history.maximumBytes = 2_000 }
            for index in 0..<200 {
                try store.write { _ = try $0.insert(Note(title: "\(index)", body: String(repeating: "x", count: 10), rank: index)) }
            }
            let kept = try store.fetchHistory()
            #expect(kept.last?.token.rawValue == 200)
            #expect(kept.count < 200 && kept.count > 20)  // ~30 bytes an entry
            #expect(try store.oldestHistoryToken().rawValue == 200 - UInt64(kept.count))
            try store.close()
        }
        let store = try Self.open(folder) { $0.history.maximumAge = .zero }
        try store.write { _ = try $0.insert(Note(title: "last", body: "", rank: 0)) }
        // Every entry older than now is gone; only entries of this microsecond may stay.
        #expect(try store.fetchHistory().allSatisfy { $0.token.rawValue == 201 })
        #expect(try store.oldestHistoryToken().rawValue >= 200)
    }

    @Test func commitsWithTheJournalOffMarkAGap() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        do {
            let store = try Self.open(folder)
            try store.write { _ = try $0.insert(Note(title: "1", body: "", rank: 1)) }
            try store.close()
        }
        do {
            let store = try Self.open(folder) { $0.history.isEnabled = false }
            try store.write { _ = try $0.insert(Note(title: "2", body: "", rank: 2)) }
            try store.close()
        }
        let store = try Self.open(folder)
        try store.write { _ = try $0.insert(Note(title: "3", body: "", rank: 3)) }
        #expect(try store.oldestHistoryToken() == HistoryToken(rawValue: 2))
        #expect(throws: StrataError.historyTruncated(requested: HistoryToken(rawValue: 1), oldestAvailable: HistoryToken(rawValue: 2))) {
            try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: 1)))
        }
        #expect(try store.fetchHistory().map(\.token.rawValue) == [3])
    }
}
