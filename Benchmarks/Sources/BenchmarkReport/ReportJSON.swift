import Foundation

/// A JSON value as the report reads it from a results file. Decoding with `JSONDecoder`
/// keeps booleans, numbers and strings apart on every platform (no `NSNumber` guessing).
package enum ReportJSON: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([ReportJSON])
    case object([String: ReportJSON])

    /// Decodes whichever JSON value is there.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([ReportJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: ReportJSON].self))
        }
    }

    /// The member `key` of an object; nil for other values or a missing key.
    package subscript(key: String) -> ReportJSON? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The value as a number, or nil.
    package var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The value as a string, or nil.
    package var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements of an array; empty for other values.
    package var elements: [ReportJSON] {
        if case .array(let values) = self { return values }
        return []
    }
}
