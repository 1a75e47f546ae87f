#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat

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
        return try run(Record.self, RecordDecoding(state: .holding(layout.names.map { merged[$0] ?? .null }, layout: layout, type: Record.self)))
    }

    /// Runs a typed record's `init(from: RecordReader)` on `state` (the fast path when the type
    /// implements it, else its `Decodable` conformance).
    func run<Record: PersistentRecord>(_: Record.Type, _ state: RecordDecodingState) throws(RecordCodingError) -> Record {
        do {
            return try Record(from: RecordReader(state: state))
        } catch let error as RecordCodingError {
            throw error
        } catch {
            throw .recordCodingFailed(type: String(describing: Record.self), reason: "\(error)")
        }
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

/// The fields of a ``RecordDecodingState``, before its spans.
struct RecordDecodingHeader {
    let layout: RecordLayout
    /// The record type; its name is only formatted for an error (formatting it for every
    /// record was a measurable share of decoding).
    var type: Any.Type
    /// Where the type's attribute defaults come from; nil when `slots` already hold them.
    var defaultsSource: (any PersistentRecord.Type)?
    /// The record's bytes, which the spans point into; valid only during the decode call.
    var bytes: UnsafeRawBufferPointer
    /// The number of spans: one per layout position when decoding from bytes, else 0.
    var spanCount: Int
    /// Values by layout position when decoding from values (or from bytes that a decoder kept
    /// past the call had to be copied out of); else empty.
    var slots: [Value]
    /// The type's attribute defaults, once needed.
    var typeDefaults: [String: Value]?
    /// The layout positions of null fields when decoding from values (`slots` holds `.null`
    /// there); decoding from bytes, the spans say it (`FieldSpan.isNull`).
    var nullPositions: [Int]
    /// Where the next key is looked for first: a synthesized `init(from:)` asks for the keys
    /// in declaration order, which usually is the layout's (ids are given in that order), and
    /// an equal name is found by one comparison instead of a scan.
    var nextPosition: Int
}

/// What one decode of a record reads its attributes from, shared by the `Decoder`, its
/// containers and super-decoders: the layout (name → position), and per position either where
/// the record's bytes hold the field (decoding from bytes: one `FieldSpan` per position after
/// the header, so state and spans are one allocation) or its value (`slots`, decoding from
/// values). A class, so the `Decoder` is one reference and fits an existential without a box.
///
/// An attribute with no value — absent from the bytes, or `.null` in `slots` — takes the
/// layout's catalog default, then the type's ``PersistentRecord/attributeDefaults``, which are
/// asked for only when an attribute needs them (most records hold all their attributes). A
/// null field (an optional attribute with a default set to nil) reads as nil for an optional
/// property (`valueIfPresent`, `contains`) and, for a property that cannot hold nil (a later
/// version made the attribute required), as its default, like an absent one.
///
/// Used by one decode call on one thread. The header and spans are reached through pointers,
/// so their accesses (which never overlap) skip dynamic exclusivity checks.
final class RecordDecodingState: ManagedBuffer<RecordDecodingHeader, FieldSpan> {
    /// A state for decoding the record in `bytes`, after the validating pass over them: throws
    /// what `RecordCodec.decodeFields` throws for bytes that are not a valid record.
    static func locating(_ bytes: UnsafeRawBufferPointer, layout: RecordLayout,
                         type: any PersistentRecord.Type) throws(FormatError) -> RecordDecodingState
    {
        let count = layout.ids.count
        let state = make(RecordDecodingHeader(layout: layout, type: type, defaultsSource: type, bytes: bytes, spanCount: count,
                                              slots: [], typeDefaults: nil, nullPositions: [], nextPosition: 0), capacity: count)
        try state.withUnsafeMutablePointerToElements { (spans) throws(FormatError) in
            spans.initialize(repeating: .absent, count: count)
            try RecordCodec.locateFields(bytes, ids: layout.ids, into: spans)
        }
        return state
    }

    /// Makes a state that decoded a record from bytes, and that nothing kept, ready to decode
    /// the record in `bytes` with the same layout: as `locating` would make it.
    func relocate(_ bytes: UnsafeRawBufferPointer, type: any PersistentRecord.Type) throws(FormatError) {
        try withUnsafeMutablePointers { (header, spans) throws(FormatError) in
            if ObjectIdentifier(header.pointee.type) != ObjectIdentifier(type) { header.pointee.typeDefaults = nil }
            header.pointee.type = type
            header.pointee.defaultsSource = type
            header.pointee.bytes = bytes
            if !header.pointee.slots.isEmpty { header.pointee.slots = [] }
            if !header.pointee.nullPositions.isEmpty { header.pointee.nullPositions = [] }
            header.pointee.nextPosition = 0
            let count = header.pointee.layout.ids.count
            header.pointee.spanCount = count
            spans.update(repeating: .absent, count: count)
            try RecordCodec.locateFields(bytes, ids: header.pointee.layout.ids, into: spans)
        }
    }

    /// A state for decoding from `slots`, the values of `layout`'s attributes with every
    /// default already in place; `nulls` are the positions of null fields.
    static func holding(_ slots: [Value], nulls: [Int] = [], layout: RecordLayout, type: Any.Type) -> RecordDecodingState {
        make(RecordDecodingHeader(layout: layout, type: type, defaultsSource: nil, bytes: UnsafeRawBufferPointer(start: nil, count: 0),
                                  spanCount: 0, slots: slots, typeDefaults: nil, nullPositions: nulls, nextPosition: 0), capacity: 0)
    }

    private static func make(_ header: RecordDecodingHeader, capacity: Int) -> RecordDecodingState {
        unsafeDowncast(create(minimumCapacity: capacity) { _ in header }, to: RecordDecodingState.self)
    }

    /// Ends a decode from bytes, which are the caller's and valid only during the call. When a
    /// decoder was kept (a record's `init(from:)` may store it), the fields are copied out of
    /// the bytes into `slots` first, so it reads the same values later and never the pointer.
    static func finish(_ state: inout RecordDecodingState) {
        if isKnownUniquelyReferenced(&state) { return }
        state.withUnsafeMutablePointers { header, spans in
            header.pointee.slots = (0..<header.pointee.spanCount).map { spans[$0].value(in: header.pointee.bytes) }
            header.pointee.nullPositions = (0..<header.pointee.spanCount).filter { spans[$0].isNull }
            header.pointee.spanCount = 0
            header.pointee.bytes = UnsafeRawBufferPointer(start: nil, count: 0)
        }
    }

    var layout: RecordLayout { withUnsafeMutablePointerToHeader { $0.pointee.layout } }
    var typeName: String { String(describing: withUnsafeMutablePointerToHeader { $0.pointee.type }) }

    /// The layout position of the attribute `name`, or nil.
    @inline(__always)
    func position(of name: String) -> Int? {
        withUnsafeMutablePointerToHeader { header in
            let names = header.pointee.layout.names
            let guess = header.pointee.nextPosition
            if guess < names.count && names[guess] == name {
                header.pointee.nextPosition = guess + 1
                return guess
            }
            guard let position = header.pointee.layout.position(of: name) else { return nil }
            header.pointee.nextPosition = position + 1
            return position
        }
    }

    /// Where the record's bytes hold the attribute `name`; `.absent` when they do not (or
    /// when decoding from values): the caller then falls back to ``value(forKey:)``.
    @inline(__always)
    func field(named name: String) -> FieldSpan {
        guard let position = position(of: name) else { return .absent }
        return withUnsafeMutablePointers { header, spans in position < header.pointee.spanCount ? spans[position] : .absent }
    }

    /// The bytes `field` (from ``field(named:)``) points into.
    @inline(__always)
    var bytes: UnsafeRawBufferPointer { withUnsafeMutablePointerToHeader { $0.pointee.bytes } }

    /// The value of the attribute `name`, `.null` when it has none (defaults applied).
    func value(forKey name: String) -> Value {
        // Most often the attribute `field(named:)` just found without a value in the bytes
        // (one stored by an older version of the schema): its position, not a search.
        let last = withUnsafeMutablePointerToHeader { $0.pointee.nextPosition } - 1
        let names = layout.names
        if last >= 0 && last < names.count && names[last] == name {
            let value = value(at: last)
            return value.isNull ? typeDefault(of: name) : value
        }
        if let position = layout.position(of: name) {
            let value = value(at: position)
            if !value.isNull { return value }
        }
        return typeDefault(of: name)
    }

    /// The value of the attribute `name` as an optional property reads it: `.null` for a null
    /// field, else ``value(forKey:)``.
    func valueIfPresent(forKey name: String) -> Value {
        if let position = layout.position(of: name), isNull(at: position) { return .null }
        return value(forKey: name)
    }

    /// Whether the attribute `name` has a value (defaults applied; a null field has none),
    /// without building it.
    func contains(_ name: String) -> Bool {
        if let position = layout.position(of: name) {
            if isNull(at: position) { return false }
            if hasValue(at: position) { return true }
        }
        return !typeDefault(of: name).isNull
    }

    /// The names with a value: the layout's in its order, then those only the type's defaults
    /// have, in the defaults' order (as decoding through values names them).
    var presentNames: [String] {
        let layout = layout
        var names = layout.names.indices.filter { !isNull(at: $0) && (hasValue(at: $0) || !typeDefault(of: layout.names[$0]).isNull) }
            .map { layout.names[$0] }
        for (name, value) in typeDefaults where !value.isNull && layout.position(of: name) == nil { names.append(name) }
        return names
    }

    /// The value at a layout position from the bytes, the slots or the catalog default; `.null`
    /// when none has one.
    private func value(at position: Int) -> Value {
        withUnsafeMutablePointers { header, spans in
            if position < header.pointee.spanCount && spans[position].tag != 0 { return spans[position].value(in: header.pointee.bytes) }
            if position < header.pointee.slots.count && !header.pointee.slots[position].isNull { return header.pointee.slots[position] }
            return header.pointee.layout.defaults[position]
        }
    }

    /// Whether the attribute at a layout position is a null field.
    private func isNull(at position: Int) -> Bool {
        withUnsafeMutablePointers { header, spans in
            position < header.pointee.spanCount ? spans[position].isNull
                : !header.pointee.nullPositions.isEmpty && header.pointee.nullPositions.contains(position)
        }
    }

    private func hasValue(at position: Int) -> Bool {
        withUnsafeMutablePointers { header, spans in
            (position < header.pointee.spanCount && spans[position].tag != 0)
                || (position < header.pointee.slots.count && !header.pointee.slots[position].isNull)
                || !header.pointee.layout.defaults[position].isNull
        }
    }

    private var typeDefaults: [String: Value] {
        withUnsafeMutablePointerToHeader { header in
            if let defaults = header.pointee.typeDefaults { return defaults }
            let defaults = header.pointee.defaultsSource?.attributeDefaults ?? [:]
            header.pointee.typeDefaults = defaults
            return defaults
        }
    }

    private func typeDefault(of name: String) -> Value { typeDefaults[name] ?? .null }
}

/// The `Decoder` a record decodes itself from: one reference to the decode's state, so it
/// fits an existential without a box.
struct RecordDecoding: Decoder {
    let state: RecordDecodingState
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RecordKeyedDecodingContainer<Key>(state: state))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw RecordCodingError.unsupportedStructure(type: state.typeName, reason: "it decodes from an unkeyed container; a record needs a keyed container")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw RecordCodingError.unsupportedStructure(type: state.typeName, reason: "it decodes from a single value; a record needs a keyed container")
    }
}

/// Reads each key's value from the record's attributes, through a ``RecordReader`` (one
/// implementation for `Codable` records and hand-coded ones): the concrete overloads and the
/// common scalars of the generic ones read a field straight from the record's bytes;
/// everything else (absent attributes and their defaults, other types, type mismatches and
/// their errors) goes through the attribute's `Value` and `ValueConversion`.
struct RecordKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let state: RecordDecodingState
    var codingPath: [any CodingKey] { [] }
    private var reader: RecordReader { RecordReader(state: state) }

    /// The keys with a value.
    var allKeys: [Key] { state.presentNames.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { reader.contains(key.stringValue) }
    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }
    func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T { try reader.decode(T.self, forKey: key.stringValue) }
    func decodeIfPresent<T: Decodable>(_: T.Type, forKey key: Key) throws -> T? { try reader.decodeIfPresent(T.self, forKey: key.stringValue) }

    // The concrete overloads synthesized conformances call: no generic conversion.
    func decode(_: String.Type, forKey key: Key) throws -> String { try reader.decode(String.self, forKey: key.stringValue) }
    func decode(_: Bool.Type, forKey key: Key) throws -> Bool { try reader.decode(Bool.self, forKey: key.stringValue) }
    func decode(_: Double.Type, forKey key: Key) throws -> Double { try reader.decode(Double.self, forKey: key.stringValue) }
    func decode(_: Float.Type, forKey key: Key) throws -> Float { try reader.decode(Float.self, forKey: key.stringValue) }
    func decode(_: Int.Type, forKey key: Key) throws -> Int { try reader.decode(Int.self, forKey: key.stringValue) }
    func decode(_: Int8.Type, forKey key: Key) throws -> Int8 { try reader.decode(Int8.self, forKey: key.stringValue) }
    func decode(_: Int16.Type, forKey key: Key) throws -> Int16 { try reader.decode(Int16.self, forKey: key.stringValue) }
    func decode(_: Int32.Type, forKey key: Key) throws -> Int32 { try reader.decode(Int32.self, forKey: key.stringValue) }
    func decode(_: Int64.Type, forKey key: Key) throws -> Int64 { try reader.decode(Int64.self, forKey: key.stringValue) }
    func decode(_: UInt.Type, forKey key: Key) throws -> UInt { try reader.decode(UInt.self, forKey: key.stringValue) }
    func decode(_: UInt8.Type, forKey key: Key) throws -> UInt8 { try reader.decode(UInt8.self, forKey: key.stringValue) }
    func decode(_: UInt16.Type, forKey key: Key) throws -> UInt16 { try reader.decode(UInt16.self, forKey: key.stringValue) }
    func decode(_: UInt32.Type, forKey key: Key) throws -> UInt32 { try reader.decode(UInt32.self, forKey: key.stringValue) }
    func decode(_: UInt64.Type, forKey key: Key) throws -> UInt64 { try reader.decode(UInt64.self, forKey: key.stringValue) }
    func decodeIfPresent(_: String.Type, forKey key: Key) throws -> String? { try reader.decodeIfPresent(String.self, forKey: key.stringValue) }
    func decodeIfPresent(_: Bool.Type, forKey key: Key) throws -> Bool? { try reader.decodeIfPresent(Bool.self, forKey: key.stringValue) }
    func decodeIfPresent(_: Double.Type, forKey key: Key) throws -> Double? { try reader.decodeIfPresent(Double.self, forKey: key.stringValue) }
    func decodeIfPresent(_: Int.Type, forKey key: Key) throws -> Int? { try reader.decodeIfPresent(Int.self, forKey: key.stringValue) }
    func decodeIfPresent(_: Int64.Type, forKey key: Key) throws -> Int64? { try reader.decodeIfPresent(Int64.self, forKey: key.stringValue) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw unsupported("attribute \(key.stringValue) asks for a nested keyed container; decode a Codable value instead")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw unsupported("attribute \(key.stringValue) asks for a nested unkeyed container; decode an array value instead")
    }

    /// The superclass decodes from the same record (its attributes are inherited ones).
    func superDecoder() throws -> any Decoder { RecordDecoding(state: state) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        throw unsupported("attribute \(key.stringValue) asks for a keyed super-decoder; use superDecoder() without a key")
    }

    private func unsupported(_ reason: String) -> RecordCodingError {
        .unsupportedStructure(type: state.typeName, reason: reason)
    }
}
