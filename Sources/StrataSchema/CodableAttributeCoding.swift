import FoundationEssentials

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
