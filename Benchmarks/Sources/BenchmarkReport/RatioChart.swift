import Foundation

/// Chart (b): every row's ratio (Strata's time over the peer's) as a horizontal bar, grouped
/// by workload, one bar per peer and core count, on a logarithmic axis with ratio 1 drawn as a
/// line: a bar ending left of it is a row where Strata is faster. Ratios below 0.01 are drawn
/// to the axis's start and labelled with their value.
package enum RatioChart {
    /// One bar.
    package struct Bar: Equatable {
        package var workload: String
        package var peer: String
        package var cores: Int
        package var ratio: Double
    }

    static let lowest = 0.01
    static let peerOrder = ["sqlite", "lmdb", "rocksdb", "copy"]

    /// The bars, grouped by workload in the rows' order; within one, peers in a fixed order
    /// (sqlite, lmdb, rocksdb, copy, then Strata variants), two cores before one.
    package static func bars(_ results: MergedResults) -> [Bar] {
        var workloads: [String] = []
        var bars: [String: [Bar]] = [:]
        for row in results.rows {
            guard let ratio = row.ratio, let peer = row.baseline else { continue }
            if bars[row.workload] == nil { workloads.append(row.workload) }
            bars[row.workload, default: []].append(Bar(workload: row.workload, peer: peer, cores: row.cores, ratio: ratio))
        }
        func rank(_ bar: Bar) -> (Int, String, Int) {
            (peerOrder.firstIndex(of: bar.peer) ?? peerOrder.count, bar.peer, -bar.cores)
        }
        return workloads.flatMap { workload in bars[workload, default: []].sorted { rank($0) < rank($1) } }
    }

    /// The colour of a peer's bars.
    static func colour(_ peer: String) -> String {
        switch peer {
        case "sqlite": SVGCanvas.palette[0]
        case "lmdb": SVGCanvas.palette[1]
        case "rocksdb": SVGCanvas.palette[2]
        case "copy": SVGCanvas.palette[4]
        default: SVGCanvas.palette[3]
        }
    }

    /// The SVG text.
    package static func svg(_ results: MergedResults) -> String {
        let bars = bars(results)
        let labelRight = 230.0, plotLeft = 240.0, plotRight = 640.0, top = 74.0
        let barHeight = 13.0, barGap = 3.0, groupGap = 10.0
        let groups = Set(bars.map(\.workload)).count
        let height = top + Double(bars.count) * (barHeight + barGap) + Double(groups) * groupGap + 50
        var canvas = SVGCanvas(width: 860, height: height)
        canvas.text(10, 22, "Strata's time over each peer's, per workload (log scale; below 1, Strata is faster)", size: 15, bold: true)
        canvas.text(10, 40, results.sourceLine { $0.ratio != nil && $0.baseline != nil }, size: 10, fill: "#555")
        canvas.text(10, 56, "solid bars: two cores; light bars: one core", size: 10, fill: "#555")

        let x = LogScale(covering: bars.map(\.ratio) + [1], start: plotLeft, end: plotRight, floor: lowest)
        let plotBottom = height - 40
        for decade in x.decades {
            canvas.line(x.position(decade), top - 6, x.position(decade), plotBottom, stroke: "#e4e4e4")
            canvas.text(x.position(decade), plotBottom + 14, String(format: "%g", decade), size: 10, anchor: "middle")
        }
        canvas.text((plotLeft + plotRight) / 2, plotBottom + 30, "ratio (Strata ÷ peer)", size: 11, anchor: "middle")

        // Ratio 1 under the bars and their labels.
        canvas.line(x.position(1), top - 10, x.position(1), plotBottom, stroke: "#c00000", width: 1.5)
        canvas.text(x.position(1) + 3, top - 12, "1: as fast as the peer", size: 10, fill: "#c00000")

        var y = top
        var previous: String?
        for bar in bars {
            if bar.workload != previous {
                if previous != nil { y += groupGap }
                canvas.text(labelRight, y + barHeight - 3, bar.workload, size: 11, anchor: "end", bold: true)
                previous = bar.workload
            }
            let end = x.position(bar.ratio)
            canvas.rect(plotLeft, y, end - plotLeft, barHeight, fill: colour(bar.peer), opacity: bar.cores == 1 ? 0.5 : 1)
            let value = bar.ratio < lowest ? "< \(ReportFormat.ratio(lowest)) (\(ReportFormat.ratio(bar.ratio)))" : ReportFormat.ratio(bar.ratio)
            canvas.text(max(end, plotLeft) + 4, y + barHeight - 3, "\(value)  \(bar.peer), \(bar.cores) core\(bar.cores == 1 ? "" : "s")",
                        size: 10)
            y += barHeight + barGap
        }
        return canvas.text
    }
}
