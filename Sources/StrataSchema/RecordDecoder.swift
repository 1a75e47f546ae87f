/// Builds a typed record from its attribute values: `[attribute name: Value]`.
///
/// The inverse of ``RecordEncoder``. An attribute that is absent or `.null` decodes as `nil`
/// for an optional property; for a non-optional one, a ``PersistentRecord`` type's
/// ``PersistentRecord/attributeDefaults`` supply the value (records written before the
/// attribute existed), else decoding fails. Values of attributes the type does not have are
/// ignored. Integers are range-checked into the property's integer type; no other conversion
/// happens (an `.int` never decodes into a `Double` property).
///
/// A value type with no state: safe to share and use from any thread.
public struct RecordDecoder: Sendable {
    /// Creates a decoder.
    public init() {}

    /// A record of type `Record` from `values`.
    ///
    /// - Throws: ``RecordCodingError/missingValue(attribute:type:)``,
    ///   ``RecordCodingError/typeMismatch(attribute:expected:found:)``,
    ///   ``RecordCodingError/integerOutOfRange(attribute:value:type:)``,
    ///   ``RecordCodingError/invalidCodableValue(attribute:type:reason:)``,
    ///   ``RecordCodingError/unsupportedStructure(type:reason:)`` when the type does not decode
    ///   from one keyed container, and ``RecordCodingError/recordCodingFailed(type:reason:)``
    ///   when its `init(from:)` throws an error of its own.
    public func decode<Record: Decodable>(_ type: Record.Type, from values: [String: Value]) throws(RecordCodingError) -> Record {
        var merged = values
        if let recordType = Record.self as? any PersistentRecord.Type {
            let defaults = recordType.attributeDefaults
            if !defaults.isEmpty {
                for (name, value) in defaults where merged[name]?.isNull ?? true { merged[name] = value }
            }
        }
        do {
            return try Record(from: RecordDecoding(values: merged, type: Record.self))
        } catch let error as RecordCodingError {
            throw error
        } catch {
            throw .recordCodingFailed(type: String(describing: Record.self), reason: "\(error)")
        }
    }
}

/// The `Decoder` a record decodes itself from.
struct RecordDecoding: Decoder {
    let values: [String: Value]
    /// The record type; its name is only formatted for an error (formatting it for every
    /// record was a measurable share of decoding).
    let type: Any.Type
    var typeName: String { String(describing: type) }
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RecordKeyedDecodingContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw RecordCodingError.unsupportedStructure(type: typeName, reason: "it decodes from an unkeyed container; a record needs a keyed container")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw RecordCodingError.unsupportedStructure(type: typeName, reason: "it decodes from a single value; a record needs a keyed container")
    }
}

/// Reads each key's value from the record's attributes.
struct RecordKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: RecordDecoding
    var codingPath: [any CodingKey] { [] }

    /// The keys with a non-null value.
    var allKeys: [Key] {
        decoder.values.filter { !$0.value.isNull }.keys.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool { !(decoder.values[key.stringValue]?.isNull ?? true) }

    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }

    func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T {
        try ValueConversion.decode(T.self, from: decoder.values[key.stringValue] ?? .null, attribute: key.stringValue)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw unsupported("attribute \(key.stringValue) asks for a nested keyed container; decode a Codable value instead")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw unsupported("attribute \(key.stringValue) asks for a nested unkeyed container; decode an array value instead")
    }

    /// The superclass decodes from the same record (its attributes are inherited ones).
    func superDecoder() throws -> any Decoder { decoder }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        throw unsupported("attribute \(key.stringValue) asks for a keyed super-decoder; use superDecoder() without a key")
    }

    private func unsupported(_ reason: String) -> RecordCodingError {
        .unsupportedStructure(type: decoder.typeName, reason: reason)
    }
}
