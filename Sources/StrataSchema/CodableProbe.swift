#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a codable attribute's Swift type decodes itself, as entity discovery found out by
/// running its `init(from:)` against a recording decoder: whether a plain stored value (an
/// attribute that was a `String`, an `Int`, … before it became codable) can ever be read as
/// that type (Docs/Migrations.md, "Making an attribute codable").
///
/// Migration metadata, not part of the schema's shape: every probe compares equal and hashes
/// alike, so a schema derived from types equals the same schema written by hand, and the
/// checksum (which never sees it) is unchanged.
package struct CodableProbe: Sendable, Hashable, CustomStringConvertible {
    /// What the probe saw.
    package enum Form: Sendable, Equatable {
        /// Not probed (a schema written by hand, a non-codable attribute) or inconclusive (the
        /// initializer threw before asking for a container): a plain stored value is tried
        /// record by record when read, and one that does not decode is a typed error.
        case unknown
        /// The type decodes from a single value container holding one scalar of this
        /// attribute type — a `RawRepresentable` enum, a wrapper whose `init(from:)` reads
        /// `singleValueContainer().decode(Int.self)`, possibly through further single-value
        /// wrappers.
        case singleValue(AttributeType)
        /// The type decodes from a keyed or an unkeyed container (a struct with synthesized
        /// `Codable`, an array, a dictionary, an enum with cases encoded by name): a single
        /// plain value never decodes as it.
        case structured(String)
    }

    /// What the probe saw.
    package var form: Form

    /// A probe with the given result.
    package init(_ form: Form) { self.form = form }

    /// No probe.
    package static let unknown = CodableProbe(.unknown)

    /// Every probe is equal: the probe is not part of the schema's shape.
    package static func == (_: CodableProbe, _: CodableProbe) -> Bool { true }

    /// Hashes nothing (see ``==(_:_:)``).
    package func hash(into _: inout Hasher) {}

    /// Whether a stored plain value of type `stored` may decode as the probed type: the
    /// single value it reads is of the same type, or it reads a `Double` (or `Float`) from a
    /// stored integer (JSON numbers carry no type); always for `.unknown`, never for
    /// `.structured` or a codable `stored`.
    package func mayDecode(fromPlain stored: AttributeType) -> Bool {
        if case .codable = stored { return false }
        switch form {
        case .unknown: return true
        case .structured: return false
        case .singleValue(let read): return read == stored || (read == .double && stored == .int)
        }
    }

    /// `unknown`, `single int value`, `a keyed container`, …
    package var description: String {
        switch form {
        case .unknown: "unknown"
        case .singleValue(let type): "single \(type) value"
        case .structured(let container): container
        }
    }

    /// Probes `type` (an optional is unwrapped); `.unknown` for a type that is not
    /// `Decodable` or is stored natively.
    static func probe(_ type: Any.Type) -> CodableProbe {
        if let optionalType = type as? any OptionalDecodable.Type { return probe(wrappedType(of: optionalType)) }
        if ValueConversion.scalarType(of: type) != nil { return .unknown }
        guard let decodable = type as? any Decodable.Type else { return .unknown }
        return probeDecodable(decodable)
    }

    private static func wrappedType<O: OptionalDecodable>(of _: O.Type) -> Any.Type { O.Wrapped.self }

    /// Runs `T(from:)` against a ``ProbeDecoder`` and reads what it asked for.
    private static func probeDecodable<T: Decodable>(_: T.Type) -> CodableProbe {
        let state = ProbeState()
        _ = try? T(from: ProbeDecoder(state: state, depth: 0))
        return CodableProbe(state.form ?? .unknown)
    }
}

/// What one probe has seen: the first container asked for decides. Used by one call.
final class ProbeState {
    var form: CodableProbe.Form?

    /// Records `form` if nothing was recorded yet.
    func note(_ form: CodableProbe.Form) { if self.form == nil { self.form = form } }
}

/// Thrown by the probe's containers once the type's form is known, to stop its initializer.
struct ProbeFinished: Error {}

/// A `Decoder` that records which container a type asks for and, for a single value, which
/// type it decodes from it, following single-value wrappers down to the scalar.
struct ProbeDecoder: Decoder, SingleValueDecodingContainer {
    let state: ProbeState
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Wrappers nested deeper than this are inconclusive (a recursive type?).
    static let maximumDepth = 16

    func container<Key: CodingKey>(keyedBy _: Key.Type) throws -> KeyedDecodingContainer<Key> {
        state.note(.structured("a keyed container"))
        throw ProbeFinished()
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        state.note(.structured("an unkeyed container"))
        throw ProbeFinished()
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// Not nil: the initializer goes on to decode its value.
    func decodeNil() -> Bool { false }

    /// Records the scalar type `T`, or probes a wrapped decodable `T` in turn.
    func decode<T: Decodable>(_: T.Type) throws -> T {
        if T.self == [UInt8].self {
            // Stored `.data` becomes a base64 JSON string; `[UInt8]` decodes from a JSON array.
            state.note(.structured("an unkeyed container"))
        } else if let scalar = ValueConversion.scalarType(of: T.self) {
            state.note(.singleValue(scalar))
        } else if depth < Self.maximumDepth {
            _ = try T(from: ProbeDecoder(state: state, depth: depth + 1))
        }
        throw ProbeFinished()
    }

    func decode(_: Bool.Type) throws -> Bool { try decode(Bool.self as Bool.Type, generic: ()) }
    func decode(_: String.Type) throws -> String { try decode(String.self as String.Type, generic: ()) }
    func decode(_: Double.Type) throws -> Double { try decode(Double.self as Double.Type, generic: ()) }
    func decode(_: Float.Type) throws -> Float { try decode(Float.self as Float.Type, generic: ()) }
    func decode(_: Int.Type) throws -> Int { try decode(Int.self as Int.Type, generic: ()) }
    func decode(_: Int8.Type) throws -> Int8 { try decode(Int8.self as Int8.Type, generic: ()) }
    func decode(_: Int16.Type) throws -> Int16 { try decode(Int16.self as Int16.Type, generic: ()) }
    func decode(_: Int32.Type) throws -> Int32 { try decode(Int32.self as Int32.Type, generic: ()) }
    func decode(_: Int64.Type) throws -> Int64 { try decode(Int64.self as Int64.Type, generic: ()) }
    func decode(_: UInt.Type) throws -> UInt { try decode(UInt.self as UInt.Type, generic: ()) }
    func decode(_: UInt8.Type) throws -> UInt8 { try decode(UInt8.self as UInt8.Type, generic: ()) }
    func decode(_: UInt16.Type) throws -> UInt16 { try decode(UInt16.self as UInt16.Type, generic: ()) }
    func decode(_: UInt32.Type) throws -> UInt32 { try decode(UInt32.self as UInt32.Type, generic: ()) }
    func decode(_: UInt64.Type) throws -> UInt64 { try decode(UInt64.self as UInt64.Type, generic: ()) }

    /// The concrete overloads, routed to the generic `decode`.
    private func decode<T: Decodable>(_: T.Type, generic _: Void) throws -> T { try decode(T.self) }
}
