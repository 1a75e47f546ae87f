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

/// The golden store `Fixtures/history-v4` (store root version 4, history journal format 1),
/// written once by `writeFixtureWhenAsked` and never regenerated. A test opens a copy and
/// checks every journaled transaction, then that the journal goes on from where it was.
@Suite struct HistoryFixtureTests {
    static let fixture = String(#filePath.prefix(upTo: #filePath.lastIndex(of: "/")!)) + "/Fixtures/history-v4"

    /// Writes the fixture when STRATA_WRITE_HISTORY_FIXTURE names an empty folder.
    @Test func writeFixtureWhenAsked() throws {
        guard let target = getenv("STRATA_WRITE_HISTORY_FIXTURE").map({ String(cString: $0) }) else { return }
        let store = try HistoryTests.open(target)
        let context = Context(store, author: "app")
        let ids = try (1...3).map { try context.insert(Note(title: "t\($0)", body: "b\($0)", rank: $0)) }
        try context.save()
        try context.update(ids[0], to: Note(title: "t1", body: "changed", rank: 100))
        try context.delete(ids[1])
        context.author = "sync"
        try context.save()
        try store.write { _ = try $0.insert(Folder(name: "inbox")) }
        try store.setHistoryCursor(HistoryToken(rawValue: 1), for: "widget")
        try store.close()
    }

    @Test func theGoldenHistoryStoreReadsBackEveryTransaction() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try copyFolder(Self.fixture, to: folder)
        let store = try HistoryTests.open(folder)
        // The widget consumer passed token 1, and it is the only consumer: history is complete after 1.
        #expect(try store.historyConsumers() == ["widget": HistoryToken(rawValue: 1)])
        #expect(try store.oldestHistoryToken() == HistoryToken(rawValue: 1))
        #expect(try store.currentHistoryToken() == HistoryToken(rawValue: 3))
        let history = try store.fetchHistory()
        #expect(history.map(\.token.rawValue) == [2, 3])
        #expect(history.map(\.author) == ["sync", nil])
        #expect(history[0].timestamp <= history[1].timestamp && history[0].timestamp > Date(timeIntervalSince1970: 1.7e9))
        let changes = history[0].changes
        #expect(changes.map(\.kind) == [.delete, .update])  // a save deletes before it updates
        #expect(changes[1].recordID(as: Note.self) == RecordID(rawValue: 1))
        #expect(changes[1].updatedAttributes == [AttributeChange(name: "body", oldValue: "b1", newValue: "changed"),
                                                 AttributeChange(name: "rank", oldValue: 1, newValue: 100)])
        #expect(changes[0].recordID(as: Note.self) == RecordID(rawValue: 2))
        #expect(changes[0].tombstone == ["title": "t2"])
        #expect(history[1].changes.map(\.kind) == [.insert])
        #expect(history[1].changes.first?.entityName == "Folder")
        // New transactions continue the token sequence.
        try store.write(author: "later") { _ = try $0.insert(Note(title: "t4", body: "", rank: 4)) }
        #expect(try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: 3))).map(\.author) == ["later"])
        try store.close()
    }
}
