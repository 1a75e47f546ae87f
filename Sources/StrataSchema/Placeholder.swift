#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Makes a throwaway value of any `Decodable` type, so entity discovery can run a record's
/// initializer to its end. The value is never stored.
///
/// In order: `nil` for optionals; a fixed value for scalars (`false`, `0`, `""`, the
/// reference date, the zero UUID, empty data) and `URL`; the first case of a `CaseIterable`
/// type (enums with raw values reject made-up raw values); otherwise the type's own
/// `init(from:)` run against ``PlaceholderDecoder``, which offers empty collections, absent
/// optionals and placeholders all the way down, up to ``maximumDepth`` levels (recursive
/// types end there with an error rather than looping).
enum Placeholder {
    static let maximumDepth = 32

    /// Thrown when nesting passes ``maximumDepth``.
    struct TooDeep: Error, CustomStringConvertible {
        var typeName: String
        var description: String { "\(typeName) nests more than \(Placeholder.maximumDepth) levels deep (a recursive type?)" }
    }

    static func make<T: Decodable>(_: T.Type, depth: Int) throws -> T {
        if let optionalType = T.self as? any OptionalDecodable.Type, let absent = optionalType.absent as? T { return absent }
        if let scalar = scalar(T.self) as? T { return scalar }
        if let caseIterable = T.self as? any CaseIterable.Type, let first = firstCase(of: caseIterable) as? T { return first }
        guard depth < maximumDepth else { throw TooDeep(typeName: String(describing: T.self)) }
        return try T(from: PlaceholderDecoder(depth: depth + 1))
    }

    /// A fixed value of a scalar type, or nil for another type. `marked`: a value that differs
    /// from the unmarked one (true, 1, "\u{1}", one second in, …; ``KeyPathNames``).
    static func scalar(_ type: Any.Type, marked: Bool = false) -> Any? {
        let one: UInt8 = marked ? 1 : 0
        switch type {
        case is Bool.Type: return marked
        case is String.Type: return marked ? "\u{1}" : ""
        case is Double.Type: return Double(one)
        case is Float.Type: return Float(one)
        case is Date.Type: return Date(timeIntervalSinceReferenceDate: Double(one))
        case is UUID.Type: return UUID(uuid: (one, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, one))
        case is Data.Type: return Data(marked ? [1] : [])
        case is [UInt8].Type: return marked ? [UInt8]([1]) : [UInt8]()
        case is URL.Type: return URL(fileURLWithPath: marked ? "/marked" : "/")
        case let integer as any FixedWidthInteger.Type: return integer.init(Int(one))
        default: return nil
        }
    }

    private static func firstCase<C: CaseIterable>(of _: C.Type) -> Any? { C.allCases.first }
}

/// A `Decoder` that answers every request with placeholders: keyed containers where every key
/// is absent (so `decodeIfPresent` gives nil) yet `decode` gives a placeholder, unkeyed
/// containers that are empty, single values that are placeholders.
struct PlaceholderDecoder: Decoder, SingleValueDecodingContainer {
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(PlaceholderKeyedContainer<Key>(depth: depth))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { PlaceholderUnkeyedContainer(depth: depth) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_: T.Type) throws -> T { try Placeholder.make(T.self, depth: depth) }
}

struct PlaceholderKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_: Key) -> Bool { false }
    func decodeNil(forKey _: Key) throws -> Bool { true }
    func decode<T: Decodable>(_: T.Type, forKey _: Key) throws -> T { try Placeholder.make(T.self, depth: depth) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type, forKey _: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(PlaceholderKeyedContainer<NestedKey>(depth: depth))
    }

    func nestedUnkeyedContainer(forKey _: Key) throws -> any UnkeyedDecodingContainer { PlaceholderUnkeyedContainer(depth: depth) }
    func superDecoder() throws -> any Decoder { PlaceholderDecoder(depth: depth) }
    func superDecoder(forKey _: Key) throws -> any Decoder { PlaceholderDecoder(depth: depth) }
}

/// Empty (so collections decode empty), but a `decode` past the end still gives a placeholder,
/// for hand-written initializers that read a fixed number of elements.
struct PlaceholderUnkeyedContainer: UnkeyedDecodingContainer {
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 0 }
    var isAtEnd: Bool { true }
    var currentIndex: Int { 0 }

    mutating func decodeNil() throws -> Bool { true }
    mutating func decode<T: Decodable>(_: T.Type) throws -> T { try Placeholder.make(T.self, depth: depth) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(PlaceholderKeyedContainer<NestedKey>(depth: depth))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { PlaceholderUnkeyedContainer(depth: depth) }
    mutating func superDecoder() throws -> any Decoder { PlaceholderDecoder(depth: depth) }
}
