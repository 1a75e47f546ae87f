import Foundation

/// What the report generator makes from results files — the README's table block and the
/// two charts — and how it writes or checks them.
package struct BenchmarkReport {
    /// The chart files' names (in the charts folder, after the prefix).
    package static let migrationChartName = "migration-time.svg"
    package static let ratioChartName = "ratios.svg"

    package let results: MergedResults

    /// The report of `documents`, merged (later files win).
    package init(_ documents: [ResultsDocument]) {
        results = MergedResults(documents)
    }

    /// The README block, markers included.
    package var tableBlock: String { ReadmeTable.block(results) }
    /// Chart (a), migration time against records.
    package var migrationChart: String { MigrationChart.svg(results) }
    /// Chart (b), every ratio.
    package var ratioChart: String { RatioChart.svg(results) }

    /// The chart files to write: name (prefixed) and text.
    package func charts(prefix: String) -> [(name: String, text: String)] {
        [(prefix + Self.migrationChartName, migrationChart), (prefix + Self.ratioChartName, ratioChart)]
    }

    /// Each output that differs from what is on disk: the README's block (when `readmePath`
    /// is given) and the chart files in `chartsFolder` (when given). Empty: all up to date.
    package func differences(readmePath: String?, chartsFolder: String?, prefix: String) throws -> [String] {
        var differences: [String] = []
        if let readmePath {
            let readme = try Self.read(readmePath)
            if try ReadmeTable.currentBlock(in: readme, path: readmePath) != tableBlock {
                differences.append("\(readmePath): the benchmark table is not what the results files make")
            }
        }
        if let chartsFolder {
            for chart in charts(prefix: prefix) {
                let path = (chartsFolder as NSString).appendingPathComponent(chart.name)
                let current = try? String(contentsOfFile: path, encoding: .utf8)
                if current != chart.text { differences.append("\(path): \(current == nil ? "missing" : "not what the results files make")") }
            }
        }
        return differences
    }

    /// Replaces the README's block and writes the charts.
    package func write(readmePath: String?, chartsFolder: String?, prefix: String) throws {
        if let readmePath {
            let readme = try Self.read(readmePath)
            let updated = try ReadmeTable.replacing(in: readme, with: tableBlock, path: readmePath)
            try Data(updated.utf8).write(to: URL(fileURLWithPath: readmePath), options: .atomic)
        }
        if let chartsFolder {
            try FileManager.default.createDirectory(atPath: chartsFolder, withIntermediateDirectories: true)
            for chart in charts(prefix: prefix) {
                try Data(chart.text.utf8).write(to: URL(fileURLWithPath: (chartsFolder as NSString).appendingPathComponent(chart.name)),
                                                options: .atomic)
            }
        }
    }

    /// The text of the file at `path`.
    package static func read(_ path: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ReportError.unreadable(path: path, reason: "\(error.localizedDescription)")
        }
    }
}
