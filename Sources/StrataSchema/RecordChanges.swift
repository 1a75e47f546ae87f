import StrataFormat

/// The values an entity's records read as where they lack a property: per property of one
/// schema version (ascending ids), its default's encoding (tag and payload), or none. The
/// bytes live in memory of the instance's own, so they stay put while fields point at them.
/// Immutable (its bytes are written by `init` and only read after), so it is shared across
/// threads: a store makes one per entity when it binds its schema, for every transaction's
/// journal.
package final class RecordDefaults: @unchecked Sendable {
    private let ids: [UInt32]
    private let ranges: [Range<Int>]
    private let bytes: UnsafeMutableRawBufferPointer
    /// Which ids below 128 are properties: bit `id & 63` of word `id >> 6`.
    private let lowIDs: (UInt64, UInt64)

    /// Property id → the value a read gives a record lacking it (`.null`: none).
    package init(_ properties: [UInt32: Value]) {
        var writer = ByteWriter(capacity: 16)
        var ids: [UInt32] = [], ranges: [Range<Int>] = []
        for (id, value) in properties.sorted(by: { $0.key < $1.key }) {
            let start = writer.count
            if !value.isNull { writer.append(value) }
            ids.append(id)
            ranges.append(start..<writer.count)
        }
        self.ids = ids
        self.ranges = ranges
        var lowIDs: (UInt64, UInt64) = (0, 0)
        for id in ids where id < 128 {
            if id < 64 { lowIDs.0 |= 1 << UInt64(id) } else { lowIDs.1 |= 1 << UInt64(id - 64) }
        }
        self.lowIDs = lowIDs
        bytes = .allocate(byteCount: max(1, writer.count), alignment: 1)
        writer.bytes.withUnsafeBytes { bytes.copyMemory(from: $0) }
    }

    deinit { bytes.deallocate() }

    /// Where `property` is among the properties (nil: not one), searching from `cursor`, which
    /// moves past smaller ids: properties asked for in ascending order take one walk.
    @inline(__always)
    func index(of property: UInt32, from cursor: inout Int) -> Int? {
        while cursor < ids.count && ids[cursor] < property { cursor += 1 }
        return cursor < ids.count && ids[cursor] == property ? cursor : nil
    }

    /// Whether `id` (below 128) is among the properties.
    @inline(__always)
    func containsLow(_ id: UInt8) -> Bool {
        let word = id < 64 ? lowIDs.0 : lowIDs.1
        return (word >> UInt64(id & 63)) & 1 != 0
    }

    /// The encoded default (tag and payload) of the property at `index`; nil: none.
    @inline(__always)
    func value(at index: Int) -> UnsafeRawBufferPointer? {
        let range = ranges[index]
        return range.isEmpty ? nil : UnsafeRawBufferPointer(rebasing: bytes[range])
    }
}

/// What changed between two encodings of one record, as the history journal keeps it: the
/// properties whose values differ, and records (``RecordCodec`` encoding) of their old and of
/// their new values; and a record's tombstone (some of its values). Built from the records'
/// bytes: fields are compared and copied as bytes (tag and payload), never decoded into
/// ``Value``s — the result is byte for byte what decoding, comparing values with `==` and
/// `RecordCodec.encode(fields:)` give (the encoding is canonical; strings that differ in bytes
/// are compared as Swift strings, ``RecordCodec/encodedValuesEqual(_:_:)``).
///
/// Keeps its memory from one use to the next; what it returns is valid until the next call,
/// and a comparison's values point into the records it compared (and the defaults): they
/// are read by ``updateBodySize`` and ``writeUpdateBody(to:)`` while those are alive.
/// Not thread-safe: one thread at a time.
package final class RecordChanges {
    /// One changed property: its id, and where its old and its new value (tag and payload)
    /// are — in the stored record, the written one or the defaults; no start: no value.
    private struct Change {
        var id: UInt32
        var old: UnsafeRawBufferPointer
        var new: UnsafeRawBufferPointer
    }

    /// The values of one side (old or new) of the changes, as their record holds them.
    private struct Side {
        /// How many changes have a value on this side.
        var count = 0
        /// The bytes of those fields: ids and values.
        var fieldBytes = 0
        var holdsReferences = false
        var holdsNulls = false

        @inline(__always)
        mutating func add(_ id: UInt32, _ value: UnsafeRawBufferPointer) {
            guard let start = value.baseAddress else { return }
            count &+= 1
            fieldBytes &+= RecordScratch.varintLength(UInt64(id)) &+ value.count
            let tag = start.load(as: UInt8.self)
            if tag == ValueTag.references.rawValue { holdsReferences = true }
            if tag == ValueTag.null.rawValue { holdsNulls = true }
        }

        /// The record's format byte.
        var format: UInt8 { RecordCodec.format(references: holdsReferences, nulls: holdsNulls) }

        /// The length of the record: format, count, fields.
        var recordLength: Int { 1 &+ RecordScratch.varintLength(UInt64(count)) &+ fieldBytes }
    }

    // Unchecked: one thread at a time (see above), and touched for every field compared —
    // the dynamic exclusivity checks were a quarter of `compare`.
    /// What the last ``compare(stored:written:defaults:)`` found, ascending by id.
    @exclusivity(unchecked) private var changes = ScratchList<Change>()
    /// The bytes of the changed ids' varints.
    @exclusivity(unchecked) private var idBytes = 0
    @exclusivity(unchecked) private var oldSide = Side()
    @exclusivity(unchecked) private var newSide = Side()
    /// The tombstone being built.
    @exclusivity(unchecked) private var tombstoneRecord = RecordBuilder()

    package init() {}

    deinit {
        changes.deallocate()
        tombstoneRecord.deallocate()
    }

    /// The ids of the properties that changed (ascending), as the last ``compare(stored:written:defaults:)`` found.
    package var changedIDs: [UInt32] { changes.elements.map(\.id) }
    /// A record of the changed properties' old values (those that had one).
    package var oldValues: [UInt8] { record(old: true) }
    /// A record of the changed properties' new values (those that have one).
    package var newValues: [UInt8] { record(old: false) }

    /// Forgets the last comparison's changes.
    @inline(__always)
    private func removeAll() {
        changes.removeAll()
        idBytes = 0
        oldSide = Side()
        newSide = Side()
    }

    /// Adds a changed property with its old and new values (no start: none).
    @inline(__always)
    private func add(_ id: UInt32, old oldValue: UnsafeRawBufferPointer, new newValue: UnsafeRawBufferPointer) {
        changes.append(Change(id: id, old: oldValue, new: newValue))
        idBytes &+= RecordScratch.varintLength(UInt64(id))
        oldSide.add(id, oldValue)
        newSide.add(id, newValue)
    }

    /// The body of the journal's update operation (Docs/FileFormat.md, "History journal")
    /// after its entity and record id, for the last comparison: the changed count, the changed
    /// ids, then the records of the old and of the new values, each after its length.
    /// ``writeUpdateBody(to:)`` writes exactly this many bytes.
    package var updateBodySize: Int {
        let oldLength = oldSide.recordLength, newLength = newSide.recordLength
        return RecordScratch.varintLength(UInt64(changes.count)) &+ idBytes
            &+ RecordScratch.varintLength(UInt64(oldLength)) &+ oldLength
            &+ RecordScratch.varintLength(UInt64(newLength)) &+ newLength
    }

    /// Writes the update body (``updateBodySize`` bytes) at `pointer`.
    package func writeUpdateBody(to pointer: UnsafeMutableRawPointer) {
        let elements = changes.elements
        var end = Self.put(varint: UInt64(elements.count), at: pointer)
        for change in elements { end = Self.put(varint: UInt64(change.id), at: end) }
        end = Self.put(varint: UInt64(oldSide.recordLength), at: end)
        end = Self.putRecord(elements, old: true, format: oldSide.format, count: oldSide.count, at: end)
        end = Self.put(varint: UInt64(newSide.recordLength), at: end)
        _ = Self.putRecord(elements, old: false, format: newSide.format, count: newSide.count, at: end)
    }

    /// Writes the record of the changes' old (or new) values, those that have one (a null
    /// field included): the format, the count, the fields; returns where it ends.
    @inline(__always)
    private static func putRecord(_ elements: UnsafeBufferPointer<Change>, old isOld: Bool, format: UInt8, count: Int,
                                  at start: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        start.storeBytes(of: format, as: UInt8.self)
        var end = put(varint: UInt64(count), at: start + 1)
        for change in elements {
            let value = isOld ? change.old : change.new
            guard let source = value.baseAddress else { continue }
            end = put(varint: UInt64(change.id), at: end)
            end = put(short: source, count: value.count, at: end)
        }
        return end
    }

    /// Writes `value` as a varint at `start`; returns where it ends.
    @inline(__always)
    private static func put(varint value: UInt64, at start: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        guard value >= 0x80 else {
            start.storeBytes(of: UInt8(truncatingIfNeeded: value), as: UInt8.self)
            return start + 1
        }
        var sink = RecordScratch.Overwriting(base: start, offset: 0)
        sink.appendVarint(value)
        return start + sink.offset
    }

    /// Copies `count` bytes (likely few: an encoded value) from `source` to `start`; returns
    /// where they end.
    @inline(__always)
    private static func put(short source: UnsafeRawPointer, count: Int, at start: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        var sink = RecordScratch.Overwriting(base: start, offset: 0)
        sink.appendShort(UnsafeRawBufferPointer(start: source, count: count))
        return start + count
    }

    /// The record of the changes' old (or new) values, in an array.
    private func record(old isOld: Bool) -> [UInt8] {
        let side = isOld ? oldSide : newSide
        return [UInt8](unsafeUninitializedCapacity: side.recordLength) { buffer, count in
            guard let base = buffer.baseAddress else { return }
            let start = UnsafeMutableRawPointer(base)
            let end = Self.putRecord(changes.elements, old: isOld, format: side.format, count: side.count, at: start)
            count = end - start
        }
    }

    /// Compares record `stored` with `written`, property by property, as a read sees them:
    /// with `defaults`, a property either lacks reads as its default, and a property that is
    /// not among them (an attribute the schema version does not have) is no change; without,
    /// fields are compared as stored (absent: no value). Returns whether any changed; then
    /// ``changedIDs``, ``oldValues`` and ``newValues`` say how, and ``writeUpdateBody(to:)``
    /// writes it for the journal.
    ///
    /// - Throws: `FormatError` as `RecordCodec.decodeFields` throws for either record, the
    ///   stored one checked first.
    package func compare(stored: UnsafeRawBufferPointer, written: UnsafeRawBufferPointer, defaults: RecordDefaults?) throws(FormatError) -> Bool {
        // Two plain records of the same properties (nearly every update) side by side; any
        // other pair of plain records by plain reads; any other pair again from the start by
        // the reader's, which give the same answer or the error.
        if let changed = compareAligned(stored, written, defaults) { return changed }
        do throws(FormatError) { return try compare(stored, written, defaults, walking: PlainFieldWalk.self) } catch {}
        return try compare(stored, written, defaults, walking: CarefulFieldWalk.self)
    }

    /// `compare` of two plain records (`PlainFieldWalk`) that hold the same attribute ids —
    /// each field beside its counterpart, with the plain walk's checks; nil for any other pair,
    /// malformed ones included (then nothing it found counts). Both records hold every property
    /// they compare, so defaults only tell which ids are properties.
    @inline(never)
    func compareAligned(_ stored: UnsafeRawBufferPointer, _ written: UnsafeRawBufferPointer, _ defaults: RecordDefaults?) -> Bool? {
        removeAll()
        let storedEnd = stored.count, writtenEnd = written.count
        guard storedEnd >= 2, writtenEnd >= 2, let old = stored.baseAddress, let new = written.baseAddress else { return nil }
        let count = old.load(fromByteOffset: 1, as: UInt8.self)
        guard old.load(as: UInt8.self) == RecordCodec.baseFormat, new.load(as: UInt8.self) == RecordCodec.baseFormat,
              count < 0x80, new.load(fromByteOffset: 1, as: UInt8.self) == count else { return nil }
        // `least`: the smallest id the next field may have (ids ascend; the first may be 0).
        var oldPosition = 2, newPosition = 2, least: UInt8 = 0, left = count
        // The changed values' bytes (tags and payloads) on each side.
        var oldBytes = 0, newBytes = 0
        while left != 0 {
            left &-= 1
            guard storedEnd &- oldPosition >= 2, writtenEnd &- newPosition >= 2 else { return nil }
            let id = old.load(fromByteOffset: oldPosition, as: UInt8.self)
            let oldTag = old.load(fromByteOffset: oldPosition &+ 1, as: UInt8.self)
            let newTag = new.load(fromByteOffset: newPosition &+ 1, as: UInt8.self)
            guard id < 0x80, id >= least, id == new.load(fromByteOffset: newPosition, as: UInt8.self),
                  let (oldNext, oldASCII) = Self.plainValueEnd(old, end: storedEnd, tag: oldTag, at: oldPosition &+ 2),
                  let (newNext, newASCII) = Self.plainValueEnd(new, end: writtenEnd, tag: newTag, at: newPosition &+ 2) else { return nil }
            least = id &+ 1
            let oldValue = UnsafeRawBufferPointer(start: old + (oldPosition &+ 1), count: oldNext &- oldPosition &- 1)
            let newValue = UnsafeRawBufferPointer(start: new + (newPosition &+ 1), count: newNext &- newPosition &- 1)
            oldPosition = oldNext
            newPosition = newNext
            if oldValue.count == newValue.count && RecordCodec.bytesEqual(oldValue, newValue) { continue }
            // Different bytes: a different value, unless both are strings, one of them not
            // ASCII, that Swift compares equal.
            if oldTag == ValueTag.string.rawValue, newTag == oldTag, !(oldASCII && newASCII),
               RecordCodec.encodedValuesEqual(oldValue, newValue) { continue }
            if let defaults, !defaults.containsLow(id) { continue }  // not a property of the version
            changes.append(Change(id: UInt32(id), old: oldValue, new: newValue))
            oldBytes &+= oldValue.count
            newBytes &+= newValue.count
        }
        guard oldPosition == storedEnd, newPosition == writtenEnd else { return nil }
        // Every change has a value on both sides, none holding references (plain values), and
        // an id of one byte.
        let changed = changes.count
        guard changed > 0 else { return false }
        idBytes = changed
        oldSide = Side(count: changed, fieldBytes: changed &+ oldBytes, holdsReferences: false)
        newSide = Side(count: changed, fieldBytes: changed &+ newBytes, holdsReferences: false)
        return true
    }

    /// `RecordCodec.plainValue` for `compareAligned`, which needs only where the value ends:
    /// the offset past a plain value whose tag `tag` was read and whose payload starts at
    /// `start`, and whether it is ASCII (a string whose bytes all are, or any other kind); nil
    /// for a value that is not plain (null, references, unknown tags, anything malformed).
    // `@inline(always)`: with `__always`, Swift 6.3 found the call "not profitable to inline"
    // (-Rpass-missed=sil-inliner) and called it twice per field.
    @inline(always)
    private static func plainValueEnd(_ base: UnsafeRawPointer, end: Int, tag: UInt8, at start: Int) -> (end: Int, ascii: Bool)? {
        // Offsets stay within the buffer plus 2 (lengths are checked against what is left).
        switch tag {
        case ValueTag.false.rawValue, ValueTag.true.rawValue:
            return (start, true)
        case ValueTag.int.rawValue:
            guard let (_, next) = RecordCodec.plainVarint(base, end: end, at: start) else { return nil }
            return (next, true)
        case ValueTag.double.rawValue, ValueTag.date.rawValue:
            return end &- start >= 8 ? (start &+ 8, true) : nil
        case ValueTag.uuid.rawValue:
            return end &- start >= 16 ? (start &+ 16, true) : nil
        case ValueTag.string.rawValue, ValueTag.data.rawValue, ValueTag.codable.rawValue:
            guard let (length, bytesStart) = RecordCodec.plainVarint(base, end: end, at: start), length <= UInt64(end &- bytesStart) else { return nil }
            let next = bytesStart &+ Int(length)
            guard tag == ValueTag.string.rawValue else { return (next, true) }
            let bytes = UnsafeRawBufferPointer(start: base + bytesStart, count: Int(length)).bindMemory(to: UInt8.self)
            if RecordFieldReader.isASCII(bytes) { return (next, true) }
            return RecordFieldReader.isValidUTF8(bytes) ? (next, false) : nil
        default:
            return nil
        }
    }

    @inline(__always)
    func compare<Walk: RecordFieldWalking>(_ stored: UnsafeRawBufferPointer, _ written: UnsafeRawBufferPointer,
                                                   _ defaults: RecordDefaults?, walking: Walk.Type) throws(FormatError) -> Bool {
        removeAll()
        // Both records walked side by side, each field checked as decoding checks it (the
        // stored record is input from disk; the written one is checked as it was before).
        var before = Walk(walking: stored), after = Walk(walking: written)
        var hasBefore = try before.advance(), hasAfter = try Self.next(&after, storedFirst: &before)
        var k = 0
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        while hasBefore || hasAfter {
            // The next property either record holds, and its value in each (nil: absent).
            let property: UInt32
            var oldValue: UnsafeRawBufferPointer?, newValue: UnsafeRawBufferPointer?
            if !hasAfter || (hasBefore && before.id < after.id) {
                property = before.id
                oldValue = before.value(in: stored)
                hasBefore = try before.advance()
            } else if !hasBefore || after.id < before.id {
                property = after.id
                newValue = after.value(in: written)
                hasAfter = try Self.next(&after, storedFirst: &before)
            } else {
                property = before.id
                oldValue = before.value(in: stored)
                newValue = after.value(in: written)
                hasBefore = try before.advance()
                hasAfter = try Self.next(&after, storedFirst: &before)
            }
            if let defaults {
                guard let index = defaults.index(of: property, from: &k) else { continue }  // not a property of the version
                if oldValue == nil { oldValue = defaults.value(at: index) }
                if newValue == nil { newValue = defaults.value(at: index) }
            }
            switch (oldValue, newValue) {
            case (nil, nil): continue
            case (let a?, let b?) where RecordCodec.encodedValuesEqual(a, b): continue
            default: break
            }
            add(property, old: oldValue ?? none, new: newValue ?? none)
        }
        return changes.count > 0
    }

    /// `after.advance()`; when the written record is malformed, the rest of the stored one is
    /// checked first, and its error thrown if it has one.
    @inline(__always)
    private static func next<Walk: RecordFieldWalking>(_ after: inout Walk, storedFirst before: inout Walk) throws(FormatError) -> Bool {
        do { return try after.advance() } catch { throw try storedErrorFirst(error, &before) }
    }

    /// The error to throw for a malformed written record: the stored record's (walked to its
    /// end) if it has one, else `error`.
    @inline(never)
    private static func storedErrorFirst<Walk: RecordFieldWalking>(_ error: FormatError, _ before: inout Walk) throws(FormatError) -> FormatError {
        while try before.advance() {}
        return error
    }

    /// A record of the values of the properties `kept` (ascending) that record `stored` has
    /// as a read gives them: its own, else the default `defaults` lists (none: left out).
    ///
    /// - Throws: `FormatError` as `RecordCodec.decodeFields` throws for `stored`.
    package func tombstone(stored: UnsafeRawBufferPointer, kept: [UInt32], defaults: RecordDefaults?) throws(FormatError) -> UnsafeRawBufferPointer {
        // As `compare`: a plain record by plain reads, any other by the reader's.
        do throws(FormatError) { return try tombstone(stored, kept, defaults, walking: PlainFieldWalk.self) } catch {}
        return try tombstone(stored, kept, defaults, walking: CarefulFieldWalk.self)
    }

    @inline(__always)
    func tombstone<Walk: RecordFieldWalking>(_ stored: UnsafeRawBufferPointer, _ kept: [UInt32], _ defaults: RecordDefaults?,
                                                     walking: Walk.Type) throws(FormatError) -> UnsafeRawBufferPointer {
        tombstoneRecord.removeAll()
        var walk = Walk(walking: stored)
        var hasField = try walk.advance()
        var k = 0
        for property in kept {
            while hasField && walk.id < property { hasField = try walk.advance() }
            if hasField && walk.id == property {
                tombstoneRecord.append(property, walk.value(in: stored))
            } else if let defaults, let index = defaults.index(of: property, from: &k), let value = defaults.value(at: index) {
                tombstoneRecord.append(property, value)
            }
        }
        while hasField { hasField = try walk.advance() }  // the rest is checked too
        tombstoneRecord.finish()
        return tombstoneRecord.record
    }

    /// A list of plain values (no references, nothing to deinitialize) in memory kept from use
    /// to use: an append checks the room left, with no uniqueness check or reference counting
    /// (as `RecordScratch` for bytes). Freed by its owner (`deallocate()`).
    private struct ScratchList<Element> {
        private var base: UnsafeMutablePointer<Element>
        private var capacity = 16
        private(set) var count = 0

        init() { base = .allocate(capacity: capacity) }

        func deallocate() { base.deallocate() }

        subscript(index: Int) -> Element { base[index] }

        /// The elements appended, valid until the next change.
        var elements: UnsafeBufferPointer<Element> { UnsafeBufferPointer(start: base, count: count) }

        mutating func removeAll() { count = 0 }

        @inline(__always)
        mutating func append(_ element: Element) {
            if count == capacity { grow() }
            (base + count).initialize(to: element)
            count += 1
        }

        private mutating func grow() {
            let larger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
            larger.moveInitialize(from: base, count: count)
            base.deallocate()
            base = larger
            capacity *= 2
        }
    }

    /// A record being written: the fields after room for the longest header, which `finish`
    /// writes just before them.
    private struct RecordBuilder {
        /// A format byte and a count of up to 2^35.
        static let headerRoom = 6
        private var scratch = RecordScratch(capacity: 256)
        private var count = 0
        private var holdsReferences = false
        private var holdsNulls = false
        private var start = 0

        func deallocate() { scratch.deallocate() }

        mutating func removeAll() {
            scratch.removeAll()
            scratch.reserve(Self.headerRoom)
            scratch.setCount(Self.headerRoom)
            count = 0
            holdsReferences = false
            holdsNulls = false
        }

        /// Adds the field `id` holding `value` (tag and payload); ids must come in ascending order.
        @inline(__always)
        mutating func append(_ id: UInt32, _ value: UnsafeRawBufferPointer) {
            scratch.appendVarint(UInt64(id))
            scratch.append(raw: value)
            count += 1
            if value.first == ValueTag.references.rawValue { holdsReferences = true }
            if value.first == ValueTag.null.rawValue { holdsNulls = true }
        }

        /// Writes the header: the format (the lowest that holds the fields) and the count.
        mutating func finish() {
            start = Self.headerRoom - 1 - RecordScratch.varintLength(UInt64(count))
            var header = scratch.overwriting(at: start)
            header.append(RecordCodec.format(references: holdsReferences, nulls: holdsNulls))
            header.appendVarint(UInt64(count))
        }

        /// The record `finish` completed.
        var record: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: scratch.bytes[start...]) }
    }
}
