#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat

/// What one `RecordEncoder.encode` call collects. A class because the encoder and its
/// containers (value types handed to user code) all write into it; used by one call on one
/// thread, never shared — and no access to a property overlaps another to the same one, so
/// the stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`: they
/// were ~6 % of encoding).
///
/// Encoding straight to bytes (`layout` set), each value is written to `scratch` as it comes
/// (its attribute id, then the value), and where it went is noted in its layout position's
/// slot (a later value of the same attribute replaces it; a null empties it). While the
/// attributes come in ascending id order — what a synthesized `encode(to:)` does when the
/// properties are declared in the order the catalog numbered them — the bytes written are the
/// record. Otherwise (a property added in a later version declared before older ones, a value
/// given twice) `finishedBytes()` copies the slots' bytes in position (= id) order: the bytes
/// `RecordCodec.encode(fields:)` makes, without sorting anything or building a `Value` list.
/// A value whose name has no id goes to `values`, to be reported as an unknown attribute
/// unless it ends up null. Encoding to names (`layout` nil), every value goes to `values`.
///
/// A data value of `splicedPayloadMinimum` bytes or more is not copied into `scratch`: its
/// field there ends with the payload's length, and the payload is kept by reference (the
/// caller's `Data` or array, in `payloads`) and copied once, into the finished record (not
/// first into a `Value`'s array, then into `scratch`, then out of it), or not at all when the
/// record is taken in pieces (`withPieces`). Its reference is dropped when the record's bytes
/// are taken or the state reset. Memory grown past `keptCapacity` for one large record is
/// given back at the next reset.
///
/// Names are looked up in the layout through the order the previous record of the state gave
/// them in (a type encodes its properties in the same order every time): the n-th name of a
/// record is first compared with the n-th of the previous one, one comparison of equal
/// strings instead of a scan.
final class RecordEncodingState {
    /// The record type; its name is formatted only for an error.
    private(set) var type: Any.Type
    var typeName: String { String(describing: type) }
    let layout: RecordLayout?
    /// `layout`, used per value without reference counting (`_withUnsafeGuaranteedRef`):
    /// binding the optional retained and released it at every value stored, and the state
    /// keeps `layout` alive.
    private let unmanagedLayout: Unmanaged<RecordLayout>?
    @exclusivity(unchecked) var values: [String: Value] = [:]
    /// The fields as they came, after `headerRoom` bytes kept for the record's header.
    @exclusivity(unchecked) private var scratch: RecordScratch
    /// The reordered record, when the fields did not come in order.
    @exclusivity(unchecked) private var reordered: RecordScratch
    /// Per layout position, where its value is in `scratch` (an empty range: none).
    private let slots: UnsafeMutablePointer<Slot>
    private let slotCount: Int
    /// Fields written, and whether one holds references or is a null field (valid while in
    /// order).
    @exclusivity(unchecked) private var writtenCount = 0
    @exclusivity(unchecked) private var holdsReferences = false
    @exclusivity(unchecked) private var holdsNulls = false
    /// The layout position of the last value stored (null ones included).
    @exclusivity(unchecked) private var lastPosition = -1
    /// Whether a value came out of ascending position order (or twice).
    @exclusivity(unchecked) private var disordered = false
    /// The layout position of each name given, in the order given (-1: not in the layout),
    /// by the previous record and, as far as it got, by this one.
    @exclusivity(unchecked) private var order: [Int] = []
    /// The number of names given so far in this record.
    @exclusivity(unchecked) private var given = 0

    /// Data payloads kept by reference (see the type's comment), in the order stored.
    @exclusivity(unchecked) private var payloads: [DataPayload] = []

    /// Bytes before the first field: room for the format byte and the longest field count.
    private static let headerRoom = 6
    /// Data payloads at least this long are kept by reference, not copied into `scratch`.
    static let splicedPayloadMinimum = 64 << 10
    /// Scratch memory kept from one record to the next; more, grown for a large record, is
    /// given back at the next reset.
    static let keptCapacity = 1 << 20

    private struct Slot {
        var start: Int
        var end: Int
        var isReferences: Bool
        /// A null field (`addNullFields`).
        var isNull = false
        /// The index in `payloads` of the payload that follows the field's bytes, or -1.
        var payload: Int = -1
        static let empty = Slot(start: 0, end: 0, isReferences: false)
    }

    /// The first structural problem, recorded where the `Encoder` API cannot throw
    /// (`unkeyedContainer()`, `nestedContainer`…) and thrown when `encode(to:)` returns.
    var failure: RecordCodingError?

    init(type: Any.Type, layout: RecordLayout? = nil) {
        self.type = type
        self.layout = layout
        unmanagedLayout = layout.map { Unmanaged.passUnretained($0) }
        slotCount = layout?.ids.count ?? 0
        slots = .allocate(capacity: max(slotCount, 1))
        slots.initialize(repeating: .empty, count: max(slotCount, 1))
        scratch = RecordScratch(capacity: layout.map { $0.estimatedRecordSize + Self.headerRoom } ?? 0)
        scratch.removeAll(keepingRoom: Self.headerRoom)
        reordered = RecordScratch(capacity: 0)
    }

    deinit {
        slots.deallocate()
        scratch.deallocate()
        reordered.deallocate()
    }

    /// Makes a state that encoded a record (with a layout) ready for the next one.
    func reset(type: Any.Type) {
        self.type = type
        if !values.isEmpty { values.removeAll(keepingCapacity: true) }
        if !payloads.isEmpty { payloads.removeAll(keepingCapacity: true) }
        if scratch.capacity > Self.keptCapacity {
            scratch.deallocate()
            scratch = RecordScratch(capacity: layout.map { $0.estimatedRecordSize + Self.headerRoom } ?? 0)
        }
        if reordered.capacity > Self.keptCapacity {
            reordered.deallocate()
            reordered = RecordScratch(capacity: 0)
        }
        scratch.removeAll(keepingRoom: Self.headerRoom)
        slots.update(repeating: .empty, count: slotCount)
        writtenCount = 0
        holdsReferences = false
        holdsNulls = false
        lastPosition = -1
        disordered = false
        given = 0
        failure = nil
    }

    /// The layout position of the attribute `name` (nil: the layout has none), noted as the
    /// position of the record's next name.
    @inline(__always)
    private func position(of name: String, in layout: RecordLayout) -> Int? {
        let index = given
        given += 1
        if index < order.count {
            let expected = order[index]
            if expected >= 0 && layout.names[expected] == name { return expected }
        }
        let position = layout.position(of: name)
        if index < order.count { order[index] = position ?? -1 } else { order.append(position ?? -1) }
        return position
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
        store(forKey: name, isNull: false, isReferences: false, value: .string(value)) { $0.append(string: value) }
    }

    /// Stores an integer: what `store(.int(value), forKey:)` stores, without the `Value`.
    @inline(__always)
    func store(int value: Int64, forKey name: String) {
        store(forKey: name, isNull: false, isReferences: false, value: .int(value)) { sink in
            sink.append(ValueTag.int.rawValue)
            sink.appendZigZag(value)
        }
    }

    /// Stores a Boolean: what `store(.bool(value), forKey:)` stores, without the `Value`.
    @inline(__always)
    func store(bool value: Bool, forKey name: String) {
        store(forKey: name, isNull: false, isReferences: false, value: .bool(value)) {
            $0.append(value ? ValueTag.true.rawValue : ValueTag.false.rawValue)
        }
    }

    /// Stores a floating-point number: what `store(.double(value), forKey:)` stores, without
    /// the `Value`.
    @inline(__always)
    func store(double value: Double, forKey name: String) {
        store(forKey: name, isNull: false, isReferences: false, value: .double(value)) { sink in
            sink.append(ValueTag.double.rawValue)
            sink.append(value.bitPattern)
        }
    }

    /// Stores a date: what `store(.date(value), forKey:)` stores, without the `Value`.
    @inline(__always)
    func store(date value: Date, forKey name: String) {
        store(forKey: name, isNull: false, isReferences: false, value: .date(value)) { sink in
            sink.append(ValueTag.date.rawValue)
            sink.append(value.timeIntervalSinceReferenceDate.bitPattern)
        }
    }

    /// Stores a data value (`Data` or `[UInt8]`): what `store(.data(bytes), forKey:)` stores,
    /// with no `[UInt8]` and no `Value` made; a large payload is kept by reference (see the
    /// type's comment).
    @inline(__always)
    func store(data payload: DataPayload, forKey name: String) {
        let count = payload.count
        let spliced = count >= Self.splicedPayloadMinimum
        store(forKey: name, isNull: false, isReferences: false, value: .data(payload.array), payload: spliced ? payload : nil) { sink in
            sink.append(ValueTag.data.rawValue)
            sink.appendVarint(UInt64(count))
            if !spliced { payload.withUnsafeBytes { sink.append(raw: $0) } }
        }
    }

    /// Stores any attribute value as `Codable` coding gives it: `Data` and `[UInt8]` through
    /// `store(data:forKey:)`, the rest converted by `ValueConversion`.
    /// - Throws: what `ValueConversion.value(of:attribute:)` throws.
    @inline(__always)
    func store<T: Encodable>(encodable value: T, forKey name: String) throws(RecordCodingError) {
        if T.self == Data.self { return store(data: .data(unsafeBitCast(value, to: Data.self)), forKey: name) }
        if T.self == [UInt8].self { return store(data: .bytes(unsafeBitCast(value, to: [UInt8].self)), forKey: name) }
        // The scalars `ValueConversion.value(of:attribute:)` tells by metatype, written straight.
        if T.self == String.self { return store(string: unsafeBitCast(value, to: String.self), forKey: name) }
        if T.self == Date.self { return store(date: unsafeBitCast(value, to: Date.self), forKey: name) }
        if T.self == Int.self { return store(int: Int64(unsafeBitCast(value, to: Int.self)), forKey: name) }
        if T.self == Double.self { return store(double: unsafeBitCast(value, to: Double.self), forKey: name) }
        if T.self == Bool.self { return store(bool: unsafeBitCast(value, to: Bool.self), forKey: name) }
        if T.self == Int64.self { return store(int: unsafeBitCast(value, to: Int64.self), forKey: name) }
        store(try ValueConversion.value(of: value, attribute: name), forKey: name)
    }

    /// Stores the value of the attribute `name`, which `write` appends (tag and payload)
    /// unless it is null; `value` is kept by name when the layout has no such attribute.
    /// `payload`, when given, follows what `write` appended (kept by reference).
    @inline(__always)
    private func store(forKey name: String, isNull: Bool, isReferences: Bool, value: @autoclosure () -> Value,
                       payload: DataPayload? = nil, _ write: (inout RecordScratch) -> Void) {
        guard let unmanagedLayout,
              let position = unmanagedLayout._withUnsafeGuaranteedRef({ position(of: name, in: $0) }) else {
            values[name] = value()
            return
        }
        if position <= lastPosition { disordered = true } else { lastPosition = position }
        if isNull {
            slots[position] = .empty
            return
        }
        let start = scratch.count
        scratch.appendVarint(UInt64(unmanagedLayout._withUnsafeGuaranteedRef { $0.ids[position] }))
        write(&scratch)
        slots[position] = Slot(start: start, end: scratch.count, isReferences: isReferences)
        if let payload {
            slots[position].payload = payloads.count
            payloads.append(payload)
        }
        writtenCount += 1
        if isReferences { holdsReferences = true }
    }

    /// Writes a null field for each optional attribute with a default that got no value
    /// (`RecordLayout.nullablePositions`), so it reads back as nil rather than its default.
    /// Nothing to do for nearly every layout, which has none. Called as the record is taken.
    @inline(__always)
    private func addNullFields() {
        guard let unmanagedLayout, unmanagedLayout._withUnsafeGuaranteedRef({ !$0.nullablePositions.isEmpty }) else { return }
        addNullFields(unmanagedLayout.takeUnretainedValue())
    }

    @inline(never)
    private func addNullFields(_ layout: RecordLayout) {
        for position in layout.nullablePositions where slots[position].end == slots[position].start {
            if position <= lastPosition { disordered = true } else { lastPosition = position }
            let start = scratch.count
            scratch.appendVarint(UInt64(layout.ids[position]))
            scratch.append(ValueTag.null.rawValue)
            slots[position] = Slot(start: start, end: scratch.count, isReferences: false, isNull: true)
            writtenCount += 1
            holdsNulls = true
        }
    }

    /// The record's bytes in the `RecordCodec` encoding (encoding with a layout), valid until
    /// the state is reset or freed; call once per record.
    func finishedBytes() -> UnsafeRawBufferPointer {
        addNullFields()
        let fieldsStart = Self.headerRoom
        guard disordered || !payloads.isEmpty else {
            // The fields are the record's: its header goes right before them.
            let start = Self.writeHeader(count: writtenCount, references: holdsReferences, nulls: holdsNulls, endingAt: fieldsStart, in: scratch)
            return UnsafeRawBufferPointer(rebasing: scratch.bytes[start...])
        }
        guard !payloads.isEmpty else { return reorderedFields() }
        let shape = assembledShape()
        reordered.removeAll()
        reordered.reserve(Self.headerRoom + shape.size)
        writeAssembled(shape, into: &reordered)
        return reordered.bytes
    }

    /// The record's bytes as an array (what `finishedBytes()` gives, written once: a large
    /// payload is copied from the caller's value straight into the array); call once.
    func encodedBytes() -> [UInt8] {
        addNullFields()
        guard !payloads.isEmpty else { return Array(finishedBytes().assumingMemoryBound(to: UInt8.self)) }
        let shape = assembledShape()
        var writer = RecordFieldWriter()
        writer.reserve(Self.headerRoom + shape.size)
        writeAssembled(shape, into: &writer)
        return writer.takeBytes()
    }

    /// Whether the record holds payloads kept by reference: `withPieces` then gives it without
    /// copying them.
    var hasPayloads: Bool { !payloads.isEmpty }

    /// Calls `body` with the record's bytes (those `finishedBytes()` would give) as consecutive
    /// pieces, valid during the call: the header and fields from the state's memory, and
    /// between them each payload kept by reference as the caller's value holds it — not
    /// copied. Call once per record, instead of `finishedBytes()`.
    func withPieces(_ body: ([UnsafeRawBufferPointer]) throws -> Void) rethrows {
        addNullFields()
        let shape = assembledShape()
        // Everything but the payloads, in order, into `reordered`; `splits` notes where each
        // payload goes between its bytes.
        var splits: [(offset: Int, payload: Int)] = []
        reordered.removeAll()
        reordered.reserve(Self.headerRoom + shape.size - shape.payloadBytes)
        reordered.append(RecordCodec.format(references: shape.references, nulls: shape.nulls))
        reordered.appendVarint(UInt64(shape.count))
        let fields = scratch.bytes
        for position in 0..<slotCount where slots[position].end > slots[position].start {
            let slot = slots[position]
            reordered.append(raw: UnsafeRawBufferPointer(rebasing: fields[slot.start..<slot.end]))
            if slot.payload >= 0 { splits.append((reordered.count, slot.payload)) }
        }
        let framing = reordered.bytes
        // Each payload's bytes are valid only inside its `withUnsafeBytes`: nested, one per payload.
        func withPayloads(from index: Int, _ pointers: inout [UnsafeRawBufferPointer]) throws {
            guard index < splits.count else {
                var pieces: [UnsafeRawBufferPointer] = []
                var start = 0
                for (split, pointer) in zip(splits, pointers) {
                    pieces.append(UnsafeRawBufferPointer(rebasing: framing[start..<split.offset]))
                    pieces.append(pointer)
                    start = split.offset
                }
                pieces.append(UnsafeRawBufferPointer(rebasing: framing[start...]))
                return try body(pieces.filter { !$0.isEmpty })
            }
            try payloads[splits[index].payload].withUnsafeBytes { pointer in
                pointers.append(pointer)
                try withPayloads(from: index + 1, &pointers)
            }
        }
        var pointers: [UnsafeRawBufferPointer] = []
        defer {
            for position in 0..<slotCount { slots[position].payload = -1 }
            payloads.removeAll()
        }
        try withPayloads(from: 0, &pointers)
    }

    /// The fields to assemble: in ascending position (= id) order, the last value of each;
    /// `size` counts their bytes and payloads (`payloadBytes` of them), not the header.
    private func assembledShape() -> (count: Int, references: Bool, nulls: Bool, size: Int, payloadBytes: Int) {
        var count = 0, references = false, nulls = false, size = 0, payloadBytes = 0
        for position in 0..<slotCount where slots[position].end > slots[position].start {
            let slot = slots[position]
            count += 1
            size += slot.end - slot.start
            if slot.payload >= 0 { payloadBytes += payloads[slot.payload].count }
            if slot.isReferences { references = true }
            if slot.isNull { nulls = true }
        }
        return (count, references, nulls, size + payloadBytes, payloadBytes)
    }

    /// Writes the record — header, then each field of `shape` with its payload — into `sink`,
    /// and drops the payloads' references (each is copied once).
    private func writeAssembled<Sink: RecordByteSink>(_ shape: (count: Int, references: Bool, nulls: Bool, size: Int, payloadBytes: Int),
                                                      into sink: inout Sink) {
        sink.append(RecordCodec.format(references: shape.references, nulls: shape.nulls))
        sink.appendVarint(UInt64(shape.count))
        let fields = scratch.bytes
        for position in 0..<slotCount where slots[position].end > slots[position].start {
            let slot = slots[position]
            sink.append(raw: UnsafeRawBufferPointer(rebasing: fields[slot.start..<slot.end]))
            if slot.payload >= 0 { payloads[slot.payload].withUnsafeBytes { sink.append(raw: $0) } }
            slots[position].payload = -1
        }
        payloads.removeAll()
    }

    /// The record, its fields out of order and no payload kept by reference: the fields
    /// copied into `reordered` in position (= id) order, one pass, after room for the header,
    /// which is written last (what `writeAssembled` writes, without its shape pass or payloads).
    private func reorderedFields() -> UnsafeRawBufferPointer {
        reordered.removeAll(keepingRoom: Self.headerRoom)
        reordered.reserve(scratch.count)  // the fields are a part of the scratch's bytes
        let fields = scratch.base
        var count = 0, references = false, nulls = false
        for position in 0..<slotCount {
            let slot = slots[position]
            guard slot.end > slot.start else { continue }
            reordered.append(raw: UnsafeRawBufferPointer(start: fields + slot.start, count: slot.end - slot.start))
            count += 1
            if slot.isReferences { references = true }
            if slot.isNull { nulls = true }
        }
        let start = Self.writeHeader(count: count, references: references, nulls: nulls, endingAt: Self.headerRoom, in: reordered)
        return UnsafeRawBufferPointer(rebasing: reordered.bytes[start...])
    }

    /// Writes the record header (format byte, field count) into the room kept for it in
    /// `buffer` so that it ends at `end`; returns where it starts.
    private static func writeHeader(count: Int, references: Bool, nulls: Bool, endingAt end: Int, in buffer: RecordScratch) -> Int {
        let start = end - 1 - RecordScratch.varintLength(UInt64(count))
        var header = buffer.overwriting(at: start)
        header.append(RecordCodec.format(references: references, nulls: nulls))
        header.appendVarint(UInt64(count))
        return start
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
        try state.store(encodable: value, forKey: key.stringValue)
    }

    // The concrete overloads synthesized conformances call: no generic conversion.
    mutating func encode(_ value: String, forKey key: Key) throws { state.store(string: value, forKey: key.stringValue) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { state.store(bool: value, forKey: key.stringValue) }
    mutating func encode(_ value: Double, forKey key: Key) throws { state.store(double: value, forKey: key.stringValue) }
    mutating func encode(_ value: Float, forKey key: Key) throws { state.store(double: Double(value), forKey: key.stringValue) }
    mutating func encode(_ value: Int, forKey key: Key) throws { state.store(int: Int64(value), forKey: key.stringValue) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { state.store(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { state.store(int: value, forKey: key.stringValue) }
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

/// A data value stored by `RecordEncodingState.store(data:forKey:)`, as the caller gave it.
enum DataPayload {
    case data(Data)
    case bytes([UInt8])

    /// Its length in bytes.
    var count: Int {
        switch self {
        case .data(let data): data.count
        case .bytes(let bytes): bytes.count
        }
    }

    /// Its bytes as an array (a copy for `Data`): only for a value kept by name.
    var array: [UInt8] {
        switch self {
        case .data(let data): [UInt8](data)
        case .bytes(let bytes): bytes
        }
    }

    /// Calls `body` with its bytes, valid during the call.
    @inline(__always)
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch self {
        case .data(let data): try data.withUnsafeBytes(body)
        case .bytes(let bytes): try bytes.withUnsafeBytes(body)
        }
    }
}
