#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Testing
import Strata
import StrataTestSupport
@testable import StrataToolCore
#if canImport(Glibc)
import Glibc
#endif

/// `strata history`: the journal's transactions, filtered, as text and JSON, and `--follow`
/// delivering another process's commits.
@Suite(.serialized) struct HistoryCommandTests {
    typealias Writer = ToolTests.Writer
    typealias Volume = ToolTests.Volume

    /// `ToolTests.fill`, then an update of Ada by "editor" and a delete of volume 3 by "cleaner".
    static func fill(_ folder: String) throws {
        try ToolTests.fill(folder)
        let store = try Store(at: folder, for: [Writer.self, Volume.self])
        let editor = Context(store, author: "editor")
        var ada = try #require(try editor.record(for: RecordID<Writer>(rawValue: 1)))
        ada.rating = 5
        ada.tags = ["math"]
        try editor.update(RecordID(rawValue: 1), to: ada)
        try editor.save()
        let cleaner = Context(store, author: "cleaner")
        try cleaner.delete(RecordID<Volume>(rawValue: 3))
        try cleaner.save()
        try store.close()
    }

    /// The output with every timestamp replaced by `T`.
    static func masked(_ text: String) -> String {
        text.replacing(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z/, with: "T")
    }

    @Test func historyListsEachTransactionWithItsChangesAndValues() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let run = ToolTests.strata("history", folder)
        #expect(run.status == .success, "\(run.errors)")
        #expect(Self.masked(run.output) == """
            #1 T by fill: 4 changes
              insert Writer 1
              insert Writer 2
              insert Volume 1
              insert Volume 2
            #2 T by fill: 1 change
              insert Volume 3
            #3 T by editor: 1 change
              update Writer 1: rating 4.5 -> 5.0, tags ["math","poetry"] -> ["math"]
            #4 T by cleaner: 1 change
              delete Volume 3

            """)
        let json = ToolTests.strata("history", "--json", "--after", "2", folder)
        #expect(json.status == .success)
        #expect(Self.masked(json.output) == """
            {"token":3,"timestamp":"T","author":"editor","schemaVersion":null,"changes":[{"kind":"update","entity":"Writer","id":1,\
            "attributes":[{"name":"rating","old":4.5,"new":5.0},{"name":"tags","old":["math","poetry"],"new":["math"]}]}]}
            {"token":4,"timestamp":"T","author":"cleaner","schemaVersion":null,"changes":[{"kind":"delete","entity":"Volume","id":3,"kept":{}}]}

            """)
    }

    @Test func historyFiltersByAuthorEntityTokenAndCount() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        func tokens(_ arguments: String...) -> [String] {
            let run = ToolTests.strata(["history"] + arguments + [folder])
            #expect(run.status == .success, "\(arguments): \(run.errors)")
            return run.lines.filter { $0.hasPrefix("#") }.map { String($0.prefix { $0 != " " }) }
        }
        #expect(tokens("--author", "editor") == ["#3"])
        #expect(tokens("--entity", "Volume") == ["#1", "#2", "#4"])
        #expect(tokens("--after", "1", "--limit", "2") == ["#2", "#3"])
        #expect(tokens("--limit", "0").isEmpty)
        let volumeOnly = ToolTests.strata("history", "--entity", "Volume", "--after", "0", "--limit", "1", folder)
        #expect(volumeOnly.lines.dropFirst() == ["  insert Volume 1", "  insert Volume 2"])  // only the entity's changes
        let unknown = ToolTests.strata("history", "--entity", "Nobody", folder)
        #expect(unknown.status == .usage)
        #expect(unknown.errors.contains("the store has no entity Nobody; its entities: Volume, Writer"))
        #expect(ToolTests.strata("history", "--after", "soon", folder).status == .usage)
    }

    @Test func historyAfterATokenRetentionDeletedFailsWithStatusThree() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let store = try Store(at: folder, for: [Writer.self, Volume.self])
        try store.deleteHistory(before: HistoryToken(rawValue: 3))
        try store.close()
        let run = ToolTests.strata("history", "--after", "1", folder)
        #expect(run.status == .storeError)
        #expect(run.output.isEmpty)
        #expect(ToolTests.strata("history", folder).lines.first?.hasPrefix("#3 ") == true)  // from the oldest kept
    }

    /// Runs `work` on a thread outside Swift's cooperative pool (it may block that thread).
    static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) -> Task<T, any Error> {
        Task {
            try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
            }
        }
    }

    /// Run by `followDeliversAnotherProcesssCommits` as a child process: commits three
    /// transactions as "child" to the store named by STRATA_TOOL_HISTORY_STORE.
    @Test func childCommitsThreeTransactions() throws {
        guard let folder = getenv("STRATA_TOOL_HISTORY_STORE").map({ String(cString: $0) }) else { return }
        let store = try Store(at: folder, for: [Writer.self, Volume.self])
        let context = Context(store, author: "child")
        let id = try context.insert(Volume(title: "From the child", writer: RecordID(rawValue: 2)))
        try context.save()
        try context.update(id, to: Volume(title: "Renamed by the child", writer: RecordID(rawValue: 2)))
        try context.save()
        try context.delete(id)
        try context.save()
        try store.close()
    }

    @Test func followDeliversAnotherProcesssCommits() async throws {
        guard getenv("STRATA_TOOL_HISTORY_STORE") == nil else { return }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try ToolTests.fill(folder)  // tokens 1 and 2
        // The tool follows from token 2 and stops after three transactions. It and the child
        // run on threads of their own: both block theirs while they wait.
        let following = Self.offThePool { ToolTests.strata("history", "--follow", "--author", "child", "--limit", "3", "--after", "2", folder) }
        let child = try await Self.offThePool {
            try runChildTest("HistoryCommandTests/childCommitsThreeTransactions", environment: ["STRATA_TOOL_HISTORY_STORE": folder])
        }.value
        #expect(child == 0)
        if child != 0 {
            // Three commits of this process instead, so a failed child fails the test, not hangs it.
            let store = try Store(at: folder, for: [Writer.self, Volume.self])
            for _ in 0..<3 {
                let context = Context(store, author: "child")
                try context.insert(Volume(title: "instead of the child", writer: nil))
                try await context.save()
            }
            try store.close()
        }
        let run = try await following.value
        #expect(run.status == .success, "\(run.errors)")
        #expect(Self.masked(run.output) == """
            #3 T by child: 2 changes
              update Writer 2: books null -> [4]
              insert Volume 4
            #4 T by child: 1 change
              update Volume 4: title "From the child" -> "Renamed by the child"
            #5 T by child: 2 changes
              update Writer 2: books [4] -> null
              delete Volume 4

            """)
    }
}
