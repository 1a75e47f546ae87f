import Foundation

/// Byte counts for people: "1.00 GiB", "200.0 MiB".
enum ByteCount {
    static let mebibyte = 1 << 20
    static let gibibyte = 1 << 30

    static func text(_ bytes: some BinaryInteger) -> String {
        let value = Double(bytes)
        if value >= Double(gibibyte) { return String(format: "%.2f GiB", value / Double(gibibyte)) }
        if value >= Double(mebibyte) { return String(format: "%.1f MiB", value / Double(mebibyte)) }
        if value >= 1024 { return String(format: "%.1f KiB", value / 1024) }
        return "\(bytes) B"
    }
}
