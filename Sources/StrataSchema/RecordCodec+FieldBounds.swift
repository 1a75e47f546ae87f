import StrataFormat

/// One field of a record as it is stored: its attribute id and where its value — the tag and
/// the payload, what `Value.append(to:)` writes — lies in the record's bytes. Plain offsets,
/// valid for the buffer ``RecordCodec/fieldBounds(_:into:)`` read them from.
package struct RecordFieldBounds: Equatable, Sendable {
    /// The attribute id.
    package var id: UInt32
    /// The offset of the value's tag.
    package var start: Int
    /// The offset just past the value's payload.
    package var end: Int
    /// The value's tag (a ``ValueTag`` raw value, never null).
    package var tag: UInt8

    /// A field whose value (tag and payload) is `record[start..<end]`.
    package init(id: UInt32, start: Int, end: Int, tag: UInt8) {
        self.id = id
        self.start = start
        self.end = end
        self.tag = tag
    }

    /// The value's bytes (tag and payload) in `record`, the buffer the field was read from.
    @inline(__always)
    package func value(in record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: record[start..<end])
    }
}

extension RecordCodec {
    /// Checks a record as ``decodeFields(_:)`` does — the same checks, the same errors — and
    /// lists where its fields are instead of building their values: `fields` is emptied
    /// (keeping its capacity, so a caller reuses one array from record to record) and filled
    /// in stored order, attribute ids strictly increasing.
    ///
    /// - Throws: as `decodeFields`; `fields` then holds the fields read before the bad one.
    package static func fieldBounds(_ buffer: UnsafeRawBufferPointer, into fields: inout [RecordFieldBounds]) throws(FormatError) {
        fields.removeAll(keepingCapacity: true)
        try walkFields(buffer) { id, start, span, end in fields.append(RecordFieldBounds(id: id, start: start, end: end, tag: span.tag)) }
    }

    /// The validating walk over a record's fields that typed decoding (`locateFields`) and
    /// ``fieldBounds(_:into:)`` share: the checks and errors of ``decodeFields(_:)``, no value
    /// built. `visit` is given each field in stored order: its attribute id, the offset of its
    /// tag, where its payload is (`FieldSpan`) and the offset past it.
    @inline(__always)
    static func walkFields(_ buffer: UnsafeRawBufferPointer,
                           _ visit: (_ id: UInt32, _ start: Int, _ span: FieldSpan, _ end: Int) -> Void) throws(FormatError) {
        var walk = try RecordFieldWalk(buffer)
        while try walk.next() { visit(walk.id, walk.start, walk.span, walk.end) }
    }

    /// Whether two encoded values (tag and payload each, as a record or `Value.append(to:)`
    /// holds them, already checked) are equal as ``Value``s are: equal bytes, or two strings
    /// that Swift compares equal (canonically equivalent, spelled differently). Every other
    /// kind is stored canonically, so its bytes are equal exactly when its values are; two
    /// ASCII strings are canonically equivalent only when identical, so no `String` is made
    /// for them.
    @inline(__always)
    package static func encodedValuesEqual(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        if lhs.count == rhs.count, bytesEqual(lhs, rhs) { return true }
        guard lhs.count > 1, rhs.count > 1, lhs[0] == ValueTag.string.rawValue, rhs[0] == lhs[0] else { return false }
        return stringsEqual(lhs, rhs)
    }

    /// Whether two encoded strings whose bytes differ are canonically equivalent.
    @inline(never)
    private static func stringsEqual(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        let left = stringPayload(lhs), right = stringPayload(rhs)
        if RecordFieldReader.isASCII(left) && RecordFieldReader.isASCII(right) { return false }
        return String(decoding: left, as: UTF8.self) == String(decoding: right, as: UTF8.self)
    }

    /// The UTF-8 of an encoded string value (tag, varint length, bytes) already checked: what
    /// follows the length.
    @inline(__always)
    private static func stringPayload(_ value: UnsafeRawBufferPointer) -> UnsafeBufferPointer<UInt8> {
        var start = 1
        while start < value.count && value[start] >= 0x80 { start += 1 }
        return UnsafeRawBufferPointer(rebasing: value[min(start + 1, value.count)...]).bindMemory(to: UInt8.self)
    }

    /// Whether two buffers of the same length hold the same bytes, compared eight at a time.
    @inline(__always)
    package static func bytesEqual(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index + 8 <= lhs.count {
            guard lhs.loadUnaligned(fromByteOffset: index, as: UInt64.self) == rhs.loadUnaligned(fromByteOffset: index, as: UInt64.self) else {
                return false
            }
            index += 8
        }
        while index < lhs.count {
            guard lhs[index] == rhs[index] else { return false }
            index += 1
        }
        return true
    }
}

/// A walk over a record's fields, one at a time, for a caller that walks two records side by
/// side (`RecordChanges`).
///
/// The requirements do not throw, and a plain walk's never reaches a `throw`: Swift 6.3 leaves a
/// call to a witness whose body throws a typed error (a generic runtime call) through the
/// witness table, never inlined, even where the conforming type is known — two calls per field.
protocol RecordFieldWalking {
    /// A walk over `buffer`'s fields.
    init(walking buffer: UnsafeRawBufferPointer)
    /// Reads the next field (a header not checked yet first): true; false after the last,
    /// once the record is checked to end there; nil when the walk cannot go on, and `failure`
    /// says why.
    mutating func step() -> Bool?
    /// Why `step()` returned nil.
    var failure: FormatError { get }
    /// The attribute id of the field `step()` read.
    var id: UInt32 { get }
    /// The value (tag and payload) of the field `step()` read, in `record` (the walk's buffer).
    func value(in record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer
}

extension RecordFieldWalking {
    /// `step()`, throwing `failure` where it returns nil.
    @inline(__always)
    mutating func advance() throws(FormatError) -> Bool {
        guard let more = step() else { throw failure }
        return more
    }
}

/// `RecordFieldWalk` of a plain record — format 1, a count and ids of one byte each, plain
/// values (`RecordCodec.plainValue`), no references — by plain loads and comparisons, with
/// the same checks; anything else, every malformed record included, stops the walk
/// (`notPlain`) at the first field it cannot read so, and the caller walks the record with
/// `RecordFieldWalk`, which decides. (Through the reader's throwing reads, a field cost ~100
/// instructions.)
struct PlainFieldWalk: RecordFieldWalking {
    /// Why a walk stops on a record it leaves to `RecordFieldWalk` (never reported).
    static let notPlain = FormatError("not a plain record")

    private let buffer: UnsafeRawBufferPointer
    private let end: Int
    private var position = 2
    private var left: Int
    private(set) var id: UInt32 = 0
    /// The offset of the tag of the field `step()` read.
    private var start = 0

    var failure: FormatError { Self.notPlain }

    /// Checks the header at once: one the walk cannot read leaves it with no field to read and
    /// not at the record's end, so that the first `step()` stops.
    @inline(__always)
    init(walking buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
        end = buffer.count
        left = 0
        guard end >= 2, let base = buffer.baseAddress else {
            position = -1
            return
        }
        let count = Int(base.load(fromByteOffset: 1, as: UInt8.self))
        guard base.load(as: UInt8.self) == RecordCodec.baseFormat, count < 0x80, count <= (end &- 1) / 2 else {
            position = -1
            return
        }
        left = count
    }

    @inline(__always)
    mutating func step() -> Bool? {
        guard left > 0 else { return position == end ? false : nil }
        left &-= 1
        guard end &- position >= 2 else { return nil }
        // Two bytes or more from `position` on: the buffer has a base.
        let base = buffer.baseAddress.unsafelyUnwrapped
        let fieldID = UInt32(base.load(fromByteOffset: position, as: UInt8.self))
        // The first field may have id 0; every later one a greater id than the one before.
        guard fieldID < 0x80, fieldID > id || position == 2 else { return nil }
        start = position &+ 1
        guard let (_, next) = RecordCodec.plainValue(base, end: end, tag: base.load(fromByteOffset: start, as: UInt8.self),
                                                     at: start &+ 1) else { return nil }
        id = fieldID
        position = next
        return true
    }

    @inline(__always)
    func value(in record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: record[start..<position])
    }
}

/// ``RecordCodec/walkFields(_:_:)`` a field at a time, for a caller that walks two records side
/// by side (`RecordChanges`): the same checks and errors, in the same order.
struct RecordFieldWalk {
    private var reader: RecordFieldReader
    /// Fields not read yet.
    private var left: Int
    private var previous: UInt32?
    private var holdsReferences = false
    private var holdsNulls = false
    /// The field `next()` read: its attribute id, the offset of its tag, and its payload.
    private(set) var id: UInt32 = 0
    private(set) var start = 0
    private(set) var span = FieldSpan.absent

    /// Reads the record's header.
    @inline(__always)
    init(_ buffer: UnsafeRawBufferPointer) throws(FormatError) {
        reader = RecordFieldReader(buffer)
        left = try reader.readHeader()
    }

    /// The offset just past the field `next()` read.
    var end: Int { reader.position }

    /// The value (tag and payload) of the field `next()` read, in `record` (the walk's buffer).
    @inline(__always)
    func value(in record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: record[start..<reader.position])
    }

    /// Reads the next field; false after the last, once the record is checked to end there.
    @inline(__always)
    mutating func next() throws(FormatError) -> Bool {
        guard left > 0 else {
            try checkEnd()
            return false
        }
        id = try reader.readAttributeID(after: previous)
        start = reader.position
        span = try reader.readFieldSpan(id: id)
        if span.tag == ValueTag.references.rawValue { holdsReferences = true }
        if span.isNull { holdsNulls = true }
        previous = id
        left -= 1
        return true
    }

    private func checkEnd() throws(FormatError) {
        guard reader.remaining == 0 else {
            throw FormatError("\(reader.remaining) bytes after the last field of the record", at: reader.position)
        }
        try RecordCodec.checkCanonicalFormat(reader.format, references: holdsReferences, nulls: holdsNulls)
    }
}

/// `RecordFieldWalk` as a `RecordFieldWalking`, for the records `PlainFieldWalk` leaves to it:
/// the header read by the first `step()`, an error kept for `failure` rather than thrown.
struct CarefulFieldWalk: RecordFieldWalking {
    private let buffer: UnsafeRawBufferPointer
    private var walk: RecordFieldWalk?
    private var error: FormatError?

    init(walking buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    var failure: FormatError { error ?? FormatError("the walk over a record's fields has not stopped") }
    var id: UInt32 { walk?.id ?? 0 }

    mutating func step() -> Bool? {
        do {
            if walk == nil { walk = try RecordFieldWalk(buffer) }
            return try walk?.next()
        } catch {
            self.error = error
            return nil
        }
    }

    func value(in record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        walk?.value(in: record) ?? UnsafeRawBufferPointer(rebasing: record[0..<0])
    }
}
