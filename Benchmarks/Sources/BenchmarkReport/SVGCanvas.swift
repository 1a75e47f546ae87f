import Foundation

/// Hand-written SVG text: a fixed size, elements appended in order, coordinates with one
/// decimal (so the same input always gives the same bytes).
package struct SVGCanvas {
    package let width: Double
    package let height: Double
    private var elements: [String] = []

    /// The palette the charts share (colour-blind safe: Okabe–Ito).
    package static let palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]

    package init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    private func c(_ value: Double) -> String { ReportFormat.coordinate(value) }

    /// A straight line; `dash` e.g. "6 4".
    package mutating func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double = 1,
                               dash: String? = nil) {
        elements.append("<line x1=\"\(c(x1))\" y1=\"\(c(y1))\" x2=\"\(c(x2))\" y2=\"\(c(y2))\" stroke=\"\(stroke)\" "
            + "stroke-width=\"\(c(width))\"\(dash.map { " stroke-dasharray=\"\($0)\"" } ?? "")/>")
    }

    /// A line through `points`.
    package mutating func polyline(_ points: [(x: Double, y: Double)], stroke: String, width: Double = 2, dash: String? = nil) {
        let list = points.map { "\(c($0.x)),\(c($0.y))" }.joined(separator: " ")
        elements.append("<polyline points=\"\(list)\" fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"\(c(width))\""
            + "\(dash.map { " stroke-dasharray=\"\($0)\"" } ?? "")/>")
    }

    /// A dot.
    package mutating func circle(_ x: Double, _ y: Double, radius: Double, fill: String) {
        elements.append("<circle cx=\"\(c(x))\" cy=\"\(c(y))\" r=\"\(c(radius))\" fill=\"\(fill)\"/>")
    }

    /// A filled rectangle; `opacity` below 1 for lighter bars.
    package mutating func rect(_ x: Double, _ y: Double, _ width: Double, _ height: Double, fill: String, opacity: Double = 1,
                               stroke: String? = nil) {
        elements.append("<rect x=\"\(c(x))\" y=\"\(c(y))\" width=\"\(c(max(width, 0)))\" height=\"\(c(max(height, 0)))\" "
            + "fill=\"\(fill)\"\(opacity < 1 ? " fill-opacity=\"\(c(opacity))\"" : "")"
            + "\(stroke.map { " stroke=\"\($0)\"" } ?? "")/>")
    }

    /// Text; `anchor` "start", "middle" or "end".
    package mutating func text(_ x: Double, _ y: Double, _ content: String, size: Double = 12, anchor: String = "start",
                               fill: String = "#222", bold: Bool = false) {
        elements.append("<text x=\"\(c(x))\" y=\"\(c(y))\" font-size=\"\(c(size))\" text-anchor=\"\(anchor)\" fill=\"\(fill)\""
            + "\(bold ? " font-weight=\"bold\"" : "")>\(ReportFormat.xml(content))</text>")
    }

    /// The document.
    package var text: String {
        (["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(c(width))\" height=\"\(c(height))\" "
            + "viewBox=\"0 0 \(c(width)) \(c(height))\" font-family=\"Helvetica, Arial, sans-serif\">",
          "<rect x=\"0\" y=\"0\" width=\"\(c(width))\" height=\"\(c(height))\" fill=\"#ffffff\"/>"]
            + elements + ["</svg>"]).joined(separator: "\n") + "\n"
    }
}

/// A logarithmic axis: values from `low` to `high` (both > 0) onto `start`…`end` pixels
/// (`end` may be below `start`, as on a y axis).
package struct LogScale: Sendable {
    package let low: Double
    package let high: Double
    package let start: Double
    package let end: Double

    /// The axis covering `values` (and `including`), widened to whole powers of ten.
    package init(covering values: [Double], start: Double, end: Double, floor lowest: Double = 0) {
        let positive = values.filter { $0 > 0 }
        let minimum = max(positive.min() ?? 0.1, lowest > 0 ? lowest : 0)
        let maximum = max(positive.max() ?? 10, minimum * 10)
        low = pow10(Foundation.floor(log10(minimum)))
        high = pow10(Foundation.ceil(log10(maximum)))
        self.start = start
        self.end = end
    }

    /// The pixel of `value`; values outside the axis are clamped to its ends.
    package func position(_ value: Double) -> Double {
        let clamped = min(max(value, low), high)
        let fraction = (log10(clamped) - log10(low)) / (log10(high) - log10(low))
        return start + fraction * (end - start)
    }

    /// The powers of ten on the axis, lowest first.
    package var decades: [Double] {
        var values: [Double] = []
        var exponent = log10(low).rounded()
        while exponent <= log10(high).rounded() {
            values.append(pow10(exponent))
            exponent += 1
        }
        return values
    }
}

private func pow10(_ exponent: Double) -> Double { pow(10, exponent) }
