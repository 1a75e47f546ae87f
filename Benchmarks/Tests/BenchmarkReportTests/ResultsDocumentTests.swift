import Foundation
import Testing
@testable import BenchmarkReport

@Suite struct ResultsDocumentTests {
    @Test func rowsWithoutCoresRanOnTwoCores() throws {
        let old = try SyntheticResults.document(SyntheticResults.beforeIssue20, path: "old.json")
        #expect(old.rows.map(\.cores) == [2, 2])
        let new = try SyntheticResults.document(SyntheticResults.peers, path: "new.json")
        #expect(new.rows.prefix(4).map(\.cores) == [2, 1, 2, 1])
        #expect(new.rows[0].fields["baseline_settings"]?["mmap_size"]?.number == 268_435_456)
    }

    @Test func aLaterFileReplacesTheSameRowInItsPlace() throws {
        let merged = MergedResults([try SyntheticResults.document(SyntheticResults.beforeIssue20, path: "old.json"),
                                    try SyntheticResults.document(SyntheticResults.peers, path: "new.json")])
        // read-by-id/sqlite/2 cores keeps the first place, with the new file's figures.
        #expect(merged.entries[0].row.workload == "read-by-id")
        #expect(merged.entries[0].row.ratio == 0.8)
        #expect(merged.entries[0].source == 1)
        #expect(merged.entries[1].row.workload == "page-append")
        #expect(merged.entries[1].source == 0)
        // The other peers and core counts are rows of their own.
        #expect(merged.rows.filter { $0.workload == "read-by-id" }.map { "\($0.baseline ?? "-")@\($0.cores)" }
            == ["sqlite@2", "sqlite@1", "lmdb@2", "rocksdb@1"])
        #expect(merged.rows.count == 2 + 6)
    }

    @Test func badFilesAreTypedErrorsNamingTheFile() throws {
        #expect(throws: ReportError.self) { try SyntheticResults.document("{\"results\": 3}", path: "a.json") }
        do {
            _ = try SyntheticResults.document("not json", path: "b.json")
            Issue.record("no error")
        } catch let error as ReportError {
            guard case .malformedResults(let path, _) = error else { Issue.record("\(error)"); return }
            #expect(path == "b.json")
        }
        let noSeconds = """
            {"results": [{"workload": "x", "records": 1, "strata_seconds": 1, "baseline": "sqlite"}]}
            """
        #expect(throws: ReportError.self) { try SyntheticResults.document(noSeconds, path: "c.json") }
        let noWorkload = """
            {"results": [{"records": 1, "strata_seconds": 1}]}
            """
        #expect(throws: ReportError.self) { try SyntheticResults.document(noWorkload, path: "d.json") }
        #expect(throws: ReportError.unreadable(path: "missing.json", reason: "")) {
            do { _ = try ResultsDocument.load(path: "missing.json", base: "/nonexistent") } catch ReportError.unreadable(let path, _) {
                throw ReportError.unreadable(path: path, reason: "")
            }
        }
    }
}
