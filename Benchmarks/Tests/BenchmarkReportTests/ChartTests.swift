import Foundation
import Testing
@testable import BenchmarkReport

@Suite struct ChartTests {
    func merged() throws -> MergedResults {
        MergedResults([try SyntheticResults.document(SyntheticResults.beforeIssue20, path: "old.json"),
                       try SyntheticResults.document(SyntheticResults.peers, path: "new.json")])
    }

    @Test func logScaleCoversWholeDecadesAndClamps() {
        let scale = LogScale(covering: [0.002, 20], start: 100, end: 0)
        #expect(scale.low == 0.001 && scale.high == 100)
        #expect(scale.decades == [0.001, 0.01, 0.1, 1, 10, 100])
        #expect(scale.position(0.001) == 100 && scale.position(100) == 0)
        #expect(abs(scale.position(1) - 40) < 1e-9)
        #expect(scale.position(1e-9) == 100 && scale.position(1e9) == 0)
        #expect(LogScale(covering: [2e-5, 3], start: 0, end: 1, floor: 0.01).low == 0.01)
    }

    @Test func migrationChartHasStrataAndSQLiteLinesPerSizeAndTheBudgets() throws {
        let series = MigrationChart.series(try merged())
        #expect(series.map(\.label) == [
            "Strata, lightweight (add isFavorite)",
            "Strata, transform split (mapConcurrently)",
            "Strata, transform split, total work (open + compact())",
            "SQLite UPDATE, run beside the transform split",
        ])
        // Points sorted by size, 10M included.
        #expect(series[0].points.map(\.records) == [100_000, 1_000_000])
        #expect(series[1].points.map(\.records) == [100_000, 1_000_000, 10_000_000])
        #expect(series[3].points.map(\.seconds) == [0.1, 1.0, 11.0])
        let svg = MigrationChart.svg(try merged())
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(svg.hasSuffix("</svg>\n"))
        #expect(svg.contains(">400 ms launch budget (first frame)</text>"))
        #expect(svg.contains(">20 s watchdog</text>"))
        #expect(svg.contains(">10M</text>"))
        #expect(svg.components(separatedBy: "<polyline ").count - 1 == 4)
        // The budget lines sit where the axis puts 0.4 s and 20 s.
        let y = LogScale(covering: series.flatMap { $0.points.map(\.seconds) } + [0.4, 20], start: 380, end: 56)
        #expect(svg.contains("y1=\"\(ReportFormat.coordinate(y.position(0.4)))\" x2=\"470.0\" y2=\"\(ReportFormat.coordinate(y.position(0.4)))\""))
        #expect(svg.contains("y1=\"\(ReportFormat.coordinate(y.position(20)))\" x2=\"470.0\" y2=\"\(ReportFormat.coordinate(y.position(20)))\""))
    }

    @Test func ratioChartHasABarPerPeerAndCoreCountAndTheLineAtOne() throws {
        let bars = RatioChart.bars(try merged())
        #expect(bars.map { "\($0.workload)/\($0.peer)@\($0.cores)" } == [
            "read-by-id/sqlite@2", "read-by-id/sqlite@1", "read-by-id/lmdb@2", "read-by-id/rocksdb@1",
            "page-append/copy@2", "migrate-split/sqlite@2", "count/sqlite@2",
        ])
        let svg = RatioChart.svg(try merged())
        // One rect per bar, plus the background.
        #expect(svg.components(separatedBy: "<rect ").count - 1 == bars.count + 1)
        #expect(svg.components(separatedBy: "fill-opacity=\"0.5\"").count - 1 == 2)  // the one-core bars
        #expect(svg.contains(">1: as fast as the peer</text>"))
        #expect(svg.contains(">&lt; 0.01 (2.5e-05)  sqlite, 2 cores</text>"))
        let x = LogScale(covering: bars.map(\.ratio) + [1], start: 240, end: 640, floor: 0.01)
        #expect(svg.contains("<line x1=\"\(ReportFormat.coordinate(x.position(1)))\""))
    }

    @Test func theCommittedResultsFilesMakeBothCharts() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("results").path
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") && !$0.hasPrefix("latest") }.sorted()
        #expect(!files.isEmpty)
        let documents = try files.map { try ResultsDocument.load(path: $0, base: folder) }
            + [try SyntheticResults.document(SyntheticResults.peers, path: "synthetic.json")]
        let merged = MergedResults(documents)
        #expect(!RatioChart.bars(merged).isEmpty)
        #expect(MigrationChart.series(merged).contains { $0.label.hasPrefix("Strata, context split") })
        #expect(RatioChart.svg(merged).contains("lmdb, 2 cores"))
    }
}
