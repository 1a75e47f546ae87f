import Foundation

/// The results as a table for people: one row per workload, text columns left-aligned,
/// numbers right-aligned. "—" marks a value that does not apply (no baseline). "peak MB" is
/// the process's peak resident memory (VmHWM, mapped store pages included), "anon MB" its peak
/// anonymous memory (`PeakMemory`).
struct ResultTable {
    let results: [WorkloadResult]

    private static let headers = ["workload", "cores", "records", "strata s", "baseline", "baseline s", "ratio", "peak MB", "anon MB", "notes"]
    private static let numericColumns: Set<Int> = [1, 2, 3, 5, 6, 7, 8]

    var text: String {
        guard !results.isEmpty else { return "No results." }
        let rows = [Self.headers] + results.map(Self.cells)
        let widths = Self.headers.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                if column == cells.count - 1 { return cell }  // notes: no trailing spaces
                return Self.numericColumns.contains(column) ? padding + cell : cell + padding
            }.joined(separator: "  ")
        }
        let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
        return ([line(Self.headers), rule] + rows.dropFirst().map(line)).joined(separator: "\n")
    }

    private static func cells(_ result: WorkloadResult) -> [String] {
        [
            result.workload,
            result.cores.map(String.init) ?? "—",
            String(result.records),
            String(format: "%.3f", result.strataSeconds),
            result.baseline?.name ?? "—",
            result.baseline.map { String(format: "%.3f", $0.seconds) } ?? "—",
            result.ratio.map { String(format: "%.2f", $0) } ?? "—",
            String(format: "%.1f", Double(result.peakMemoryBytes) / 1_048_576),
            String(format: "%.1f", Double(result.peakAnonymousMemoryBytes) / 1_048_576),
            result.notes,
        ]
    }
}
