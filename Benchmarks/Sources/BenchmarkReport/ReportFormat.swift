import Foundation

/// How the report writes numbers: fixed formats that do not depend on the locale, so the
/// same results file always makes the same bytes (the README check compares them).
package enum ReportFormat {
    /// A time with a unit that keeps 2–4 significant digits: "2.456 s", "0.060 s" (from 0.1 s: "0.100 s"), "43.9 ms", "0.5 µs".
    package static func seconds(_ value: Double) -> String {
        if value >= 0.1 { return String(format: "%.3f s", value) }
        if value >= 0.001 { return String(format: "%.1f ms", value * 1_000) }
        return String(format: "%.1f µs", value * 1_000_000)
    }

    /// A ratio: two decimals, or two significant digits below 0.01.
    package static func ratio(_ value: Double) -> String {
        if value >= 0.01 || value == 0 { return String(format: "%.2f", value) }
        return String(format: "%.2g", value)
    }

    /// Bytes in MB of 2^20 bytes, as the harness prints them: "128 MB".
    package static func megabytes(_ bytes: Double) -> String {
        String(format: "%.0f MB", bytes / 1_048_576)
    }

    /// A whole number with thousands separators: "1,000,000".
    package static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return value < 0 ? "-" + out : out
    }

    /// A coordinate in an SVG file: one decimal.
    package static func coordinate(_ value: Double) -> String {
        String(format: "%.1f", value)
    }

    /// Text made safe for a Markdown table cell (no pipe, no line break).
    package static func cell(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }

    /// Text made safe for SVG/XML.
    package static func xml(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

extension ReportFormat {
    /// A number without a trailing ".0": "5", "2.5".
    package static func compact(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }

    /// A round time for an axis: "1 µs", "10 ms", "1 s", "100 s".
    package static func axisSeconds(_ value: Double) -> String {
        if value >= 1 { return "\(compact(value)) s" }
        if value >= 0.001 { return "\(compact((value * 1_000).rounded())) ms" }
        return "\(compact((value * 1_000_000).rounded())) µs"
    }
}
