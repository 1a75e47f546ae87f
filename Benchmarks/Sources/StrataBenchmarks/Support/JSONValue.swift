import Foundation

/// A JSON document as the harness writes and reads it: results files and the one-line
/// results that workload processes print.
///
/// Objects keep their keys in the order they were built, so files read well (Foundation's
/// encoders do not keep that order). Non-finite numbers are written as `null`.
enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    /// The value of `key` when this is an object that has it.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value as a number, whether it was written with or without a fraction.
    var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    var int64Value: Int64? {
        switch self {
        case .int(let value): value
        case .double(let value): Int64(exactly: value)
        default: nil
        }
    }
}

// MARK: - Writing

extension JSONValue {
    /// The JSON text on one line (for a workload process's result line).
    var compactText: String {
        var out = ""
        write(to: &out, indent: nil, depth: 0)
        return out
    }

    /// The JSON text, indented by two spaces per level (for results files).
    var prettyText: String {
        var out = ""
        write(to: &out, indent: "  ", depth: 0)
        return out
    }

    private func write(to out: inout String, indent: String?, depth: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value): out += value.isFinite ? "\(value)" : "null"
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let elements):
            writeContainer(elements.map { (nil, $0) }, open: "[", close: "]", to: &out, indent: indent, depth: depth)
        case .object(let members):
            writeContainer(members.map { ($0.key, $0.value) }, open: "{", close: "}", to: &out, indent: indent, depth: depth)
        }
    }

    private func writeContainer(
        _ items: [(String?, JSONValue)], open: String, close: String,
        to out: inout String, indent: String?, depth: Int
    ) {
        out += open
        guard !items.isEmpty else { return out += close }
        let scalarsOnly = items.allSatisfy { !$0.1.isContainer }
        // Arrays of numbers stay on one line even in pretty output.
        let breakLines = indent != nil && !(open == "[" && scalarsOnly)
        for (index, (key, value)) in items.enumerated() {
            if index > 0 { out += breakLines || indent == nil ? "," : ", " }
            if breakLines, let indent { out += "\n" + String(repeating: indent, count: depth + 1) }
            if let key {
                Self.writeString(key, to: &out)
                out += indent == nil ? ":" : ": "
            }
            value.write(to: &out, indent: indent, depth: depth + 1)
        }
        if breakLines, let indent { out += "\n" + String(repeating: indent, count: depth) }
        out += close
    }

    private var isContainer: Bool {
        switch self {
        case .array, .object: true
        default: false
        }
    }

    private static func writeString(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

// MARK: - Reading

extension JSONValue: Decodable {
    /// Parses JSON text. Object keys come back sorted, since the decoder does not keep their order.
    init(parsing text: String) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [(key: String, value: JSONValue)] = []
            for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                members.append((key.stringValue, try container.decode(JSONValue.self, forKey: key)))
            }
            self = .object(members)
        } else if var container = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !container.isAtEnd { elements.append(try container.decode(JSONValue.self)) }
            self = .array(elements)
        } else {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int64.self) {
                self = .int(value)
            } else if let value = try? container.decode(Double.self) {
                self = .double(value)
            } else {
                self = .string(try container.decode(String.self))
            }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
