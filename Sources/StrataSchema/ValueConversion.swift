#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Converts between Swift property values and ``Value``s: the one place that decides which
/// Swift types are scalars (stored natively) and which are codable (stored as JSON). Used by
/// the record encoder and decoder and by entity discovery, so all three always agree.
enum ValueConversion {
    /// The attribute type a Swift type is stored as natively, or nil for a codable type.
    /// `Optional` is not unwrapped here (see `OptionalDecodable`).
    static func scalarType(of type: Any.Type) -> AttributeType? {
        switch type {
        case is Bool.Type: .bool
        case is String.Type: .string
        case is Double.Type, is Float.Type: .double
        case is Date.Type: .date
        case is UUID.Type: .uuid
        case is Data.Type, is [UInt8].Type: .data
        case is any FixedWidthInteger.Type: .int
        default: nil
        }
    }

    /// The value stored for `value`, a property of attribute `attribute`.
    ///
    /// - Throws: ``RecordCodingError/integerOutOfRange(attribute:value:type:)`` for an unsigned
    ///   integer above `Int64.max`; ``RecordCodingError/invalidCodableValue(attribute:type:reason:)``
    ///   when JSON encoding fails.
    static func value<T: Encodable>(of value: T, attribute: String) throws(RecordCodingError) -> Value {
        // The common scalars by metatype identity first: a pointer comparison, where the
        // casts below look up conformances and generic metadata.
        if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if T.self == Date.self { return .date(unsafeBitCast(value, to: Date.self)) }
        if T.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
        if T.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
        if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if T.self == UUID.self { return .uuid(unsafeBitCast(value, to: UUID.self)) }
        if T.self == Data.self { return .data([UInt8](unsafeBitCast(value, to: Data.self))) }
        if T.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
        if let optional = value as? any OptionalEncodable {
            guard let wrapped = optional.wrappedEncodable else { return .null }
            return try Self.value(of: wrapped, attribute: attribute)
        }
        if let reference = value as? any RecordReference { return try references([reference.rawValue], attribute: attribute) }
        if let list = value as? any RecordReferenceList { return try references(list.rawValues, attribute: attribute) }
        let dynamicType = type(of: value as Any)
        switch value {
        case let value as Bool: return .bool(value)
        case let value as String: return .string(value)
        case let value as Double: return .double(value)
        case let value as Float: return .double(Double(value))
        case let value as Date: return .date(value)
        case let value as UUID: return .uuid(value)
        case let value as Data: return .data([UInt8](value))
        // `as [UInt8]` alone would also match an empty array of any element type.
        case let bytes as [UInt8] where dynamicType == [UInt8].self: return .data(bytes)
        case let value as any FixedWidthInteger:
            guard let int = Int64(exactly: value) else {
                throw .integerOutOfRange(attribute: attribute, value: "\(value)", type: "Int64")
            }
            return .int(int)
        default:
            return .codable(try CodableAttributeCoding.encode(value, attribute: attribute))
        }
    }

    /// The property value of type `T` for a stored `value`.
    ///
    /// - Throws: ``RecordCodingError/missingValue(attribute:type:)`` for `.null` and a
    ///   non-optional `T`; ``RecordCodingError/typeMismatch(attribute:expected:found:)`` when
    ///   the stored kind is not `T`'s; ``RecordCodingError/integerOutOfRange(attribute:value:type:)``;
    ///   ``RecordCodingError/invalidCodableValue(attribute:type:reason:)`` when JSON decoding fails,
    ///   also when a plain stored value (an attribute made codable; see
    ///   ``CodableAttributeCoding/json(ofPlain:attribute:)``) is not a single-value encoding of `T`.
    static func decode<T: Decodable>(_ type: T.Type, from value: Value, attribute: String) throws(RecordCodingError) -> T {
        // The common scalars by metatype identity first (see `value(of:attribute:)`).
        if T.self == String.self { return unsafeBitCast(try string(from: value, attribute: attribute), to: T.self) }
        if T.self == Date.self { return unsafeBitCast(try date(from: value, attribute: attribute), to: T.self) }
        if T.self == Int.self { return unsafeBitCast(try integer(Int.self, from: value, attribute: attribute), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try double(from: value, attribute: attribute), to: T.self) }
        if T.self == Bool.self { return unsafeBitCast(try bool(from: value, attribute: attribute), to: T.self) }
        if T.self == UUID.self { return unsafeBitCast(try uuid(from: value, attribute: attribute), to: T.self) }
        if T.self == Data.self { return unsafeBitCast(try data(from: value, attribute: attribute), to: T.self) }
        if T.self == Int64.self { return unsafeBitCast(try integer(Int64.self, from: value, attribute: attribute), to: T.self) }
        return try decodeOther(T.self, from: value, attribute: attribute)
    }

    /// `decode` of the types other than the common scalars. Kept out of `decode`, whose
    /// unspecialized callers would otherwise look up `Optional<T>`'s metadata on every call
    /// (the casts below need it) even for a `String` or a `Date`.
    @inline(never)
    private static func decodeOther<T: Decodable>(_ type: T.Type, from value: Value, attribute: String) throws(RecordCodingError) -> T {
        if let optionalType = T.self as? any OptionalDecodable.Type {
            if value.isNull, let absent = optionalType.absent as? T { return absent }
            return try decodeWrapped(optionalType, from: value, attribute: attribute)
        }
        if let listType = T.self as? any RecordReferenceList.Type {
            return try decodeReferences(listType, from: value, attribute: attribute)
        }
        if value.isNull { throw .missingValue(attribute: attribute, type: String(describing: T.self)) }
        if let referenceType = T.self as? any RecordReference.Type {
            return try decodeReference(referenceType, from: value, attribute: attribute)
        }
        if let scalar = try scalar(T.self, from: value, attribute: attribute) { return scalar }
        guard case .codable(let bytes) = value else {
            // A plain value stored before the attribute became codable: its single-value encoding.
            if let json = try CodableAttributeCoding.json(ofPlain: value, attribute: attribute) {
                return try CodableAttributeCoding.decode(T.self, fromPlain: value, json: json, attribute: attribute)
            }
            throw .typeMismatch(attribute: attribute, expected: String(describing: T.self), found: value)
        }
        return try CodableAttributeCoding.decode(T.self, from: bytes, attribute: attribute)
    }

    /// The value of a relationship property: `.references` of the ids in their order, each
    /// kept once; `.null` for none.
    ///
    /// - Throws: ``RecordCodingError/invalidCodableValue(attribute:type:reason:)`` for the id 0,
    ///   which no record has.
    static func references(_ ids: [UInt64], attribute: String) throws(RecordCodingError) -> Value {
        if ids.isEmpty { return .null }
        if ids.contains(0) {
            throw .invalidCodableValue(attribute: attribute, type: "RecordID", reason: "record id 0 is invalid (ids start at 1)")
        }
        if ids.count == 1 { return .references(ids) }
        var seen = Set<UInt64>(minimumCapacity: ids.count)
        return .references(ids.filter { seen.insert($0).inserted })
    }

    /// A to-one relationship's identifier from its stored value (a to-many value holding one id
    /// reads as that id, so a to-one made to-many and back reads its values).
    private static func decodeReference<T>(_ type: any RecordReference.Type, from value: Value,
                                           attribute: String) throws(RecordCodingError) -> T
    {
        guard case .references(let ids) = value, ids.count == 1, let reference = type.init(rawValue: ids[0]) as? T else {
            throw .typeMismatch(attribute: attribute, expected: String(describing: T.self), found: value)
        }
        return reference
    }

    /// A to-many relationship's identifiers from its stored value; absent is empty.
    private static func decodeReferences<T>(_ type: any RecordReferenceList.Type, from value: Value,
                                            attribute: String) throws(RecordCodingError) -> T
    {
        let ids: [UInt64]
        switch value {
        case .null: ids = []
        case .references(let stored): ids = stored
        default: throw .typeMismatch(attribute: attribute, expected: String(describing: T.self), found: value)
        }
        guard let list = type.init(rawValues: ids) as? T else {
            throw .typeMismatch(attribute: attribute, expected: String(describing: T.self), found: value)
        }
        return list
    }

    /// Decodes the `Wrapped` of an optional type and wraps it.
    private static func decodeWrapped<T: Decodable, O: OptionalDecodable>(_ optionalType: O.Type, from value: Value,
                                                                      attribute: String) throws(RecordCodingError) -> T
    {
        let wrapped = try decode(O.Wrapped.self, from: value, attribute: attribute)
        guard let result = O.wrapping(wrapped) as? T else {
            throw .typeMismatch(attribute: attribute, expected: String(describing: T.self), found: value)
        }
        return result
    }

    /// A scalar of type `T` from `value`; nil when `T` is not a scalar type.
    private static func scalar<T>(_: T.Type, from value: Value, attribute: String) throws(RecordCodingError) -> T? {
        guard let type = scalarType(of: T.self) else { return nil }
        let result: Any? =
            switch (type, value) {
            case (.bool, .bool(let bool)): bool
            case (.string, .string(let string)): string
            case (.double, .double(let double)): T.self == Float.self ? try float(narrowing: double, attribute: attribute) : double
            case (.date, .date(let date)): date
            case (.uuid, .uuid(let uuid)): uuid
            case (.data, .data(let bytes)): T.self == Data.self ? Data(bytes) : bytes
            case (.int, .int(let int)): try integer(T.self, from: int, attribute: attribute)
            default: nil
            }
        guard let typed = result as? T else {
            throw .typeMismatch(attribute: attribute, expected: String(describing: T.self), found: value)
        }
        return typed
    }

    private static func integer<T>(_: T.Type, from value: Int64, attribute: String) throws(RecordCodingError) -> Any {
        guard let integerType = T.self as? any FixedWidthInteger.Type, let converted = integerType.init(exactly: value) else {
            throw .integerOutOfRange(attribute: attribute, value: "\(value)", type: String(describing: T.self))
        }
        return converted
    }
}

// The scalar conversions, by concrete type: what the record containers' concrete
// `decode(_: String.Type, forKey:)`… overloads and the fast paths above call. Each error is
// the one the generic path reports for the same type.
extension ValueConversion {
    /// The error for `value` not being a `typeName`: missing when null, else a mismatch.
    static func mismatch(_ value: Value, attribute: String, typeName: String) -> RecordCodingError {
        value.isNull ? .missingValue(attribute: attribute, type: typeName)
                     : .typeMismatch(attribute: attribute, expected: typeName, found: value)
    }

    @inline(__always)
    static func string(from value: Value, attribute: String) throws(RecordCodingError) -> String {
        guard case .string(let string) = value else { throw mismatch(value, attribute: attribute, typeName: "String") }
        return string
    }

    @inline(__always)
    static func bool(from value: Value, attribute: String) throws(RecordCodingError) -> Bool {
        guard case .bool(let bool) = value else { throw mismatch(value, attribute: attribute, typeName: "Bool") }
        return bool
    }

    @inline(__always)
    static func double(from value: Value, attribute: String) throws(RecordCodingError) -> Double {
        guard case .double(let double) = value else { throw mismatch(value, attribute: attribute, typeName: "Double") }
        return double
    }

    @inline(__always)
    static func float(from value: Value, attribute: String) throws(RecordCodingError) -> Float {
        guard case .double(let double) = value else { throw mismatch(value, attribute: attribute, typeName: "Float") }
        return try float(narrowing: double, attribute: attribute)
    }

    /// A stored double read as a `Float`: rounded to the nearest `Float` (as `JSONDecoder`
    /// reads a number), but a finite value beyond `Float`'s range, or one so small it would
    /// read as zero, is an error rather than a silent infinity or zero.
    @inline(__always)
    static func float(narrowing double: Double, attribute: String) throws(RecordCodingError) -> Float {
        let float = Float(double)
        if (float.isInfinite && double.isFinite) || (float == 0 && double != 0) {
            throw .typeMismatch(attribute: attribute, expected: "Float", found: .double(double))
        }
        return float
    }

    @inline(__always)
    static func date(from value: Value, attribute: String) throws(RecordCodingError) -> Date {
        guard case .date(let date) = value else { throw mismatch(value, attribute: attribute, typeName: "Date") }
        return date
    }

    @inline(__always)
    static func uuid(from value: Value, attribute: String) throws(RecordCodingError) -> UUID {
        guard case .uuid(let uuid) = value else { throw mismatch(value, attribute: attribute, typeName: "UUID") }
        return uuid
    }

    @inline(__always)
    static func data(from value: Value, attribute: String) throws(RecordCodingError) -> Data {
        guard case .data(let bytes) = value else { throw mismatch(value, attribute: attribute, typeName: "Data") }
        return Data(bytes)
    }

    /// An integer of type `I` from an `.int`, range-checked.
    @inline(__always)
    static func integer<I: FixedWidthInteger>(_: I.Type, from value: Value, attribute: String) throws(RecordCodingError) -> I {
        guard case .int(let int) = value else { throw mismatch(value, attribute: attribute, typeName: String(describing: I.self)) }
        guard let converted = I(exactly: int) else {
            throw .integerOutOfRange(attribute: attribute, value: "\(int)", type: String(describing: I.self))
        }
        return converted
    }

    /// The `.int` stored for an integer, range-checked into `Int64`.
    @inline(__always)
    static func value<I: FixedWidthInteger>(ofInteger integer: I, attribute: String) throws(RecordCodingError) -> Value {
        guard let int = Int64(exactly: integer) else {
            throw .integerOutOfRange(attribute: attribute, value: "\(integer)", type: "Int64")
        }
        return .int(int)
    }
}

/// `Optional` of an encodable type, seen through a protocol so generic code can unwrap it.
protocol OptionalEncodable {
    var wrappedEncodable: (any Encodable)? { get }
}

extension Optional: OptionalEncodable where Wrapped: Encodable {
    var wrappedEncodable: (any Encodable)? { self }
}

/// `Optional` of a decodable type, seen through a protocol so generic code can tell `T?`
/// from `T` and build either case.
protocol OptionalDecodable {
    associatedtype Wrapped: Decodable
    static var absent: Self { get }
    static func wrapping(_ wrapped: Wrapped) -> Self
}

extension Optional: OptionalDecodable where Wrapped: Decodable {
    static var absent: Self { nil }
    static func wrapping(_ wrapped: Wrapped) -> Self { .some(wrapped) }
}
