import StrataFormat

/// What one `RecordEncoder.encode` call collects. A class because the encoder and its
/// containers (value types handed to user code) all write into it; used by one call on one
/// thread, never shared — and no access to a property overlaps another to the same one, so
/// the stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`: they
/// were ~6 % of encoding).
///
/// Encoding straight to bytes (`layout` set), values are written to `writer` as they come
/// while their attributes come in ascending id order — what a synthesized `encode(to:)` does
/// when the attributes are declared in the order the catalog numbered them — so no list of
/// fields is built, sorted and written afterwards. The first value out of that order (or a
/// second value for one attribute) turns the bytes written so far back into `fields`, which
/// then collect the rest for `RecordCodec.encode(fields:)`: the same bytes either way. A
/// value whose name has no id goes to `values`, to be reported as an unknown attribute unless
/// it ends up null. Encoding to names (`layout` nil), every value goes to `values`.
final class RecordEncodingState {
    /// The record type; its name is formatted only for an error.
    private(set) var type: Any.Type
    var typeName: String { String(describing: type) }
    let layout: RecordLayout?
    @exclusivity(unchecked) var values: [String: Value] = [:]
    /// The record's bytes while values come in ascending id order: a format byte and a
    /// one-byte count, both set by `encodedBytes()`, then the fields.
    @exclusivity(unchecked) private var writer = RecordFieldWriter()
    /// Non-null fields in `writer`, and whether one holds references.
    @exclusivity(unchecked) private var writtenCount = 0
    @exclusivity(unchecked) private var holdsReferences = false
    /// The layout position of the last value stored in order (null ones included).
    @exclusivity(unchecked) private var lastPosition = -1
    /// Every field, once values came out of order (nil until then).
    @exclusivity(unchecked) private var fields: [(id: UInt32, value: Value)]?
    /// The first structural problem, recorded where the `Encoder` API cannot throw
    /// (`unkeyedContainer()`, `nestedContainer`…) and thrown when `encode(to:)` returns.
    var failure: RecordCodingError?

    init(type: Any.Type, layout: RecordLayout? = nil) {
        self.type = type
        self.layout = layout
        if let layout {
            writer.reserve(layout.estimatedRecordSize)
            writer.append(RecordCodec.baseFormat)
            writer.append(UInt8(0))
        }
    }

    /// Makes a state that encoded a record (with a layout) ready for the next one, writing
    /// into `buffer` (emptied, its capacity kept) — `RecordEncodingSession`'s reuse.
    func reset(type: Any.Type, buffer: consuming [UInt8]) {
        self.type = type
        values.removeAll(keepingCapacity: true)
        writer.reset(buffer)
        writer.append(RecordCodec.baseFormat)
        writer.append(UInt8(0))
        writtenCount = 0
        holdsReferences = false
        lastPosition = -1
        fields = nil
        failure = nil
    }

    /// Stores the value of the attribute `name`; a later value for the same name replaces it.
    @inline(__always)
    func store(_ value: Value, forKey name: String) {
        guard let layout, let position = layout.position(of: name) else {
            values[name] = value
            return
        }
        if fields == nil && position > lastPosition {
            lastPosition = position
            guard !value.isNull else { return }
            writer.appendVarint(UInt64(layout.ids[position]))
            writer.append(value)
            writtenCount += 1
            if case .references = value { holdsReferences = true }
        } else {
            if fields == nil { fields = writtenFields() }
            fields?.append((layout.ids[position], value))
        }
    }

    /// The record's bytes in the `RecordCodec` encoding (encoding with a layout); call once.
    func encodedBytes() -> [UInt8] {
        if let fields { return RecordCodec.encode(fields: fields) }
        return finishedBytes(writer.takeBytes())
    }

    /// `bytes` (`writer`'s) with their format byte and field count set.
    private func finishedBytes(_ bytes: consuming [UInt8]) -> [UInt8] {
        bytes[0] = holdsReferences ? RecordCodec.referencesFormat : RecordCodec.baseFormat
        if writtenCount < 0x80 {
            bytes[1] = UInt8(writtenCount)
        } else {
            var count = RecordFieldWriter()
            count.appendVarint(UInt64(writtenCount))
            bytes.replaceSubrange(1..<2, with: count.bytes)
        }
        return bytes
    }

    /// The fields written to `writer` so far (decoded back: valid by construction; should
    /// that ever fail, the failure is recorded, so nothing is dropped silently).
    private func writtenFields() -> [(id: UInt32, value: Value)] {
        do throws(FormatError) {
            return try RecordCodec.decodeFields(finishedBytes(writer.bytes))
        } catch {
            if failure == nil { failure = .recordCodingFailed(type: typeName, reason: "re-reading its encoded fields failed: \(error)") }
            return []
        }
    }

    func fail(_ reason: String) {
        if failure == nil { failure = .unsupportedStructure(type: typeName, reason: reason) }
    }
}

/// The `Encoder` a record encodes itself into.
struct RecordEncoding: Encoder {
    let state: RecordEncodingState
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RecordKeyedEncodingContainer<Key>(state: state))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        state.fail("it encodes as an unkeyed container (a list); a record needs a keyed container")
        return DiscardingEncodingContainer()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        state.fail("it encodes as a single value; a record needs a keyed container")
        return DiscardingEncodingContainer()
    }
}

/// Stores each key's value as an attribute.
struct RecordKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: RecordEncodingState
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws {
        state.store(.null, forKey: key.stringValue)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        state.store(try ValueConversion.value(of: value, attribute: key.stringValue), forKey: key.stringValue)
    }

    // The concrete overloads synthesized conformances call: no generic conversion.
    mutating func encode(_ value: String, forKey key: Key) throws { state.store(.string(value), forKey: key.stringValue) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { state.store(.bool(value), forKey: key.stringValue) }
    mutating func encode(_ value: Double, forKey key: Key) throws { state.store(.double(value), forKey: key.stringValue) }
    mutating func encode(_ value: Float, forKey key: Key) throws { state.store(.double(Double(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { state.store(.int(value), forKey: key.stringValue) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }

    mutating func encode(_ value: UInt, forKey key: Key) throws {
        state.store(try ValueConversion.value(ofInteger: value, attribute: key.stringValue), forKey: key.stringValue)
    }

    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        state.store(try ValueConversion.value(ofInteger: value, attribute: key.stringValue), forKey: key.stringValue)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        state.fail("attribute \(key.stringValue) asks for a nested keyed container; encode a Codable value instead")
        return KeyedEncodingContainer(RecordKeyedEncodingContainer<NestedKey>(state: RecordEncodingState(type: state.type)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        state.fail("attribute \(key.stringValue) asks for a nested unkeyed container; encode an array value instead")
        return DiscardingEncodingContainer()
    }

    /// The superclass encodes into the same record (its attributes are inherited ones).
    mutating func superEncoder() -> any Encoder { RecordEncoding(state: state) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        state.fail("attribute \(key.stringValue) asks for a keyed super-encoder; use superEncoder() without a key")
        return RecordEncoding(state: RecordEncodingState(type: state.type))
    }
}

/// Where values go after a structural failure was recorded: accepted and dropped, so the
/// record's `encode(to:)` runs to its end and the recorded failure is reported.
struct DiscardingEncodingContainer: UnkeyedEncodingContainer, SingleValueEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }

    mutating func encodeNil() throws {}
    mutating func encode<T: Encodable>(_: T) throws {}

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(RecordKeyedEncodingContainer<NestedKey>(state: RecordEncodingState(type: Void.self)))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { DiscardingEncodingContainer() }
    mutating func superEncoder() -> any Encoder { RecordEncoding(state: RecordEncodingState(type: Void.self)) }
}
