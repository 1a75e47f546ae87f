import StrataFormat

/// The values an entity's records read as where they lack a property: per property of one
/// schema version (ascending ids), its default's encoding (tag and payload), or none. The
/// bytes live in memory of the instance's own, so they stay put while fields point at them.
/// Immutable; not `Sendable` only because nothing needs it to be.
package final class RecordDefaults {
    private let ids: [UInt32]
    private let ranges: [Range<Int>]
    private let bytes: UnsafeMutableRawBufferPointer

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
/// Keeps its memory from one use to the next; what it returns is valid until the next call.
/// Not thread-safe: one thread at a time.
package final class RecordChanges {
    // Unchecked: one thread at a time (see above), and touched for every field compared —
    // the dynamic exclusivity checks were a quarter of `compare`.
    /// The changed property ids.
    @exclusivity(unchecked) private var changed = ScratchList<UInt32>()
    @exclusivity(unchecked) private var old = RecordBuilder()
    @exclusivity(unchecked) private var new = RecordBuilder()

    package init() {}

    deinit {
        changed.deallocate()
        old.deallocate()
        new.deallocate()
    }

    /// The ids of the properties that changed (ascending), as the last ``compare(stored:written:defaults:)`` found.
    package var changedIDs: UnsafeBufferPointer<UInt32> { changed.elements }
    /// A record of the changed properties' old values (those that had one).
    package var oldValues: UnsafeRawBufferPointer { old.record }
    /// A record of the changed properties' new values (those that have one).
    package var newValues: UnsafeRawBufferPointer { new.record }

    /// Compares record `stored` with `written`, property by property, as a read sees them:
    /// with `defaults`, a property either lacks reads as its default, and a property that is
    /// not among them (an attribute the schema version does not have) is no change; without,
    /// fields are compared as stored (absent: no value). Returns whether any changed; then
    /// ``changedIDs``, ``oldValues`` and ``newValues`` say how.
    ///
    /// - Throws: `FormatError` as `RecordCodec.decodeFields` throws for either record, the
    ///   stored one checked first.
    package func compare(stored: UnsafeRawBufferPointer, written: UnsafeRawBufferPointer, defaults: RecordDefaults?) throws(FormatError) -> Bool {
        // Plain records (nearly all) by plain reads; any other pair again from the start by
        // the reader's, which give the same answer or the error.
        do throws(FormatError) { return try compare(stored, written, defaults, walking: PlainFieldWalk.self) } catch {}
        return try compare(stored, written, defaults, walking: CarefulFieldWalk.self)
    }

    @inline(__always)
    func compare<Walk: RecordFieldWalking>(_ stored: UnsafeRawBufferPointer, _ written: UnsafeRawBufferPointer,
                                                   _ defaults: RecordDefaults?, walking: Walk.Type) throws(FormatError) -> Bool {
        changed.removeAll()
        old.removeAll()
        new.removeAll()
        // Both records walked side by side, each field checked as decoding checks it (the
        // stored record is input from disk; the written one is checked as it was before).
        var before = Walk(walking: stored), after = Walk(walking: written)
        var hasBefore = try before.advance(), hasAfter = try Self.next(&after, storedFirst: &before)
        var k = 0
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
            changed.append(property)
            if let oldValue { old.append(property, oldValue) }
            if let newValue { new.append(property, newValue) }
        }
        old.finish()
        new.finish()
        return changed.count > 0
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
        old.removeAll()
        var walk = Walk(walking: stored)
        var hasField = try walk.advance()
        var k = 0
        for property in kept {
            while hasField && walk.id < property { hasField = try walk.advance() }
            if hasField && walk.id == property {
                old.append(property, walk.value(in: stored))
            } else if let defaults, let index = defaults.index(of: property, from: &k), let value = defaults.value(at: index) {
                old.append(property, value)
            }
        }
        while hasField { hasField = try walk.advance() }  // the rest is checked too
        old.finish()
        return old.record
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
        private var start = 0

        func deallocate() { scratch.deallocate() }

        mutating func removeAll() {
            scratch.removeAll()
            scratch.reserve(Self.headerRoom)
            scratch.setCount(Self.headerRoom)
            count = 0
            holdsReferences = false
        }

        /// Adds the field `id` holding `value` (tag and payload); ids must come in ascending order.
        @inline(__always)
        mutating func append(_ id: UInt32, _ value: UnsafeRawBufferPointer) {
            scratch.appendVarint(UInt64(id))
            scratch.append(raw: value)
            count += 1
            if value.first == ValueTag.references.rawValue { holdsReferences = true }
        }

        /// Writes the header: the format (2 when a field holds references) and the count.
        mutating func finish() {
            start = Self.headerRoom - 1 - RecordScratch.varintLength(UInt64(count))
            var header = scratch.overwriting(at: start)
            header.append(holdsReferences ? RecordCodec.referencesFormat : RecordCodec.baseFormat)
            header.appendVarint(UInt64(count))
        }

        /// The record `finish` completed.
        var record: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: scratch.bytes[start...]) }
    }
}
