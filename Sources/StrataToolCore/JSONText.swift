/// A JSON value the tool writes, kept in the order it was built (object keys are not sorted),
/// rendered by hand so the output is the same byte for byte on every platform.
enum JSONText {
    case null
    case bool(Bool)
    /// A number as its exact decimal text (integers, and doubles as Swift prints them).
    case number(String)
    case string(String)
    /// Text already in JSON form (a codable attribute's stored JSON), written as it is.
    case raw(String)
    case array([JSONText])
    case object([(String, JSONText)])

    static func int<T: BinaryInteger>(_ value: T) -> JSONText { .number(String(value)) }

    /// A double as a number; NaN and the infinities, which JSON lacks, as the strings `"NaN"`,
    /// `"Infinity"` and `"-Infinity"`.
    static func double(_ value: Double) -> JSONText {
        if value.isNaN { return .string("NaN") }
        if value.isInfinite { return .string(value < 0 ? "-Infinity" : "Infinity") }
        return .number("\(value)")
    }

    /// On one line, no spaces.
    var compact: String {
        var text = ""
        write(into: &text, indent: nil)
        return text
    }

    /// Indented by two spaces per level, one member or element per line.
    var pretty: String {
        var text = ""
        write(into: &text, indent: 0)
        return text
    }

    private func write(into text: inout String, indent: Int?) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .number(let digits): text += digits
        case .string(let value): Self.quote(value, into: &text)
        case .raw(let json): text += json
        case .array(let elements):
            guard !elements.isEmpty else { text += "[]"; return }
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                Self.newline(&text, indent.map { $0 + 1 })
                element.write(into: &text, indent: indent.map { $0 + 1 })
            }
            Self.newline(&text, indent)
            text += "]"
        case .object(let members):
            guard !members.isEmpty else { text += "{}"; return }
            text += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { text += "," }
                Self.newline(&text, indent.map { $0 + 1 })
                Self.quote(key, into: &text)
                text += indent == nil ? ":" : ": "
                value.write(into: &text, indent: indent.map { $0 + 1 })
            }
            Self.newline(&text, indent)
            text += "}"
        }
    }

    private static func newline(_ text: inout String, _ indent: Int?) {
        guard let indent else { return }
        text += "\n" + String(repeating: "  ", count: indent)
    }

    /// `value` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\t`, … or
    /// `\u00XX`; everything else (all of Unicode) as it is, in UTF-8.
    static func quote(_ value: String, into text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
