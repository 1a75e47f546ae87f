/// Chart (a): migration time against the store's size — lightweight, transform split
/// (`migrate-split`) and context split (`migrate-split-context`), Strata beside SQLite's
/// UPDATE — on log–log axes, with the 400 ms launch budget and the 20 s watchdog as lines.
///
/// Each workload's `sizes` array gives its points (100k, 1M, 5M; 10M when measured); a row
/// without one gives one point (its records). Rows at two cores are drawn (one-core rows only
/// when a workload has none at two).
package enum MigrationChart {
    /// A line of the chart.
    package struct Series: Equatable {
        package var label: String
        package var colour: String
        package var dash: String?
        package var points: [(records: Double, seconds: Double)]

        package static func == (a: Series, b: Series) -> Bool {
            a.label == b.label && a.colour == b.colour && a.dash == b.dash
                && a.points.map(\.records) == b.points.map(\.records) && a.points.map(\.seconds) == b.points.map(\.seconds)
        }
    }

    package static let launchBudget = 0.4
    package static let watchdog = 20.0

    static let workloads: [(name: String, label: String, short: String, colour: String)] = [
        ("migrate-lightweight", "lightweight (add isFavorite)", "lightweight change", SVGCanvas.palette[2]),
        ("migrate-split", "transform split (mapConcurrently)", "transform split", SVGCanvas.palette[0]),
        ("migrate-split-context", "context split (didMigrate)", "context split", SVGCanvas.palette[1]),
    ]

    /// The chart's lines, from `results`.
    package static func series(_ results: MergedResults) -> [Series] {
        var series: [Series] = []
        for workload in workloads {
            let rows = results.rows.filter { $0.workload == workload.name }
            guard let row = rows.first(where: { $0.cores == 2 }) ?? rows.first else { continue }
            let sizes = row.fields["sizes"]?.elements ?? []
            var strata: [(Double, Double)] = [], sqlite: [(Double, Double)] = [], total: [(Double, Double)] = []
            if sizes.isEmpty {
                strata = [(Double(row.records), row.strataSeconds)]
                if row.baseline == "sqlite", let seconds = row.baselineSeconds { sqlite = [(Double(row.records), seconds)] }
                if let seconds = row.fields["total_work_seconds"]?.number { total = [(Double(row.records), seconds)] }
            } else {
                for size in sizes {
                    guard let records = size["records"]?.number, let seconds = size["seconds"]?.number else { continue }
                    strata.append((records, seconds))
                    if let seconds = size["sqlite_seconds"]?.number { sqlite.append((records, seconds)) }
                    if let seconds = size["total_work_seconds"]?.number { total.append((records, seconds)) }
                }
            }
            let sort = { (points: [(Double, Double)]) in points.sorted { $0.0 < $1.0 }.map { (records: $0.0, seconds: $0.1) } }
            series.append(Series(label: "Strata, \(workload.label)", colour: workload.colour, dash: nil, points: sort(strata)))
            if !total.isEmpty {
                series.append(Series(label: "Strata, \(workload.short), total work (open + compact())", colour: workload.colour,
                                     dash: "2 3", points: sort(total)))
            }
            if !sqlite.isEmpty {
                series.append(Series(label: "SQLite UPDATE, run beside the \(workload.short)", colour: workload.colour, dash: "7 4",
                                     points: sort(sqlite)))
            }
        }
        return series
    }

    /// The SVG text.
    package static func svg(_ results: MergedResults) -> String {
        let series = series(results)
        let left = 70.0, right = 470.0, top = 56.0, bottom = 380.0
        var canvas = SVGCanvas(width: 880, height: 440)
        canvas.text(left, 22, "Migration time against records (log–log): time until the store opens", size: 15, bold: true)
        let names = Set(workloads.map(\.name))
        canvas.text(left, 40, results.sourceLine { names.contains($0.workload) }, size: 10, fill: "#555")

        let records = series.flatMap { $0.points.map(\.records) }
        let seconds = series.flatMap { $0.points.map(\.seconds) } + [launchBudget, watchdog]
        let x = LogScale(covering: records.isEmpty ? [100_000, 10_000_000] : records, start: left, end: right)
        let y = LogScale(covering: seconds, start: bottom, end: top)

        // Axes and grid.
        canvas.line(left, bottom, right, bottom, stroke: "#444")
        canvas.line(left, top, left, bottom, stroke: "#444")
        for decade in y.decades {
            canvas.line(left, y.position(decade), right, y.position(decade), stroke: "#e4e4e4")
            canvas.text(left - 6, y.position(decade) + 4, ReportFormat.axisSeconds(decade), size: 10, anchor: "end")
        }
        for size in Array(Set(records)).sorted() {
            canvas.line(x.position(size), bottom, x.position(size), bottom + 4, stroke: "#444")
            canvas.text(x.position(size), bottom + 17, recordsLabel(size), size: 10, anchor: "middle")
        }
        canvas.text((left + right) / 2, bottom + 34, "records in the store", size: 11, anchor: "middle")

        // Budgets.
        // Labels where the lines leave room: small stores are fast (the watchdog's label on the
        // left), large ones slow (the launch budget's on the right).
        canvas.line(left, y.position(launchBudget), right, y.position(launchBudget), stroke: "#c00000", width: 1.2, dash: "4 3")
        canvas.text(right - 4, y.position(launchBudget) + 13, "400 ms launch budget (first frame)", size: 10, anchor: "end", fill: "#c00000")
        canvas.line(left, y.position(watchdog), right, y.position(watchdog), stroke: "#c00000", width: 1.2, dash: "4 3")
        canvas.text(left + 4, y.position(watchdog) - 4, "20 s watchdog", size: 10, fill: "#c00000")

        // Lines and legend.
        var legendY = top + 6
        for line in series {
            let points = line.points.map { (x: x.position($0.records), y: y.position($0.seconds)) }
            if points.count > 1 { canvas.polyline(points, stroke: line.colour, dash: line.dash) }
            for point in points { canvas.circle(point.x, point.y, radius: 3, fill: line.colour) }
            canvas.line(right + 20, legendY, right + 44, legendY, stroke: line.colour, width: 2, dash: line.dash)
            canvas.text(right + 50, legendY + 4, line.label, size: 10)
            legendY += 18
        }
        if series.contains(where: { $0.label.contains(workloads[0].label) }) {
            canvas.text(right + 20, legendY + 4, "SQLite's ALTER TABLE … ADD COLUMN (lightweight):", size: 10, fill: "#555")
            canvas.text(right + 20, legendY + 18, "about 1 ms, not measured", size: 10, fill: "#555")
        }
        return canvas.text
    }

    /// "100k", "1M", "5M".
    static func recordsLabel(_ records: Double) -> String {
        records >= 1_000_000 ? "\(ReportFormat.compact(records / 1_000_000))M" : "\(ReportFormat.compact(records / 1_000))k"
    }
}
