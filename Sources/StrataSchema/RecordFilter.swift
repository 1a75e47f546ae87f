/// A filtered scan's pre-filter: what `RecordCondition.evaluate(_:)` answers on each stored
/// record a scan reads (or any function of a record's bytes), made once per scan. Each
/// thread of a scan evaluates records through a `Session` of its own.
///
/// A condition on one field (`.startsWith`, `.compare`: nearly every fetch's predicate) is
/// evaluated where a session finds the field by the record's *shape* (`FieldShape`): the
/// bytes the plain walk (`StoredField.locatePlain`) checks before that field — the record's
/// header and the ids and tags of the fields before it — as they were in the last record the
/// walk located the field in. A record with the same bytes there passes the walk's checks
/// the same way, so only its payload lengths and bounds are read; any other record is walked
/// as before, and its shape kept for the next ones. The answers are `evaluate(_:)`'s
/// (`RecordFilterTests`, `DecoderFuzzTests`).
package struct RecordFilter: Sendable {
    fileprivate enum Kind: UInt8, Sendable { case function, condition, startsWith, compare }

    private let kind: Kind
    private let function: @Sendable (UnsafeRawBufferPointer) -> Bool?
    private let condition: RecordCondition

    /// A filter answering `evaluate(bytes)` for each record.
    package init(_ evaluate: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool?) {
        kind = .function
        function = evaluate
        condition = .unknown
    }

    /// A filter answering `condition.evaluate(bytes)` for each record.
    package init(_ condition: RecordCondition) {
        switch condition {
        // A shape holds one-byte ids (the plain walk's); other ids are walked carefully.
        case .startsWith(let id, _, _) where id < 0x80: kind = .startsWith
        case .compare(let id, _, _, _) where id < 0x80: kind = .compare
        default: kind = .condition
        }
        function = { _ in nil }
        self.condition = condition
    }

    /// The evaluation state of one thread.
    package func session() -> Session { Session(self) }

    /// Evaluates records for one thread; not thread-safe (`RecordFilter.session()`).
    package struct Session {
        private let kind: Kind
        private let function: @Sendable (UnsafeRawBufferPointer) -> Bool?
        private let condition: RecordCondition
        private let attributeID: UInt32
        private let prefix: [UInt8]
        private let comparison: RecordCondition.Comparison
        private let constant: Value
        private let absent: Value?
        private var shape = FieldShape()

        fileprivate init(_ filter: RecordFilter) {
            kind = filter.kind
            function = filter.function
            condition = filter.condition
            switch filter.condition {
            case .startsWith(let id, let prefix, let absent):
                (attributeID, self.prefix, comparison, constant, self.absent) = (id, prefix, .equal, .null, absent)
            case .compare(let id, let comparison, let constant, let absent):
                (attributeID, prefix, self.comparison, self.constant, self.absent) = (id, [], comparison, constant, absent)
            default:
                (attributeID, prefix, comparison, constant, absent) = (0, [], .equal, .null, nil)
            }
        }

        /// The filter's answer for the record stored as `bytes` (whole).
        package mutating func evaluate(_ bytes: UnsafeRawBufferPointer) -> Bool? {
            switch kind {
            case .startsWith:
                let location = locate(bytes)
                return RecordCondition.startsWith(bytes, recordLength: bytes.count, id: attributeID, prefix: prefix, absent: absent,
                                                  location: location)
            case .compare:
                let location = locate(bytes)
                return RecordCondition.compare(bytes, recordLength: bytes.count, id: attributeID, comparison, constant, absent: absent,
                                               location: location)
            case .condition: return condition.evaluate(bytes)
            case .function: return function(bytes)
            }
        }

        /// `StoredField.locatePlain(attributeID, in: bytes, recordLength: bytes.count)`: by the
        /// shape of the last record the field was found in, or walked (and its shape kept).
        @inline(__always)
        private mutating func locate(_ bytes: UnsafeRawBufferPointer) -> PlainFieldLocation {
            if let location = shape.locate(in: bytes) { return location }
            let location = StoredField.locatePlain(attributeID, in: bytes, recordLength: bytes.count)
            if location.offset >= 0 { shape.learn(attributeID, from: bytes) }
            return location
        }
    }
}

/// Where one field lies in records of one shape: the bytes `StoredField.locatePlain` checks
/// on its way to the field in the record the shape was learned from, and how it skips each
/// field's payload. `locate` finds the field in another record with those same bytes where
/// the walk would — the same location — and answers nil for any other record.
///
/// The walk's checks, and why a record matching the shape passes them as the learned one
/// did: the header (a format byte from 1 to `RecordCodec.formatVersion`, a field count below
/// 128) is the same two bytes; the count against the record's length is checked again
/// (`minimumLength`); each field's id (below 128, above the previous, below the sought one,
/// the sought one last) and tag (one with a plain payload) are the same bytes — but for a
/// Boolean, stored as tag `false` or `true`, either of which has no payload; the bounds of
/// every payload and the varints of lengths and integers are read and checked in each record.
struct FieldShape {
    /// Bytes 0 and 1 of the records (format, field count) as a little-endian `UInt16`; 0:
    /// nothing learned (no record has format 0).
    private var header: UInt16 = 0
    /// The fewest bytes a record with this field count has for the walk (`locatePlain`: the
    /// count at most `(length - 1) / 2`), and at least 2.
    private var minimumLength = 0
    /// One per field walked, the sought one last: its id and tag as a little-endian `UInt16`
    /// (bits 0–15); the bytes from its id to past its fixed-size payload, or to its varint
    /// (bits 16–23); its payload's kind (bits 24–25: `fixed`, `varint`, `lengthPrefixed`);
    /// `either` for a Boolean.
    private var steps: [UInt32] = []

    private static let fixed: UInt32 = 0
    private static let varint: UInt32 = 1
    private static let lengthPrefixed: UInt32 = 2
    private static let either: UInt32 = 1 << 26

    /// `StoredField.locatePlain(id, in: bytes, recordLength: bytes.count)` for a record of
    /// this shape; nil for any other record (or none learned).
    @inline(__always)
    func locate(in bytes: UnsafeRawBufferPointer) -> PlainFieldLocation? {
        let end = bytes.count
        guard header != 0, end >= minimumLength, let base = bytes.baseAddress,
              UInt16(littleEndian: base.loadUnaligned(as: UInt16.self)) == header else { return nil }
        // Offsets stay within the buffer plus 2 (each checked against `end` before a load,
        // lengths against what is left): the arithmetic wraps rather than checks.
        return steps.withUnsafeBufferPointer { steps -> PlainFieldLocation? in
            var position = 2
            var key: UInt32 = 0, start = 0
            for step in steps {
                let advance = Int((step >> 16) & 0xFF)
                guard end &- position >= advance else { return nil }
                key = UInt32(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt16.self)))
                if key != step & 0xFFFF {
                    // A Boolean's other tag (same id, tag `false` or `true`, no payload).
                    guard step & Self.either != 0, key & 0xFF == step & 0xFF, (key >> 8) &- 1 < 2 else { return nil }
                }
                start = position &+ 2
                position &+= advance
                let kind = (step >> 24) & 3
                if kind != Self.fixed {
                    guard position < end else { return nil }
                    let first = base.load(fromByteOffset: position, as: UInt8.self)
                    if first < 0x80 {
                        position &+= 1
                        if kind == Self.lengthPrefixed { position &+= Int(first) }
                    } else {
                        guard let (value, next) = RecordCodec.plainVarint(base, end: end, at: position) else { return nil }
                        position = next
                        if kind == Self.lengthPrefixed {
                            guard value <= UInt64(end &- next) else { return nil }
                            position &+= Int(value)
                        }
                    }
                    guard position <= end else { return nil }
                }
            }
            return steps.isEmpty ? nil : PlainFieldLocation(tag: UInt8(truncatingIfNeeded: key >> 8), offset: start, count: position &- start)
        }
    }

    /// Learns the shape of `bytes`, where `locatePlain` found field `id` (plain): walks it
    /// as `locatePlain` does, noting each field's id, tag and payload. Learns nothing (and
    /// `locate` then answers nil) if the walk does not end at the field.
    mutating func learn(_ id: UInt32, from bytes: UnsafeRawBufferPointer) {
        header = 0
        steps.removeAll(keepingCapacity: true)
        let end = bytes.count
        guard end >= 2, let base = bytes.baseAddress else { return }
        let count = Int(base.load(fromByteOffset: 1, as: UInt8.self))
        var position = 2
        for _ in 0..<count {
            guard end &- position >= 2 else { return }
            let fieldID = UInt32(base.load(fromByteOffset: position, as: UInt8.self))
            let tag = base.load(fromByteOffset: position &+ 1, as: UInt8.self)
            guard fieldID <= id else { return }
            let start = position &+ 2
            var kind = Self.fixed, size: Int
            switch tag {
            case ValueTag.false.rawValue, ValueTag.true.rawValue: size = 0
            case ValueTag.double.rawValue, ValueTag.date.rawValue: size = 8
            case ValueTag.uuid.rawValue: size = 16
            case ValueTag.int.rawValue:
                guard let (_, next) = RecordCodec.plainVarint(base, end: end, at: start) else { return }
                (kind, size) = (Self.varint, next &- start)
            case ValueTag.string.rawValue, ValueTag.data.rawValue, ValueTag.codable.rawValue:
                guard let (length, next) = RecordCodec.plainVarint(base, end: end, at: start), length <= UInt64(end &- next) else { return }
                (kind, size) = (Self.lengthPrefixed, next &- start &+ Int(length))
            default: return
            }
            guard end &- start >= size else { return }
            let advance = UInt32(kind == Self.fixed ? 2 &+ size : 2)
            let isBoolean = tag == ValueTag.false.rawValue || tag == ValueTag.true.rawValue
            steps.append(fieldID | UInt32(tag) << 8 | advance << 16 | kind << 24 | (isBoolean ? Self.either : 0))
            position = start &+ size
            if fieldID == id {
                header = UInt16(littleEndian: base.loadUnaligned(as: UInt16.self))
                minimumLength = max(2, 2 &* count &+ 1)
                return
            }
        }
        steps.removeAll(keepingCapacity: true)
    }
}
