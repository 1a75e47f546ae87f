#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes a record's attributes straight into its stored form: what a record type's
/// ``PersistentRecord/encode(to:)-(RecordWriter)`` uses when it codes itself by hand — the
/// fast path, with no `Encoder` and no container boxes (about twice as fast as `Codable` on
/// a record of a few fields). Keys are the attribute names (the properties' names, as the
/// type's `Codable` conformance spells them). The keyed container of `Codable` coding writes
/// through the same code, so both give the same bytes and errors.
public struct RecordWriter {
    let state: RecordEncodingState

    init(state: RecordEncodingState) { self.state = state }

    /// Stores a text attribute.
    public mutating func encode(_ value: String, forKey name: String) { state.store(string: value, forKey: name) }
    /// Stores a Boolean attribute.
    public mutating func encode(_ value: Bool, forKey name: String) { state.store(bool: value, forKey: name) }
    /// Stores an integer attribute.
    public mutating func encode(_ value: Int, forKey name: String) { state.store(int: Int64(value), forKey: name) }
    /// Stores a 64-bit integer attribute.
    public mutating func encode(_ value: Int64, forKey name: String) { state.store(int: value, forKey: name) }
    /// Stores a floating-point attribute.
    public mutating func encode(_ value: Double, forKey name: String) { state.store(double: value, forKey: name) }
    /// Stores a date attribute.
    public mutating func encode(_ value: Date, forKey name: String) { state.store(date: value, forKey: name) }
    /// Stores a UUID attribute.
    public mutating func encode(_ value: UUID, forKey name: String) { state.store(.uuid(value), forKey: name) }
    /// Stores a data attribute.
    public mutating func encode(_ value: Data, forKey name: String) { state.store(data: .data(value), forKey: name) }

    /// Stores an optional text attribute (nil: no value).
    public mutating func encode(_ value: String?, forKey name: String) { state.store(value.map(Value.string) ?? .null, forKey: name) }
    /// Stores an optional integer attribute (nil: no value).
    public mutating func encode(_ value: Int?, forKey name: String) { state.store(value.map { .int(Int64($0)) } ?? .null, forKey: name) }
    /// Stores an optional floating-point attribute (nil: no value).
    public mutating func encode(_ value: Double?, forKey name: String) { state.store(value.map(Value.double) ?? .null, forKey: name) }
    /// Stores an optional date attribute (nil: no value).
    public mutating func encode(_ value: Date?, forKey name: String) { state.store(value.map(Value.date) ?? .null, forKey: name) }

    /// Stores any other attribute as `Codable` coding would: other integer widths
    /// (range-checked), `Float`, `[UInt8]`, optionals, relationships (`RecordID`,
    /// `[RecordID]`), and `.codable` values (JSON).
    /// - Throws: ``RecordCodingError/integerOutOfRange(attribute:value:type:)``,
    ///   ``RecordCodingError/invalidCodableValue(attribute:type:reason:)``.
    public mutating func encode<T: Encodable>(_ value: T, forKey name: String) throws {
        try state.store(encodable: value, forKey: name)
    }
}

/// Reads a record's attributes straight from its stored bytes: what a record type's
/// ``PersistentRecord/init(from:)-(RecordReader)`` uses when it codes itself by hand — the fast
/// path, with no `Decoder` and no container boxes. Keys are the attribute names. An absent
/// attribute takes its default (the catalog's, then the type's `attributeDefaults`); the rules
/// and errors are those of `Codable` decoding, which reads through the same code.
///
/// Valid only during the `init(from:)` call it is handed to.
public struct RecordReader {
    let state: RecordDecodingState

    init(state: RecordDecodingState) { self.state = state }

    /// Whether the attribute has a value (its default included; an optional attribute set to
    /// nil has none, whatever its default).
    public func contains(_ name: String) -> Bool {
        state.field(named: name).tag != 0 || state.contains(name)
    }

    /// The attribute's value, else its default (`.null` for none).
    @inline(__always)
    private func value(_ field: FieldSpan, name: String) -> Value {
        field.tag != 0 ? field.value(in: state.bytes) : state.value(forKey: name)
    }

    /// The attribute's value as an optional property reads it: as `value(_:name:)`, but
    /// `.null` for a null field (nil was saved, whatever the default).
    @inline(__always)
    private func optionalValue(_ field: FieldSpan, name: String) -> Value {
        field.tag != 0 ? field.value(in: state.bytes) : field.isNull ? .null : state.valueIfPresent(forKey: name)
    }

    /// A text attribute.
    /// - Throws: ``RecordCodingError/missingValue(attribute:type:)`` when it has no value;
    ///   ``RecordCodingError/typeMismatch(attribute:expected:found:)``.
    public func decode(_: String.Type, forKey name: String) throws -> String {
        let field = state.field(named: name)
        if field.tag == ValueTag.string.rawValue { return field.string(in: state.bytes) }
        return try ValueConversion.string(from: value(field, name: name), attribute: name)
    }

    /// A Boolean attribute.
    /// - Throws: as ``decode(_:forKey:)-(String.Type,_)``.
    public func decode(_: Bool.Type, forKey name: String) throws -> Bool {
        let field = state.field(named: name)
        if field.tag == ValueTag.true.rawValue { return true }
        if field.tag == ValueTag.false.rawValue { return false }
        return try ValueConversion.bool(from: value(field, name: name), attribute: name)
    }

    /// A floating-point attribute.
    /// - Throws: as ``decode(_:forKey:)-(String.Type,_)``.
    public func decode(_: Double.Type, forKey name: String) throws -> Double {
        let field = state.field(named: name)
        if field.tag == ValueTag.double.rawValue { return Double(bitPattern: field.bits) }
        return try ValueConversion.double(from: value(field, name: name), attribute: name)
    }

    /// A `Float` attribute (stored as a double).
    /// - Throws: as ``decode(_:forKey:)-(String.Type,_)``.
    public func decode(_: Float.Type, forKey name: String) throws -> Float {
        let field = state.field(named: name)
        if field.tag == ValueTag.double.rawValue { return try ValueConversion.float(narrowing: Double(bitPattern: field.bits), attribute: name) }
        return try ValueConversion.float(from: value(field, name: name), attribute: name)
    }

    /// A date attribute.
    /// - Throws: as ``decode(_:forKey:)-(String.Type,_)``.
    public func decode(_: Date.Type, forKey name: String) throws -> Date {
        let field = state.field(named: name)
        if field.tag == ValueTag.date.rawValue { return field.date }
        return try ValueConversion.date(from: value(field, name: name), attribute: name)
    }

    /// An integer attribute of any width, range-checked.
    /// - Throws: as ``decode(_:forKey:)-(String.Type,_)``, and
    ///   ``RecordCodingError/integerOutOfRange(attribute:value:type:)``.
    public func decode<I: FixedWidthInteger & Decodable>(_: I.Type, forKey name: String) throws -> I {
        let field = state.field(named: name)
        if field.tag == ValueTag.int.rawValue, let converted = I(exactly: Int64(bitPattern: field.bits)) { return converted }
        return try ValueConversion.integer(I.self, from: value(field, name: name), attribute: name)
    }

    /// An optional text attribute: nil when it has no value.
    /// - Throws: ``RecordCodingError/typeMismatch(attribute:expected:found:)``.
    public func decodeIfPresent(_: String.Type, forKey name: String) throws -> String? {
        let field = state.field(named: name)
        if field.tag == ValueTag.string.rawValue { return field.string(in: state.bytes) }
        let value = optionalValue(field, name: name)
        return value.isNull ? nil : try ValueConversion.string(from: value, attribute: name)
    }

    /// An optional Boolean attribute: nil when it has no value.
    /// - Throws: as ``decodeIfPresent(_:forKey:)-(String.Type,_)``.
    public func decodeIfPresent(_: Bool.Type, forKey name: String) throws -> Bool? {
        let field = state.field(named: name)
        if field.tag == ValueTag.true.rawValue { return true }
        if field.tag == ValueTag.false.rawValue { return false }
        let value = optionalValue(field, name: name)
        return value.isNull ? nil : try ValueConversion.bool(from: value, attribute: name)
    }

    /// An optional floating-point attribute: nil when it has no value.
    /// - Throws: as ``decodeIfPresent(_:forKey:)-(String.Type,_)``.
    public func decodeIfPresent(_: Double.Type, forKey name: String) throws -> Double? {
        let field = state.field(named: name)
        if field.tag == ValueTag.double.rawValue { return Double(bitPattern: field.bits) }
        let value = optionalValue(field, name: name)
        return value.isNull ? nil : try ValueConversion.double(from: value, attribute: name)
    }

    /// An optional integer attribute of any width: nil when it has no value.
    /// - Throws: as ``decodeIfPresent(_:forKey:)-(String.Type,_)``, and
    ///   ``RecordCodingError/integerOutOfRange(attribute:value:type:)``.
    public func decodeIfPresent<I: FixedWidthInteger & Decodable>(_: I.Type, forKey name: String) throws -> I? {
        let field = state.field(named: name)
        if field.tag == ValueTag.int.rawValue, let converted = I(exactly: Int64(bitPattern: field.bits)) { return converted }
        let value = optionalValue(field, name: name)
        return value.isNull ? nil : try ValueConversion.integer(I.self, from: value, attribute: name)
    }

    /// Any attribute, as `Codable` decoding reads it: UUID, Data, `[UInt8]`, optionals,
    /// relationships (`RecordID`, `[RecordID]`), `.codable` values.
    /// - Throws: as ``decode(_:forKey:)-(String.Type,_)``, and
    ///   ``RecordCodingError/invalidCodableValue(attribute:type:reason:)``.
    public func decode<T: Decodable>(_: T.Type, forKey name: String) throws -> T {
        try decode(T.self, state.field(named: name), name: name)
    }

    /// Any optional attribute: nil when it has no value.
    /// - Throws: as ``decode(_:forKey:)-(T.Type,_)``.
    public func decodeIfPresent<T: Decodable>(_: T.Type, forKey name: String) throws -> T? {
        let field = state.field(named: name)
        if field.tag != 0 { return try decode(T.self, field, name: name) }
        let value = field.isNull ? .null : state.valueIfPresent(forKey: name)
        if value.isNull { return nil }
        return try ValueConversion.decode(T.self, from: value, attribute: name)
    }

    /// The value of type `T` of the attribute `name`, whose field is `field`: the common
    /// scalars by metatype identity straight from the bytes (as `ValueConversion.decode`
    /// tells them), the rest through the attribute's value.
    @inline(__always)
    func decode<T: Decodable>(_: T.Type, _ field: FieldSpan, name: String) throws(RecordCodingError) -> T {
        if T.self == String.self, field.tag == ValueTag.string.rawValue { return unsafeBitCast(field.string(in: state.bytes), to: T.self) }
        if T.self == Date.self, field.tag == ValueTag.date.rawValue { return unsafeBitCast(field.date, to: T.self) }
        if T.self == Int.self, field.tag == ValueTag.int.rawValue, let int = Int(exactly: Int64(bitPattern: field.bits)) {
            return unsafeBitCast(int, to: T.self)
        }
        if T.self == Double.self, field.tag == ValueTag.double.rawValue { return unsafeBitCast(Double(bitPattern: field.bits), to: T.self) }
        if T.self == Bool.self, field.tag == ValueTag.true.rawValue || field.tag == ValueTag.false.rawValue {
            return unsafeBitCast(field.tag == ValueTag.true.rawValue, to: T.self)
        }
        if T.self == UUID.self, field.tag == ValueTag.uuid.rawValue { return unsafeBitCast(field.uuid(in: state.bytes), to: T.self) }
        if T.self == Data.self, field.tag == ValueTag.data.rawValue {
            return unsafeBitCast(SharedRecordBytes.data(field.bytes(in: state.bytes)), to: T.self)
        }
        if T.self == Int64.self, field.tag == ValueTag.int.rawValue { return unsafeBitCast(Int64(bitPattern: field.bits), to: T.self) }
        return try ValueConversion.decode(T.self, from: value(field, name: name), attribute: name)
    }
}
