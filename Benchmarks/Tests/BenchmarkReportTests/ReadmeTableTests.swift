import Foundation
import Testing
@testable import BenchmarkReport

@Suite struct ReadmeTableTests {
    static let readme = """
        # Title

        Intro.

        <!-- benchmark-table:begin -->
        | old | table |
        <!-- benchmark-table:end -->

        ## After
        """

    func report() throws -> BenchmarkReport {
        BenchmarkReport([try SyntheticResults.document(SyntheticResults.beforeIssue20, path: "Benchmarks/results/old.json"),
                         try SyntheticResults.document(SyntheticResults.peers, path: "Benchmarks/results/new.json")])
    }

    @Test func onlyTheTextBetweenTheMarkersIsReplaced() throws {
        let block = try report().tableBlock
        let updated = try ReadmeTable.replacing(in: Self.readme, with: block, path: "README.md")
        #expect(updated.hasPrefix("# Title\n\nIntro.\n\n<!-- benchmark-table:begin -->\n"))
        #expect(updated.hasSuffix("<!-- benchmark-table:end -->\n\n## After"))
        #expect(!updated.contains("| old | table |"))
        #expect(try ReadmeTable.currentBlock(in: updated, path: "README.md") == block)
        // Replacing again changes nothing.
        #expect(try ReadmeTable.replacing(in: updated, with: block, path: "README.md") == updated)
    }

    @Test func oneRowPerWorkloadAndCoreCountWithAColumnPerPeer() throws {
        let lines = try report().tableBlock.split(separator: "\n").map(String.init)
        let rows = lines.filter { $0.hasPrefix("| ") && !$0.hasPrefix("| workload") && !$0.hasPrefix("| ---") }
        // read-by-id at 2 cores (sqlite, lmdb) and at 1 (sqlite, rocksdb), page-append,
        // migrate-split, migrate-lightweight, count.
        #expect(rows.count == 6)
        #expect(rows[0] == "| read-by-id | 1,000,000 | 2 | 0.200 s | **0.80** (0.250 s) | **2.00** (0.100 s) | — | — | 100 MB | 40 MB | [2] | fair \\| sqlite |")
        #expect(rows[1] == "| page-append | 65,536 | 2 | 2.400 s | — | — | — | copy **1.20** (2.000 s) | 124 MB | — | [1] | old |")
        #expect(rows[2] == "| read-by-id | 1,000,000 | 1 | 0.300 s | **1.20** (0.250 s) | — | **0.50** (0.400 s) | — | 100 MB | — | [2] |  |")
        #expect(rows.contains("| migrate-lightweight | 1,000,000 | 2 | **3.0 ms** | — | — | — | — | 24 MB | — | [2] |  |"))
        #expect(rows.contains { $0.hasPrefix("| count | 1,000,000 | 2 | 0.5 µs | **2.5e-05** (20.0 ms) |") })
        #expect(lines.contains { $0.hasPrefix("Results files: [1] `Benchmarks/results/old.json` (2026-11-30T00:00:00Z, Old CPU, 2 cores); [2]") })
        #expect(try ReadmeTable.sources(in: lines.joined(separator: "\n"), path: "README.md")
            == ["Benchmarks/results/old.json", "Benchmarks/results/new.json"])
    }

    @Test func missingDoubledOrReversedMarkersAreErrors() throws {
        let block = try report().tableBlock
        for readme in ["no markers", "<!-- benchmark-table:end --> x <!-- benchmark-table:begin -->",
                       Self.readme + "\n<!-- benchmark-table:begin -->"] {
            #expect(throws: ReportError.self) { try ReadmeTable.replacing(in: readme, with: block, path: "README.md") }
        }
        #expect(throws: ReportError.self) { try ReadmeTable.sources(in: Self.readme, path: "README.md") }
    }

    @Test func theCheckFindsAStaleTableOrChartAndNothingAfterWriting() throws {
        let folder = try SyntheticResults.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let readme = folder + "/README.md", charts = folder + "/charts"
        try Data(Self.readme.utf8).write(to: URL(fileURLWithPath: readme))
        let report = try report()
        #expect(try report.differences(readmePath: readme, chartsFolder: charts, prefix: "").count == 3)
        try report.write(readmePath: readme, chartsFolder: charts, prefix: "")
        #expect(try report.differences(readmePath: readme, chartsFolder: charts, prefix: "").isEmpty)
        // A ratio changed in a results file makes the table and the ratio chart stale, a
        // migration's time at 10M the migration chart.
        let edited = SyntheticResults.peers.replacingOccurrences(of: "\"ratio\": 0.8,", with: "\"ratio\": 0.9,")
            .replacingOccurrences(of: "\"sqlite_seconds\": 11.0", with: "\"sqlite_seconds\": 12.0")
        let changed = BenchmarkReport([try SyntheticResults.document(SyntheticResults.beforeIssue20, path: "Benchmarks/results/old.json"),
                                       try SyntheticResults.document(edited, path: "Benchmarks/results/new.json")])
        #expect(try changed.differences(readmePath: readme, chartsFolder: charts, prefix: "").count == 3)
        #expect(try changed.differences(readmePath: readme, chartsFolder: nil, prefix: "")
            == ["\(readme): the benchmark table is not what the results files make"])
    }
}
