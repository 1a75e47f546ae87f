#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport
@testable import StrataToolCore

#if canImport(Glibc)
import Glibc
#endif

/// `Scripts/strata_reader.py`, a reader written in Python from Docs/FileFormat.md alone (no
/// look at the sources), reads what this library writes exactly as `strata export` does: the
/// specification is complete enough to read a store without Strata. Each store here is read
/// by both, and the two exports must be the same bytes; the golden page logs' pages must be
/// their `expected.txt`. Needs `python3` (`make test` installs it when missing).
@Suite struct IndependentReaderTests {
    static let repository = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
    static let script = repository + "/Scripts/strata_reader.py"

    /// The reader's output for `command` on `store`; its exit status must be `status`.
    static func reader(_ command: String, _ store: String, status: Int32 = 0, scratch: String) throws -> String {
        let run = try #require(runCommandCapturing(["python3", script, command, store], scratch: scratch), "python3 could not be started")
        #expect(run.status == status, "strata_reader.py \(command) \(store): status \(run.status): \(run.errors)")
        return run.output
    }

    /// Both exports of `store`, which must be equal and complete.
    static func compareExports(_ store: String, scratch: String) throws {
        let expected = ToolTests.strata("export", store)
        try #require(expected.status == .success, "\(expected.errors)")
        let independent = try reader("export", store, scratch: scratch)
        let same = independent == expected.output
        #expect(same, "the exports of \(store) differ: \(firstDifference(independent, expected.output))")
        #expect(expected.output.hasSuffix("}}\n") && expected.output.contains("{\"end\":"))
    }

    static func firstDifference(_ a: String, _ b: String) -> String {
        let linesA = a.split(separator: "\n", omittingEmptySubsequences: false), linesB = b.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, (lineA, lineB)) in zip(linesA, linesB).enumerated() where lineA != lineB {
            return "line \(index + 1): reader \(lineA.prefix(300)) / tool \(lineB.prefix(300))"
        }
        return "\(linesA.count) lines against \(linesB.count)"
    }

    @Test func aStoreOfEveryValueKindReadsAsTheToolExportsIt() throws {
        let seed = SeededRandom.seed(default: 0x1D_E9E7)
        print("IndependentReaderTests seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        // Every attribute type, nulls, -0.0 and the infinities, text in many scripts, a 70 KB
        // value in overflow chunks, relationships both ways, a sub-entity, indexes, a journal.
        try ExportImportTests.fill(folder + "/store", seed: seed)
        try Self.compareExports(folder + "/store", scratch: folder)
    }

    /// A store copied while its app holds it open after commits since the last checkpoint:
    /// the reader replays the log's tail, over several segments and trees of three levels.
    @Test func aStoreWithALogTailReadsAsTheToolExportsIt() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.storage.segmentSize = 256 << 10
        let store = try Store(at: folder + "/store", for: [ExportImportTests.Note.self], configuration: configuration)
        for batch in 0..<6 {
            try store.write { transaction in
                for index in 0..<2_000 { _ = try transaction.insert(ExportImportTests.Note(text: "batch \(batch) note \(index) " + String(repeating: "x", count: index % 90))) }
            }
        }
        try store.write { transaction in
            for id in stride(from: 1, to: 12_000, by: 7) { _ = try transaction.delete(RecordID<ExportImportTests.Note>(rawValue: UInt64(id))) }
        }
        mkdir(folder + "/copy", 0o755)
        copyFiles(from: folder + "/store", to: folder + "/copy")
        try store.close()
        try Self.compareExports(folder + "/copy", scratch: folder)
    }

    /// Every golden record store (a copy) reads as the tool exports it; the one with a
    /// migration in progress both refuse with status 3.
    @Test func everyGoldenRecordStoreReadsAsTheToolExportsIt() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let fixtures = Self.repository + "/Tests/StrataTests/Fixtures"
        let names = directoryEntries(fixtures).sorted()
        #expect(names.count >= 7)
        for name in names {
            let copy = folder + "/" + name
            mkdir(copy, 0o755)
            copyFiles(from: fixtures + "/" + name, to: copy)
            if name == "flushed-v6" {
                #expect(ToolTests.strata("export", copy).status == .storeError)
                _ = try Self.reader("export", copy, status: 3, scratch: folder)
            } else {
                try Self.compareExports(copy, scratch: folder)
            }
        }
    }

    /// Every golden page log's pages, as the reader reads them, are its `expected.txt`.
    @Test func everyGoldenPageLogReadsAsItsExpectedPages() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let fixtures = Self.repository + "/Tests/StrataPageLogTests/Fixtures"
        for name in ["v1-basic", "v2-basic", "v3-basic"] {
            let copy = folder + "/" + name
            mkdir(copy, 0o755)
            copyFiles(from: fixtures + "/" + name, to: copy)
            let expected = (readTextFile(copy + "/expected.txt") ?? "").split(separator: "\n").filter { !$0.hasPrefix("#") }
            #expect(expected.count > 50)
            let pages = try Self.reader("pages", copy, scratch: folder).split(separator: "\n")
            #expect(pages == expected, "\(name): \(pages.count) pages read, \(expected.count) expected")
        }
    }
}
