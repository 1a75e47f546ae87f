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
        // Named in a layout made for these values: one container for both decoding paths.
        let layout = RecordLayout(attributes: merged.keys.enumerated().map { ($1, UInt32($0), .null) })
        return try run(Record.self, RecordDecoding(layout: layout, slots: layout.names.map { merged[$0] ?? .null }, type: Record.self))
    }

    /// Runs the record's `init(from:)` on `decoder`.
    func run<Record: Decodable>(_: Record.Type, _ decoder: RecordDecoding) throws(RecordCodingError) -> Record {
        do {
            return try Record(from: decoder)
        } catch let error as RecordCodingError {
            throw error
        } catch {
            throw .recordCodingFailed(type: String(describing: Record.self), reason: "\(error)")
        }
    }
}

/// The `Decoder` a record decodes itself from: a key's value is found through the layout
/// (name → position in `slots`). Three words, so it fits an existential without a box.
struct RecordDecoding: Decoder {
    let layout: RecordLayout
    /// The value of each attribute of `layout`, `.null` when absent.
    let slots: [Value]
    /// The record type; its name is only formatted for an error (formatting it for every
    /// record was a measurable share of decoding).
    let type: Any.Type
    var typeName: String { String(describing: type) }
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The value of the attribute `name`, `.null` when absent.
    @inline(__always)
    func value(forKey name: String) -> Value {
        guard let position = layout.position(of: name) else { return .null }
        return slots[position]
    }

    /// The names with a non-null value.
    var presentNames: [String] { layout.names.indices.filter { !slots[$0].isNull }.map { layout.names[$0] } }

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
    var allKeys: [Key] { decoder.presentNames.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { !decoder.value(forKey: key.stringValue).isNull }

    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }

    func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T {
        try ValueConversion.decode(T.self, from: decoder.value(forKey: key.stringValue), attribute: key.stringValue)
    }

    /// An optional attribute: nil when absent or null, else its value, with one lookup.
    func decodeIfPresent<T: Decodable>(_: T.Type, forKey key: Key) throws -> T? {
        let value = decoder.value(forKey: key.stringValue)
        if value.isNull { return nil }
        return try ValueConversion.decode(T.self, from: value, attribute: key.stringValue)
    }

    // The concrete overloads synthesized conformances call: no generic conversion.
    func decode(_: String.Type, forKey key: Key) throws -> String { try ValueConversion.string(from: value(key), attribute: key.stringValue) }
    func decode(_: Bool.Type, forKey key: Key) throws -> Bool { try ValueConversion.bool(from: value(key), attribute: key.stringValue) }
    func decode(_: Double.Type, forKey key: Key) throws -> Double { try ValueConversion.double(from: value(key), attribute: key.stringValue) }
    func decode(_: Float.Type, forKey key: Key) throws -> Float { try ValueConversion.float(from: value(key), attribute: key.stringValue) }
    func decode(_: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }

    func decodeIfPresent(_: String.Type, forKey key: Key) throws -> String? {
        let value = value(key)
        return value.isNull ? nil : try ValueConversion.string(from: value, attribute: key.stringValue)
    }

    func decodeIfPresent(_: Bool.Type, forKey key: Key) throws -> Bool? {
        let value = value(key)
        return value.isNull ? nil : try ValueConversion.bool(from: value, attribute: key.stringValue)
    }

    func decodeIfPresent(_: Double.Type, forKey key: Key) throws -> Double? {
        let value = value(key)
        return value.isNull ? nil : try ValueConversion.double(from: value, attribute: key.stringValue)
    }

    func decodeIfPresent(_: Int.Type, forKey key: Key) throws -> Int? {
        value(key).isNull ? nil : try integer(key)
    }

    func decodeIfPresent(_: Int64.Type, forKey key: Key) throws -> Int64? {
        value(key).isNull ? nil : try integer(key)
    }

    @inline(__always)
    private func value(_ key: Key) -> Value { decoder.value(forKey: key.stringValue) }

    @inline(__always)
    private func integer<I: FixedWidthInteger>(_ key: Key) throws(RecordCodingError) -> I {
        try ValueConversion.integer(I.self, from: value(key), attribute: key.stringValue)
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
