#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One attribute value of a record, as Strata stores it.
///
/// A record is a set of `(attribute, Value)` pairs; an attribute whose value is `.null` is
/// absent from the stored record. Every case round-trips through the record encoding
/// bit for bit:
///
/// - `int` holds every Swift integer type that fits in 64 signed bits.
/// - `double` keeps its IEEE-754 bit pattern: `-0.0`, NaN payloads and infinities survive.
/// - `date` holds a `Date`, stored as the bit pattern of its
///   `timeIntervalSinceReferenceDate` (seconds since 2001-01-01 00:00:00 UTC), which is how
///   `Date` itself represents time, so a `Date` comes back exactly as it was written.
///   (Seconds since 1970 would add and subtract 978,307,200 and could change the last bits.)
/// - `codable` holds the encoded form of a nested `Codable` value (sorted-keys JSON, see
///   ``RecordEncoder``); Strata treats it as opaque bytes.
///
/// Equality and hashing are *bitwise* for `double` and `date`: `.double(.nan) == .double(.nan)`
/// and `.double(0.0) != .double(-0.0)`, because two values are equal exactly when they are
/// stored as the same bytes. Strings compare as Swift strings (canonical equivalence).
public enum Value: Sendable {
    /// No value. Never stored: an attribute holding `.null` is omitted from its record.
    case null
    /// A Boolean.
    case bool(Bool)
    /// A signed 64-bit integer (every Swift integer type that fits).
    case int(Int64)
    /// A 64-bit floating-point number, compared and stored by bit pattern.
    case double(Double)
    /// A Unicode string, stored as UTF-8.
    case string(String)
    /// Arbitrary bytes.
    case data([UInt8])
    /// A point in time, stored as the bits of its `timeIntervalSinceReferenceDate`.
    case date(Date)
    /// A UUID, stored as its 16 bytes.
    case uuid(UUID)
    /// The encoded form of a nested `Codable` value (sorted-keys JSON).
    case codable([UInt8])
    /// The identifiers of the records a relationship refers to, in order, without duplicates:
    /// one for a to-one relationship, any number for a to-many. Only relationships hold this
    /// kind (no attribute type accepts it); an empty list is stored as absent, like `.null`.
    case references([UInt64])

    /// Whether this is `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The name of this value's kind, for messages: `"null"`, `"bool"`, `"int"`, `"double"`,
    /// `"string"`, `"data"`, `"date"`, `"uuid"`, `"codable"` or `"references"`.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .data: "data"
        case .date: "date"
        case .uuid: "uuid"
        case .codable: "codable"
        case .references: "references"
        }
    }
}

extension Value: Hashable {
    /// Bitwise for `double` and `date`; see the type's documentation.
    public static func == (lhs: Value, rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.string(let a), .string(let b)): a == b
        case (.data(let a), .data(let b)): a == b
        case (.date(let a), .date(let b)):
            a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.uuid(let a), .uuid(let b)): a == b
        case (.codable(let a), .codable(let b)): a == b
        case (.references(let a), .references(let b)): a == b
        default: false
        }
    }

    /// Consistent with `==`: hashes the bit patterns of `double` and `date`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(tag.rawValue)
        switch self {
        case .null: break
        case .bool(let value): hasher.combine(value)
        case .int(let value): hasher.combine(value)
        case .double(let value): hasher.combine(value.bitPattern)
        case .string(let value): hasher.combine(value)
        case .data(let value): hasher.combine(value)
        case .date(let value): hasher.combine(value.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let value): hasher.combine(value)
        case .codable(let value): hasher.combine(value)
        case .references(let ids): hasher.combine(ids)
        }
    }
}

extension Value: CustomStringConvertible {
    /// A short, readable form for messages, e.g. `int(42)`, `string("Ada")`, `data(3 bytes)`.
    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): "bool(\(value))"
        case .int(let value): "int(\(value))"
        case .double(let value): "double(\(value))"
        case .string(let value): "string(\(String(reflecting: value)))"
        case .data(let value): "data(\(value.count) bytes)"
        case .date(let value): "date(\(value.timeIntervalSinceReferenceDate) s since 2001)"
        case .uuid(let value): "uuid(\(value.uuidString))"
        case .codable(let value): "codable(\(value.count) bytes)"
        case .references(let ids): "references(\(ids.map(String.init).joined(separator: ", ")))"
        }
    }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral
{
    /// `nil` is `.null`.
    public init(nilLiteral: ()) { self = .null }
    /// `true` / `false` are `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer literal is `.int`.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A floating-point literal is `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string literal is `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
}
