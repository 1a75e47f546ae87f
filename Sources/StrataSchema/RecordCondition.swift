#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat

/// A condition on a record's stored bytes, compiled from a fetch's `#Predicate` (see
/// `RecordCondition+Predicate.swift`), that decides many records without decoding them.
///
/// It is a *pre-filter*, sound by construction: ``evaluate(_:)`` answers `true` or `false`
/// only when the predicate, evaluated on the decoded record, gives that same answer, and nil
/// ("decode and evaluate the predicate") otherwise. A condition that cannot be compiled is
/// `.unknown` everywhere, so the worst case is the plain path: decode every record.
///
/// Exactness per comparison (Docs/Architecture.md, "Predicates on stored bytes"):
/// - integers, Booleans, doubles (IEEE comparison, as Swift's operators), dates (their
///   `timeIntervalSinceReferenceDate`, as `Date`'s operators) and UUIDs (equality) compare
///   exactly as Swift compares the decoded values;
/// - strings compare by UTF-8 bytes only when both sides are ASCII — ASCII strings are equal
///   or ordered exactly as their bytes are, while other strings compare by canonical
///   equivalence (`"é"` written as one or two scalars is the same string) — and identical
///   bytes are always equal strings; anything else is left to the predicate;
/// - `starts(with:)` of an ASCII prefix answers false when the stored string's bytes up to
///   the first difference are ASCII (no canonically equivalent form of an ASCII character
///   starts with a different ASCII byte); a byte match is left to the predicate, since a
///   combining mark after the prefix changes the last character.
package indirect enum RecordCondition: Sendable, Equatable {
    /// How a field is compared with a constant.
    package enum Comparison: Sendable, Equatable {
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual

        /// `a op b` with `a` and `b` swapped: `3 < x` is `x > 3`.
        var mirrored: Comparison {
            switch self {
            case .equal, .notEqual: self
            case .less: .greater
            case .lessOrEqual: .greaterOrEqual
            case .greater: .less
            case .greaterOrEqual: .lessOrEqual
            }
        }

        /// The answer for the order of the field relative to the constant.
        func holds(_ order: Order) -> Bool {
            switch self {
            case .equal: order == .equal
            case .notEqual: order != .equal
            case .less: order == .less
            case .lessOrEqual: order != .greater
            case .greater: order == .greater
            case .greaterOrEqual: order != .less
            }
        }
    }

    /// The order of two values.
    package enum Order: Sendable { case less, equal, greater }

    /// The field with `attributeID` compared with `constant` (`.null` for `nil`). `absent` is
    /// the value a record without the field decodes to (its default, or `.null` for an
    /// optional property without one); nil when such a record does not decode (the decoder
    /// reports it).
    case compare(attributeID: UInt32, Comparison, Value, absent: Value?)
    /// The string field with `attributeID` starts with the ASCII bytes `prefix`.
    case startsWith(attributeID: UInt32, prefix: [UInt8], absent: Value?)
    case and(RecordCondition, RecordCondition)
    case or(RecordCondition, RecordCondition)
    case not(RecordCondition)
    /// A constant answer.
    case constant(Bool)
    /// Not decidable on bytes.
    case unknown

    /// Whether the condition ever decides anything (false: skip it).
    package var isUseful: Bool {
        switch self {
        case .unknown: false
        case .not(let inner): inner.isUseful
        case .and(let a, let b), .or(let a, let b): a.isUseful || b.isUseful
        default: true
        }
    }

    /// The predicate's answer on the record stored as `bytes`, when it can be told from the
    /// bytes; nil when the record must be decoded (also for bytes that do not parse: decoding
    /// reports the error).
    package func evaluate(_ bytes: UnsafeRawBufferPointer) -> Bool? {
        switch self {
        // A single comparison, the most common condition, without the recursive walk's call:
        // this runs for every record a filtered scan reads.
        case .compare, .startsWith: evaluateComparison(bytes, recordLength: bytes.count)
        default: evaluate(bytes, recordLength: bytes.count)
        }
    }

    /// `.startsWith(id, prefix, absent)` on a record's first bytes, where `StoredField.locatePlain`
    /// found field `id` at `location` (see `evaluateComparison`).
    @inline(always)
    static func startsWith(_ bytes: UnsafeRawBufferPointer, recordLength: Int, id: UInt32, prefix: [UInt8], absent: Value?,
                           location: PlainFieldLocation) -> Bool? {
        // A plain string field is compared where the walk found it.
        if location.offset >= 0, location.tag == ValueTag.string.rawValue, let base = bytes.baseAddress,
           let (length, start) = RecordCodec.plainVarint(base, end: location.offset &+ location.count, at: location.offset) {
            return StoredField.startsWith(UnsafeRawBufferPointer(start: base + start, count: Int(length)), prefix)
        }
        guard let field = StoredField.find(id, in: bytes, recordLength: recordLength, location: location) else { return nil }
        return field.startsWith(prefix, absent: absent)
    }

    /// `.compare(id, comparison, constant, absent)` on a record's first bytes, where
    /// `StoredField.locatePlain` found field `id` at `location`.
    @inline(always)
    static func compare(_ bytes: UnsafeRawBufferPointer, recordLength: Int, id: UInt32, _ comparison: Comparison, _ constant: Value,
                        absent: Value?, location: PlainFieldLocation) -> Bool? {
        guard let field = StoredField.find(id, in: bytes, recordLength: recordLength, location: location) else { return nil }
        return field.compare(comparison, constant, absent: absent)
    }

    /// `evaluate` on the first bytes of a record of `recordLength` bytes that hold every field
    /// the condition reads (`evaluate(prefix:recordLength:)` checks that they do).
    private func evaluate(_ bytes: UnsafeRawBufferPointer, recordLength: Int) -> Bool? {
        switch self {
        case .constant(let answer): return answer
        case .unknown: return nil
        case .not(let inner): return inner.evaluate(bytes, recordLength: recordLength).map { !$0 }
        case .and(let a, let b):
            let left = a.evaluate(bytes, recordLength: recordLength)
            if left == false { return false }
            let right = b.evaluate(bytes, recordLength: recordLength)
            if right == false { return false }
            return left == true && right == true ? true : nil
        case .or(let a, let b):
            let left = a.evaluate(bytes, recordLength: recordLength)
            if left == true { return true }
            let right = b.evaluate(bytes, recordLength: recordLength)
            if right == true { return true }
            return left == false && right == false ? false : nil
        case .compare, .startsWith: return evaluateComparison(bytes, recordLength: recordLength)
        }
    }

    /// `evaluate` of `.compare` and `.startsWith` (nil for any other case).
    // `@inline(always)` here and on the pre-filter's helpers below: Swift 6.3 declined
    // `@inline(__always)` on them as "not profitable" (Architecture.md, the plain walks).
    @inline(always)
    private func evaluateComparison(_ bytes: UnsafeRawBufferPointer, recordLength: Int) -> Bool? {
        switch self {
        case .compare(let id, let comparison, let constant, let absent):
            let location = StoredField.locatePlain(id, in: bytes, recordLength: recordLength)
            return Self.compare(bytes, recordLength: recordLength, id: id, comparison, constant, absent: absent, location: location)
        case .startsWith(let id, let prefix, let absent):
            let location = StoredField.locatePlain(id, in: bytes, recordLength: recordLength)
            return Self.startsWith(bytes, recordLength: recordLength, id: id, prefix: prefix, absent: absent, location: location)
        default: return nil
        }
    }

    /// The largest attribute id the condition reads; nil when it reads none.
    package var largestAttributeID: UInt32? {
        switch self {
        case .compare(let id, _, _, _), .startsWith(let id, _, _): id
        case .not(let inner): inner.largestAttributeID
        case .and(let a, let b), .or(let a, let b):
            switch (a.largestAttributeID, b.largestAttributeID) {
            case (let x?, let y?): max(x, y)
            case (let x, nil): x
            case (nil, let y): y
            }
        case .constant, .unknown: nil
        }
    }

    /// What `evaluate` answers on a whole record of `recordLength` bytes, told from its first
    /// bytes `prefix` alone when they hold every byte `evaluate` reads: the record's header and
    /// its fields up to the first one whose id passes `largestAttributeID` (fields are stored in
    /// ascending id order, so the fields after it are never read). `.needsMore` when the prefix
    /// ends before that point (or its bytes do not parse: the whole record then decides). For
    /// a record stored in overflow pages, whose small fields come before a large value.
    package func evaluate(prefix: UnsafeRawBufferPointer, recordLength: Int) -> PrefixAnswer {
        if prefix.count >= recordLength { return .decided(evaluate(prefix, recordLength: recordLength)) }
        guard let largest = largestAttributeID else { return .decided(evaluate(prefix, recordLength: recordLength)) }
        var reader = RecordFieldReader(prefix)
        guard let count = try? reader.readHeader(recordLength: recordLength) else { return .needsMore }
        var previous: UInt32?
        for _ in 0..<count {
            guard let fieldID = try? reader.readAttributeID(after: previous) else { return .needsMore }
            if fieldID > largest { break }
            guard let tag = try? reader.readFieldTag(id: fieldID),
                  (try? reader.skipPayload(of: tag, id: fieldID)) != nil else { return .needsMore }
            previous = fieldID
        }
        return .decided(evaluate(prefix, recordLength: recordLength))
    }

    /// What a record's first bytes tell of a condition (`evaluate(prefix:recordLength:)`).
    package enum PrefixAnswer: Equatable, Sendable {
        /// What `evaluate` answers on the whole record.
        case decided(Bool?)
        /// The prefix does not hold every byte `evaluate` reads.
        case needsMore
    }
}

/// One field of a stored record, located without decoding the record: its tag and payload.
/// `absent` when the record has no field with the id.
enum StoredField {
    case absent
    case present(tag: ValueTag, payload: UnsafeRawBufferPointer)

    /// The field with `id` in the record `bytes` (the whole record of `recordLength` bytes, or
    /// its first bytes up to past that field), or nil when the bytes do not parse (the
    /// caller then leaves the record to the decoder, which reports why). The hot loop of a
    /// filtered scan: it reads with `RecordFieldReader`, as a field lookup does, checking the
    /// header, ids, tags and the payloads' bounds it walks but not the UTF-8 of strings it
    /// skips, which decoding checks.
    @inline(always)
    static func find(_ id: UInt32, in bytes: UnsafeRawBufferPointer, recordLength: Int) -> StoredField? {
        find(id, in: bytes, recordLength: recordLength, location: locatePlain(id, in: bytes, recordLength: recordLength))
    }

    /// `find`, where `locatePlain` answered `location`.
    @inline(always)
    static func find(_ id: UInt32, in bytes: UnsafeRawBufferPointer, recordLength: Int, location: PlainFieldLocation) -> StoredField? {
        if location.offset >= 0, let tag = ValueTag(rawValue: location.tag), let base = bytes.baseAddress {
            return .present(tag: tag, payload: UnsafeRawBufferPointer(start: base + location.offset, count: location.count))
        }
        if location.offset == PlainFieldLocation.absent { return .absent }
        return findCarefully(id, in: bytes, recordLength: recordLength)
    }

    /// `find` of a record whose header and ids up to the field are one byte each, whose lengths
    /// and integers are plain varints (`RecordCodec.plainVarint`) and whose tags are not
    /// references — nearly every record — by plain loads and comparisons, with the same
    /// checks, so the same answer; `.unsure` for anything else, every malformed record
    /// included (`findCarefully` then walks it again and answers). A string's payload is its
    /// length and its bytes. (Through the reader's throwing reads, the walk cost ~80
    /// instructions a field: a quarter of a filtered scan.)
    @inline(always)
    static func locatePlain(_ id: UInt32, in bytes: UnsafeRawBufferPointer, recordLength: Int) -> PlainFieldLocation {
        // Offsets are checked against `end` before each load; the arithmetic cannot overflow
        // (offsets stay within the buffer plus 2; lengths are checked against what is left),
        // so it wraps rather than checks.
        let end = bytes.count
        guard end >= 2, let base = bytes.baseAddress else { return .unsure }
        let format = base.load(as: UInt8.self)
        var left = Int(base.load(fromByteOffset: 1, as: UInt8.self))
        guard format != 0, format <= RecordCodec.formatVersion, left < 0x80, left <= max(0, (recordLength &- 1) / 2) else { return .unsure }
        var position = 2
        var previous = -1
        while left > 0 {
            left &-= 1
            guard end &- position >= 2 else { return .unsure }
            let fieldID = Int(base.load(fromByteOffset: position, as: UInt8.self))
            guard fieldID < 0x80, fieldID > previous else { return .unsure }
            if UInt32(truncatingIfNeeded: fieldID) > id { return PlainFieldLocation(tag: 0, offset: PlainFieldLocation.absent, count: 0) }
            previous = fieldID
            let tag = base.load(fromByteOffset: position &+ 1, as: UInt8.self)
            let start = position &+ 2
            var size: Int
            switch tag {
            case ValueTag.false.rawValue, ValueTag.true.rawValue: size = 0
            case ValueTag.double.rawValue, ValueTag.date.rawValue: size = 8
            case ValueTag.uuid.rawValue: size = 16
            case ValueTag.int.rawValue:
                guard let (_, next) = RecordCodec.plainVarint(base, end: end, at: start) else { return .unsure }
                size = next &- start
            case ValueTag.string.rawValue, ValueTag.data.rawValue, ValueTag.codable.rawValue:
                // The length and the bytes.
                guard let (length, next) = RecordCodec.plainVarint(base, end: end, at: start),
                      length <= UInt64(end &- next) else { return .unsure }
                size = next &- start &+ Int(length)
            default: return .unsure  // null, references, unknown: read carefully
            }
            guard end &- start >= size else { return .unsure }
            position = start &+ size
            if UInt32(truncatingIfNeeded: fieldID) == id { return PlainFieldLocation(tag: tag, offset: start, count: size) }
        }
        return PlainFieldLocation(tag: 0, offset: PlainFieldLocation.absent, count: 0)
    }

    /// `find` through the reader's checked reads, for any record (and the tests' reference for
    /// `locatePlain`).
    @inline(never)
    static func findCarefully(_ id: UInt32, in bytes: UnsafeRawBufferPointer, recordLength: Int) -> StoredField? {
        var reader = RecordFieldReader(bytes)
        guard let count = try? reader.readHeader(recordLength: recordLength) else { return nil }
        var previous: UInt32?
        for _ in 0..<count {
            guard let fieldID = try? reader.readAttributeID(after: previous) else { return nil }
            previous = fieldID
            if fieldID > id { return .absent }
            guard let tag = try? reader.readFieldTag(id: fieldID) else { return nil }
            let start = reader.position
            guard (try? reader.skipPayload(of: tag, id: fieldID)) != nil else { return nil }
            if fieldID == id {
                // A null field reads as nil or as the default, as the property's type decides:
                // the decoder answers.
                if tag == .null { return nil }
                return .present(tag: tag, payload: UnsafeRawBufferPointer(rebasing: bytes[start..<reader.position]))
            }
        }
        return .absent
    }

    /// `field op constant`, or nil when that cannot be told exactly from the bytes.
    func compare(_ comparison: RecordCondition.Comparison, _ constant: Value, absent: Value?) -> Bool? {
        switch self {
        case .absent:
            guard let absent else { return nil }
            if absent.isNull {
                // nil == x / nil != x for an optional property; ordering nil is not Comparable.
                guard comparison == .equal || comparison == .notEqual else { return nil }
                return comparison.holds(constant.isNull ? .equal : .less)
            }
            if constant.isNull {
                guard comparison == .equal || comparison == .notEqual else { return nil }
                return comparison.holds(.less)
            }
            return Self.compare(absent, comparison, constant)
        case .present(let tag, let payload):
            if constant.isNull {
                guard comparison == .equal || comparison == .notEqual else { return nil }
                return comparison.holds(.less)  // a stored value is never nil
            }
            switch (tag, constant) {
            case (.false, .bool(let b)), (.true, .bool(let b)):
                guard comparison == .equal || comparison == .notEqual else { return nil }
                return comparison.holds((tag == .true) == b ? .equal : .less)
            case (.int, .int(let c)):
                var reader = RecordFieldReader(payload)
                guard let v = try? reader.readZigZag("integer") else { return nil }
                return comparison.holds(v < c ? .less : v == c ? .equal : .greater)
            case (.double, .double(let c)):
                guard payload.count == 8 else { return nil }
                return Self.ieee(Double(bitPattern: UInt64(littleEndian: payload.loadUnaligned(as: UInt64.self))), comparison, c)
            case (.date, .date(let c)):
                guard payload.count == 8 else { return nil }
                return Self.ieee(Double(bitPattern: UInt64(littleEndian: payload.loadUnaligned(as: UInt64.self))), comparison,
                                 c.timeIntervalSinceReferenceDate)
            case (.string, .string(let c)):
                var reader = RecordFieldReader(payload)
                guard let stored = try? reader.readLengthPrefixedSlice("string") else { return nil }
                return Self.compareStrings(stored, comparison, c)
            case (.uuid, .uuid(let c)):
                guard comparison == .equal || comparison == .notEqual, payload.count == 16 else { return nil }
                let same = withUnsafeBytes(of: c.uuid) { $0.elementsEqual(payload) }
                return comparison.holds(same ? .equal : .less)
            default:
                return nil
            }
        }
    }

    /// Whether a string field starts with the ASCII `prefix`, when that can be told exactly.
    @inline(always)
    func startsWith(_ prefix: [UInt8], absent: Value?) -> Bool? {
        switch self {
        case .absent:
            guard case .string(var value)? = absent else { return nil }
            return value.withUTF8 { Self.startsWith(UnsafeRawBufferPointer($0), prefix) }
        case .present(let tag, let payload):
            guard tag == .string else { return nil }
            var reader = RecordFieldReader(payload)
            guard let stored = try? reader.readLengthPrefixedSlice("string") else { return nil }
            return Self.startsWith(stored, prefix)
        }
    }

    /// False when `stored` cannot start with the ASCII `prefix` as Swift compares strings;
    /// nil otherwise (see ``RecordCondition``).
    @inline(always)
    static func startsWith(_ stored: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool? {
        prefix.withUnsafeBufferPointer { prefix in
            let common = min(stored.count, prefix.count)
            var index = 0
            while index < common {
                let byte = stored.load(fromByteOffset: index, as: UInt8.self)
                guard byte < 0x80 else { return nil }
                if byte != prefix[index] { return false }
                index &+= 1
            }
            // A byte match: a combining mark may follow; the predicate decides. Shorter, and
            // ASCII so far: no.
            return common == prefix.count ? nil : false
        }
    }

    static func compare(_ value: Value, _ comparison: RecordCondition.Comparison, _ constant: Value) -> Bool? {
        switch (value, constant) {
        case (.bool(let a), .bool(let b)):
            guard comparison == .equal || comparison == .notEqual else { return nil }
            return comparison.holds(a == b ? .equal : .less)
        case (.int(let a), .int(let b)): return comparison.holds(a < b ? .less : a == b ? .equal : .greater)
        case (.double(let a), .double(let b)): return ieee(a, comparison, b)
        case (.date(let a), .date(let b)): return ieee(a.timeIntervalSinceReferenceDate, comparison, b.timeIntervalSinceReferenceDate)
        case (.string(let a), .string(let b)):
            guard comparison == .equal || comparison == .notEqual else { return nil }
            return comparison.holds(a == b ? .equal : .less)
        default: return nil
        }
    }

    /// The IEEE comparison Swift's operators make (NaN is unordered: only `!=` holds).
    static func ieee(_ a: Double, _ comparison: RecordCondition.Comparison, _ b: Double) -> Bool {
        switch comparison {
        case .equal: a == b
        case .notEqual: a != b
        case .less: a < b
        case .lessOrEqual: a <= b
        case .greater: a > b
        case .greaterOrEqual: a >= b
        }
    }

    /// Stored UTF-8 bytes against a string constant: exact for identical bytes and for two
    /// ASCII strings; nil otherwise.
    static func compareStrings(_ stored: UnsafeRawBufferPointer, _ comparison: RecordCondition.Comparison, _ constant: String) -> Bool? {
        var constant = constant
        return constant.withUTF8 { constantBytes -> Bool? in
            let other = UnsafeRawBufferPointer(constantBytes)
            let common = min(stored.count, other.count)
            var index = 0
            while index < common, stored[index] == other[index] { index += 1 }
            if index == stored.count && index == other.count { return comparison.holds(.equal) }
            guard RecordFieldReader.isASCII(stored.bindMemory(to: UInt8.self)),
                  RecordFieldReader.isASCII(other.bindMemory(to: UInt8.self)) else { return nil }
            let order: RecordCondition.Order = index == common ? (stored.count < other.count ? .less : .greater)
                : (stored[index] < other[index] ? .less : .greater)
            return comparison.holds(order)
        }
    }

}

/// A range of attribute values, as an index scan takes it: each bound optional, inclusive
/// or not.
package struct ValueRange: Sendable, Equatable {
    /// One end of a range.
    package struct Bound: Sendable, Equatable {
        package var value: Value
        package var isInclusive: Bool

        package init(value: Value, isInclusive: Bool) {
            self.value = value
            self.isInclusive = isInclusive
        }
    }

    package var lower: Bound?
    package var upper: Bound?

    package init(lower: Bound? = nil, upper: Bound? = nil) {
        self.lower = lower
        self.upper = upper
    }

    /// `[value, value]`.
    package static func equal(to value: Value) -> ValueRange {
        ValueRange(lower: Bound(value: value, isInclusive: true), upper: Bound(value: value, isInclusive: true))
    }
}

extension RecordCondition {
    /// The range of values of attribute `attributeID` outside of which no record satisfies the
    /// condition, from the comparisons of that attribute with a constant among its top-level
    /// conjuncts (`a == 3`, `a > 1 && a <= 9 && …`); nil when the condition does not bound it.
    /// Null and NaN constants bound nothing (an index holds no nulls, NaN compares false).
    /// Bounds of different value types are not combined (the first type seen wins).
    package func range(of attributeID: UInt32) -> ValueRange? {
        var range = ValueRange()
        var bounded = false
        func tighten(_ condition: RecordCondition) {
            switch condition {
            case .and(let a, let b):
                tighten(a)
                tighten(b)
            case .compare(let id, let comparison, let constant, _) where id == attributeID:
                if constant.isNull { return }
                if case .double(let d) = constant, d.isNaN { return }
                if let existing = range.lower?.value ?? range.upper?.value, !existing.hasSameType(as: constant) { return }
                let bound = ValueRange.Bound(value: constant, isInclusive: comparison != .less && comparison != .greater)
                switch comparison {
                case .equal:
                    range.lower = Self.tighter(range.lower, bound, lower: true)
                    range.upper = Self.tighter(range.upper, bound, lower: false)
                case .greater, .greaterOrEqual: range.lower = Self.tighter(range.lower, bound, lower: true)
                case .less, .lessOrEqual: range.upper = Self.tighter(range.upper, bound, lower: false)
                case .notEqual: return
                }
                bounded = true
            default:
                return
            }
        }
        tighten(self)
        return bounded ? range : nil
    }

    /// The tighter of two lower (or upper) bounds of the same type.
    private static func tighter(_ current: ValueRange.Bound?, _ new: ValueRange.Bound, lower: Bool) -> ValueRange.Bound {
        guard let current, let order = current.value.order(comparedTo: new.value) else { return new }
        switch order {
        case .equal: return current.isInclusive ? new : current
        case .less: return lower ? new : current
        case .greater: return lower ? current : new
        }
    }
}

extension Value {
    /// Whether two values have the same case (both ints, both strings, …).
    package func hasSameType(as other: Value) -> Bool {
        switch (self, other) {
        case (.bool, .bool), (.int, .int), (.double, .double), (.string, .string), (.data, .data), (.date, .date),
             (.uuid, .uuid), (.codable, .codable), (.null, .null): true
        default: false
        }
    }

    /// How `self` orders against a value of the same type, as Swift's operators order them;
    /// nil for other types or values Swift does not order (NaN, Booleans, UUIDs).
    func order(comparedTo other: Value) -> RecordCondition.Order? {
        switch (self, other) {
        case (.int(let a), .int(let b)): a < b ? .less : a == b ? .equal : .greater
        case (.double(let a), .double(let b)) where !a.isNaN && !b.isNaN: a < b ? .less : a == b ? .equal : .greater
        case (.date(let a), .date(let b)): a < b ? .less : a == b ? .equal : .greater
        case (.string(let a), .string(let b)): a < b ? .less : a == b ? .equal : .greater
        default: nil
        }
    }
}

/// What `StoredField.locatePlain` found: field payload `offset ..< offset + count` with `tag`
/// (a valid tag, never null or references), or an `offset` below zero — `absent` (the record
/// has no such field) or `unsure` (not a plain record: walk it carefully). Three words,
/// returned in registers.
struct PlainFieldLocation: Equatable {
    var tag: UInt8
    var offset: Int
    var count: Int

    static let absent = -1
    static let unsure = PlainFieldLocation(tag: 0, offset: -2, count: 0)
}
