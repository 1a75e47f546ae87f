#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The stored form of codable attributes: JSON with sorted keys, so equal values give equal
/// bytes (unique constraints and equality compare bytes). Non-finite doubles inside the value
/// are written as the strings `"NaN"`, `"+Infinity"`, `"-Infinity"`; dates as Foundation's
/// default (seconds since 2001 as a number), data as base64.
///
/// JSON rather than a binary form: the nested type evolves with the app (added optional
/// fields, reordered fields) and JSON's keyed form tolerates that, is readable in a hex dump,
/// and needs no second codec. Encoders are made per call: they are not `Sendable`.
enum CodableAttributeCoding {
    static func encode<T: Encodable>(_ value: T, attribute: String) throws(RecordCodingError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        do {
            return [UInt8](try encoder.encode(value))
        } catch {
            throw .invalidCodableValue(attribute: attribute, type: String(describing: T.self), reason: "\(error)")
        }
    }

    /// The JSON a plain stored value stands for in an attribute that became codable after it
    /// was written (Docs/FileFormat.md, "Record encoding"): exactly what ``encode(_:attribute:)``
    /// writes for the same Swift scalar — `true`/`false`; an integer; a double as a number (or
    /// `"NaN"`, `"+Infinity"`, `"-Infinity"`); a JSON string; data as a base64 string; a date as
    /// seconds since 2001-01-01 (a number); a UUID as its uppercase string. So a codable type
    /// whose value is encoded as one single value reads the old value as the new one, and
    /// writes it back with the same bytes. Nil for `.null`, `.codable` and `.references`.
    static func json(ofPlain value: Value, attribute: String) throws(RecordCodingError) -> [UInt8]? {
        switch value {
        case .bool(let bool): return try encode(bool, attribute: attribute)
        case .int(let int): return try encode(int, attribute: attribute)
        case .double(let double): return try encode(double, attribute: attribute)
        case .string(let string): return try encode(string, attribute: attribute)
        case .data(let bytes): return try encode(Data(bytes), attribute: attribute)
        case .date(let date): return try encode(date, attribute: attribute)
        case .uuid(let uuid): return try encode(uuid, attribute: attribute)
        case .null, .codable, .references: return nil
        }
    }

    /// `T` decoded from `json`, the single-value encoding of the plain stored `value`.
    ///
    /// - Throws: ``RecordCodingError/typeMismatch(attribute:expected:found:)`` when `T` does not
    ///   decode from a single value of that kind at all (a keyed struct from a string, a
    ///   wrapper of an `Int` from a string); ``RecordCodingError/invalidCodableValue(attribute:type:reason:)``
    ///   naming the stored value when the kind fits but the value does not (an enum without
    ///   that raw value, a number out of the wrapped type's range, a failing validation).
    static func decode<T: Decodable>(_ type: T.Type, fromPlain value: Value, json: [UInt8], attribute: String) throws(RecordCodingError) -> T {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        do {
            return try decoder.decode(T.self, from: Data(json))
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            throw .typeMismatch(attribute: attribute, expected: String(describing: T.self), found: value)
        } catch {
            throw .invalidCodableValue(attribute: attribute, type: String(describing: T.self),
                                       reason: "the stored plain value \(value) (written before the attribute became codable) "
                                           + "is not a single-value encoding of it: \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], attribute: String) throws(RecordCodingError) -> T {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        do {
            return try decoder.decode(T.self, from: Data(bytes))
        } catch {
            throw .invalidCodableValue(attribute: attribute, type: String(describing: T.self), reason: "\(error)")
        }
    }
}
