import StrataFormat
import StrataSchema

/// Writes the value records of journal operations — an update's changed attributes with their
/// old and new values, a delete's tombstone — straight from the stored records' bytes: fields
/// are compared and copied as bytes (tag and payload), never decoded into ``Value``s, and the
/// buffers are kept from operation to operation. The bytes are those `RecordCodec.encode(fields:)`
/// gives the values (the encoding is canonical; `RecordCodec.encodedValuesEqual` compares as
/// `Value`'s `==` does), so the journal is what decoding, comparing and encoding values gives.
///
/// Not thread-safe: its recorder's transaction's thread only.
struct HistoryValueEncoder {
    /// One entity's properties as the writer's bound version has them (ascending ids), each
    /// with the encoded value a read gives a record lacking it (nil: no value). A class: the
    /// defaults' bytes live in memory of its own, so they stay put while fields point at them.
    final class VisibleProperties {
        let ids: [UInt32]
        private let ranges: [Range<Int>]
        private let bytes: UnsafeMutableRawBufferPointer

        init(_ properties: [UInt32: Value]) {
            var writer = ByteWriter(capacity: 16)
            var ids: [UInt32] = [], ranges: [Range<Int>] = []
            for (id, value) in properties.sorted(by: { $0.key < $1.key }) {
                let start = writer.count
                if !value.isNull { value.append(to: &writer) }
                ids.append(id)
                ranges.append(start..<writer.count)
            }
            self.ids = ids
            self.ranges = ranges
            bytes = .allocate(byteCount: max(1, writer.count), alignment: 1)
            writer.bytes.withUnsafeBytes { bytes.copyMemory(from: $0) }
        }

        deinit { bytes.deallocate() }

        /// The encoded default (tag and payload) of the property at `index` of `ids`; nil: none.
        func absentValue(_ index: Int) -> UnsafeRawBufferPointer? {
            let range = ranges[index]
            return range.isEmpty ? nil : UnsafeRawBufferPointer(rebasing: bytes[range])
        }

        /// Where `property` is in `ids` (nil: not a property), searching from `cursor`, which
        /// moves past smaller ids: properties asked for in ascending order take one walk.
        @inline(__always)
        func index(of property: UInt32, from cursor: inout Int) -> Int? {
            while cursor < ids.count && ids[cursor] < property { cursor += 1 }
            return cursor < ids.count && ids[cursor] == property ? cursor : nil
        }
    }

    /// One record of values being written: its fields (id and value) without the header.
    private struct ValueRecord {
        var body: [UInt8] = []
        var count = 0
        var holdsReferences = false

        mutating func removeAll() {
            body.removeAll(keepingCapacity: true)
            count = 0
            holdsReferences = false
        }

        /// Adds the field `id` holding `value` (tag and payload); ids must come in ascending order.
        mutating func append(_ id: UInt32, _ value: UnsafeRawBufferPointer) {
            HistoryValueEncoder.appendVarint(UInt64(id), to: &body)
            body.append(contentsOf: value)
            count += 1
            if value.first == ValueTag.references.rawValue { holdsReferences = true }
        }

        /// Appends the record (format byte, field count, fields), length-prefixed, as
        /// `ByteWriter.appendLengthPrefixed` of `RecordCodec.encode(fields:)`'s bytes.
        func appendLengthPrefixed(to writer: inout [UInt8]) {
            HistoryValueEncoder.appendVarint(UInt64(1 + HistoryValueEncoder.varintSize(UInt64(count)) + body.count), to: &writer)
            writer.append(holdsReferences ? RecordCodec.referencesFormat : RecordCodec.baseFormat)
            HistoryValueEncoder.appendVarint(UInt64(count), to: &writer)
            writer.append(contentsOf: body)
        }
    }

    private var before: [RecordFieldBounds] = []
    private var after: [RecordFieldBounds] = []
    private var changed: [UInt32] = []
    private var old = ValueRecord()
    private var new = ValueRecord()
    /// The operation last built, ready to be appended to an entry part.
    private(set) var operation: [UInt8] = []

    /// Builds the update operation of record `id` (`HistoryCodec`'s operation 2) in
    /// `operation`: the properties whose value as a read sees it differs between `stored` and
    /// `written`, with their old and new values (`HistoryRecorder.visibleProperties` says how
    /// `visible` counts). Returns false, building nothing, when no property changed.
    ///
    /// - Throws: `FormatError` as `RecordCodec.decodeFields` throws for either record, the
    ///   stored one checked first.
    mutating func buildUpdate(entityID: UInt32, id: UInt64, stored: UnsafeRawBufferPointer, written: UnsafeRawBufferPointer,
                              visible: VisibleProperties?) throws(FormatError) -> Bool {
        try RecordCodec.fieldBounds(stored, into: &before)
        try RecordCodec.fieldBounds(written, into: &after)
        changed.removeAll(keepingCapacity: true)
        old.removeAll()
        new.removeAll()
        var i = 0, j = 0, k = 0
        while i < before.count || j < after.count {
            // The next property either record holds, and its value in each (nil: absent).
            let property: UInt32
            var oldValue: UnsafeRawBufferPointer?, newValue: UnsafeRawBufferPointer?
            if j == after.count || (i < before.count && before[i].id < after[j].id) {
                property = before[i].id
                oldValue = before[i].value(in: stored)
                i += 1
            } else if i == before.count || after[j].id < before[i].id {
                property = after[j].id
                newValue = after[j].value(in: written)
                j += 1
            } else {
                property = before[i].id
                oldValue = before[i].value(in: stored)
                newValue = after[j].value(in: written)
                i += 1
                j += 1
            }
            if let visible {
                guard let index = visible.index(of: property, from: &k) else { continue }  // not a property of the app's version
                if oldValue == nil { oldValue = visible.absentValue(index) }
                if newValue == nil { newValue = visible.absentValue(index) }
            }
            switch (oldValue, newValue) {
            case (nil, nil): continue
            case (let a?, let b?) where RecordCodec.encodedValuesEqual(a, b): continue
            default: break
            }
            changed.append(property)
            if let oldValue { old.append(property, oldValue) }
            if let newValue { new.append(property, newValue) }
        }
        guard !changed.isEmpty else { return false }
        operation.removeAll(keepingCapacity: true)
        operation.append(2)
        Self.appendVarint(UInt64(entityID), to: &operation)
        Self.appendVarint(id, to: &operation)
        Self.appendVarint(UInt64(changed.count), to: &operation)
        for property in changed { Self.appendVarint(UInt64(property), to: &operation) }
        old.appendLengthPrefixed(to: &operation)
        new.appendLengthPrefixed(to: &operation)
        return true
    }

    /// Builds the delete operation of record `id` (`HistoryCodec`'s operation 3) in
    /// `operation`, its tombstone holding the values of the attributes `kept` (ascending) as a
    /// read gives them: the stored value, else the default `visible` lists (none: left out).
    /// No attribute kept: an empty tombstone, and `stored` is not read.
    ///
    /// - Throws: `FormatError` as `RecordCodec.decodeFields` throws for `stored`.
    mutating func buildDelete(entityID: UInt32, id: UInt64, stored: UnsafeRawBufferPointer, kept: [UInt32],
                              visible: VisibleProperties?) throws(FormatError) {
        operation.removeAll(keepingCapacity: true)
        operation.append(3)
        Self.appendVarint(UInt64(entityID), to: &operation)
        Self.appendVarint(id, to: &operation)
        guard !kept.isEmpty else {
            operation.append(0)
            return
        }
        try RecordCodec.fieldBounds(stored, into: &before)
        old.removeAll()
        var i = 0, k = 0
        for property in kept {
            while i < before.count && before[i].id < property { i += 1 }
            if i < before.count && before[i].id == property {
                old.append(property, before[i].value(in: stored))
                continue
            }
            if let visible, let index = visible.index(of: property, from: &k), let value = visible.absentValue(index) {
                old.append(property, value)
            }
        }
        old.appendLengthPrefixed(to: &operation)
    }

    /// Appends `value` as `ByteWriter.appendVarint` does (unsigned LEB128, shortest form).
    @inline(__always)
    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// The bytes `appendVarint` writes for `value`.
    static func varintSize(_ value: UInt64) -> Int {
        var size = 1, rest = value
        while rest >= 0x80 { size += 1; rest >>= 7 }
        return size
    }
}
