import StrataFormat

/// What one `RecordEncoder.encode` call collects. A class because the encoder and its
/// containers (value types handed to user code) all write into it; used by one call on one
/// thread, never shared — and no access to a property overlaps another to the same one, so
/// the stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`: they
/// were ~6 % of encoding).
///
/// Encoding straight to bytes (`layout` set), each value is written to `writer` as it comes
/// (its attribute id, then the value), and where it went is noted in `spans`. While the
/// attributes come in ascending id order — what a synthesized `encode(to:)` does when the
/// properties are declared in the order the catalog numbered them — the bytes written are the
/// record. Otherwise (a property added in a later version declared before older ones, a value
/// given twice) `encodedBytes()` copies the spans into ascending id order, the last value of
/// each attribute winning and nulls dropped: the bytes `RecordCodec.encode(fields:)` makes,
/// without building a `Value` list. A value whose name has no id goes to `values`, to be
/// reported as an unknown attribute unless it ends up null. Encoding to names (`layout`
/// nil), every value goes to `values`.
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
    /// The layout position of the last value stored (null ones included).
    @exclusivity(unchecked) private var lastPosition = -1
    /// Where each value written (or each null that must erase an earlier value) is in
    /// `writer`'s bytes, in the order they came.
    @exclusivity(unchecked) private var spans: [WrittenField] = []
    /// Whether a value came out of ascending position order (or twice).
    @exclusivity(unchecked) private var disordered = false
    /// A buffer for the reordered bytes of the next out-of-order record.
    @exclusivity(unchecked) private var spareResult: [UInt8] = []

    /// One value in `writer`: its layout position and its bytes (id and value; empty for a null).
    private struct WrittenField {
        var position: Int
        var start: Int
        var end: Int
        var isReferences: Bool
    }
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

    /// Whether values came out of order (the session expects the next record of the type to
    /// do the same).
    var isDisordered: Bool { disordered }

    /// Makes a state that encoded a record (with a layout) ready for the next one, writing
    /// into `buffer` (emptied, its capacity kept) — `RecordEncodingSession`'s reuse. With
    /// `expectingDisorder` (the previous record of the type came out of order), where each
    /// value goes is noted from the first one, instead of read back at the first out of order.
    func reset(type: Any.Type, buffer: consuming [UInt8], expectingDisorder: Bool = false) {
        self.type = type
        values.removeAll(keepingCapacity: true)
        writer.reset(buffer)
        writer.append(RecordCodec.baseFormat)
        writer.append(UInt8(0))
        writtenCount = 0
        holdsReferences = false
        lastPosition = -1
        spans.removeAll(keepingCapacity: true)
        disordered = expectingDisorder
        failure = nil
    }

    /// Stores the value of the attribute `name`; a later value for the same name replaces it.
    @inline(__always)
    func store(_ value: Value, forKey name: String) {
        var isReferences = false
        if case .references = value { isReferences = true }
        store(forKey: name, isNull: value.isNull, isReferences: isReferences, value: value) { $0.append(value) }
    }

    /// Stores a text value: what `store(.string(value), forKey:)` stores, without the `Value`.
    @inline(__always)
    func store(string value: String, forKey name: String) {
        store(forKey: name, isNull: false, isReferences: false, value: .string(value)) { writer in
            var text = value
            writer.append(ValueTag.string.rawValue)
            writer.appendVarint(UInt64(text.utf8.count))
            text.withUTF8 { writer.append(contentsOf: $0) }
        }
    }

    /// Stores the value of the attribute `name`, which `write` appends (tag and payload)
    /// unless it is null; `value` is kept by name when the layout has no such attribute.
    @inline(__always)
    private func store(forKey name: String, isNull: Bool, isReferences: Bool, value: @autoclosure () -> Value,
                       _ write: (inout RecordFieldWriter) -> Void) {
        guard let layout, let position = layout.position(of: name) else {
            values[name] = value()
            return
        }
        if position <= lastPosition && !disordered { noteSpansOfFieldsInOrder() }
        lastPosition = max(lastPosition, position)
        let start = writer.bytes.count
        if isNull {
            // Only an out-of-order null can erase something: note it then.
            if disordered { spans.append(WrittenField(position: position, start: start, end: start, isReferences: false)) }
            return
        }
        writer.appendVarint(UInt64(layout.ids[position]))
        write(&writer)
        writtenCount += 1
        if isReferences { holdsReferences = true }
        if disordered { spans.append(WrittenField(position: position, start: start, end: writer.bytes.count, isReferences: isReferences)) }
    }

    /// The first value out of order came: notes where each field written so far (in order)
    /// is, by reading them back — so values in order cost nothing for the rare record that is
    /// not. (Valid by construction; should reading fail, the failure is recorded, so nothing
    /// is dropped silently.)
    private func noteSpansOfFieldsInOrder() {
        disordered = true
        guard let layout else { return }
        let written = finishedBytes(writer.bytes)
        let shift = written.count - writer.bytes.count  // a field count of 128 or more takes two bytes
        let problem: FormatError? = written.withUnsafeBytes { raw in
            var reader = RecordFieldReader(raw)
            do throws(FormatError) {
                _ = try reader.readHeader()
                var previous: UInt32?
                while reader.remaining > 0 {
                    let start = reader.position
                    let id = try reader.readAttributeID(after: previous)
                    let field = try reader.readFieldSpan(id: id)
                    previous = id
                    guard let position = layout.ids.firstIndex(of: id) else { throw FormatError("attribute id \(id) is not the layout's", at: start) }
                    spans.append(WrittenField(position: position, start: start - shift, end: reader.position - shift,
                                              isReferences: field.tag == ValueTag.references.rawValue))
                }
                return nil
            } catch {
                return error
            }
        }
        if let problem, failure == nil {
            failure = .recordCodingFailed(type: typeName, reason: "re-reading its encoded fields failed: \(problem)")
        }
    }

    /// The record's bytes in the `RecordCodec` encoding (encoding with a layout); call once.
    func encodedBytes() -> [UInt8] {
        guard disordered else { return finishedBytes(writer.takeBytes()) }
        // Ascending position (= id) order, stable (a few fields: insertion sort in place); of
        // one position, the last value given wins.
        for index in spans.indices.dropFirst() {
            let span = spans[index]
            var hole = index
            while hole > 0 && spans[hole - 1].position > span.position {
                spans[hole] = spans[hole - 1]
                hole -= 1
            }
            spans[hole] = span
        }
        let bytes = writer.takeBytes()
        var result = RecordFieldWriter()
        result.reset(spareResult)
        result.reserve(bytes.count)
        result.append(RecordCodec.baseFormat)
        result.append(UInt8(0))
        writtenCount = 0
        holdsReferences = false
        for index in spans.indices {
            let span = spans[index]
            if index + 1 < spans.count && spans[index + 1].position == span.position { continue }  // replaced later
            guard span.end > span.start else { continue }  // null
            result.append(contentsOf: bytes[span.start..<span.end])
            writtenCount += 1
            if span.isReferences { holdsReferences = true }
        }
        spareResult = bytes  // the next disordered record's result buffer
        return finishedBytes(result.takeBytes())
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
    mutating func encode(_ value: String, forKey key: Key) throws { state.store(string: value, forKey: key.stringValue) }
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
