import Foundation
import Testing
@testable import BenchmarkReport

/// The README's committed table and the committed charts are what the generator makes from
/// the committed results files the table names (also checked by `make bench-check` in CI).
@Suite struct CommittedReportTests {
    @Test func theReadmeTableAndTheChartsMatchTheirResultsFiles() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let readme = root.appendingPathComponent("README.md").path
        let sources = try ReadmeTable.sources(in: try BenchmarkReport.read(readme), path: readme)
        #expect(!sources.isEmpty)
        let report = BenchmarkReport(try sources.map { try ResultsDocument.load(path: $0, base: root.path) })
        let differences = try report.differences(readmePath: readme, chartsFolder: root.appendingPathComponent("Benchmarks/results").path,
                                                 prefix: "")
        #expect(differences == [])
    }
}
