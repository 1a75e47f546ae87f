#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Order-preserving byte keys of values, for indexes (Docs/FileFormat.md, "Index keys").
///
/// Comparing two keys byte by byte (shorter first when one is a prefix of the other) gives
/// the order Swift predicates use on the values:
///
/// - a kind byte first, in ``Value``'s order across kinds: null (so null sorts first), bool,
///   int, double, string, data, date, uuid, codable;
/// - `bool`: 0 or 1; `int`: 8 bytes big-endian with the sign bit flipped (signed order);
/// - `double` and `date` (its seconds since 2001): 8 bytes big-endian of the IEEE-754 bits,
///   all bits flipped for negative numbers and the sign bit set for positive ones. `-0.0` is
///   keyed as `+0.0` (they are `==`); every NaN gets one key, after `+∞` (no predicate
///   comparison holds for NaN, so where it sorts only matters for uniqueness: NaNs are one
///   value there);
/// - `string`: the UTF-8 bytes of its canonical composition (NFC, computed by the standard
///   library's own normalizer, the one `String.==` and `<` use), escaped; canonically
///   equivalent strings get the same key;
/// - `data`, `codable`: the bytes, escaped; `uuid`: its 16 bytes.
///
/// Escaping (byte 0x00 becomes 0x00 0xFF, and 0x00 0x01 ends the value) makes variable-length
/// keys prefix-free, so a value key followed by a record id sorts by (value, id).
///
/// Two values have the same key exactly when a predicate finds them equal (with the NaN
/// exception above). Pure functions; safe from any thread.
package enum IndexKey {
    /// Value keys longer than this are stored cut to this many bytes (``stored(_:)``).
    package static let maximumStoredLength = 512

    /// The kind bytes, in the order of kinds.
    enum Kind: UInt8 {
        case null = 0, bool, int, double, string, data, date, uuid, codable
        /// Record references: relationships are never indexed, so no stored key has this kind;
        /// it only keeps the encoding total.
        case references
    }

    /// The key of `.null` (records lacking a value and having no default).
    package static let nullKey: [UInt8] = [Kind.null.rawValue]

    /// The full key of `value`.
    package static func encode(_ value: Value) -> [UInt8] {
        var key: [UInt8] = []
        append(value, to: &key)
        return key
    }

    /// Appends the full key of `value` to `key`.
    package static func append(_ value: Value, to key: inout [UInt8]) {
        switch value {
        case .null: key.append(Kind.null.rawValue)
        case .bool(let flag):
            key.append(Kind.bool.rawValue)
            key.append(flag ? 1 : 0)
        case .int(let number):
            key.append(Kind.int.rawValue)
            appendBigEndian(UInt64(bitPattern: number) ^ (1 << 63), to: &key)
        case .double(let number):
            key.append(Kind.double.rawValue)
            appendBigEndian(orderedBits(number), to: &key)
        case .date(let date):
            key.append(Kind.date.rawValue)
            appendBigEndian(orderedBits(date.timeIntervalSinceReferenceDate), to: &key)
        case .string(let string):
            key.append(Kind.string.rawValue)
            string._withNFCCodeUnits { appendEscaped($0, to: &key) }
            key.append(0)
            key.append(1)
        case .data(let bytes):
            key.append(Kind.data.rawValue)
            appendEscaped(bytes, to: &key)
        case .codable(let bytes):
            key.append(Kind.codable.rawValue)
            appendEscaped(bytes, to: &key)
        case .uuid(let uuid):
            key.append(Kind.uuid.rawValue)
            withUnsafeBytes(of: uuid.uuid) { key.append(contentsOf: $0) }
        case .references(let ids):
            key.append(Kind.references.rawValue)
            for id in ids { appendBigEndian(id, to: &key) }
        }
    }

    /// The form an index stores: the full key, cut to ``maximumStoredLength`` bytes.
    ///
    /// Cutting keeps the order (if `a ≤ b` then `stored(a) ≤ stored(b)`) and the stored forms
    /// stay prefix-free (a full key of at most 512 bytes is never a prefix of another key), so
    /// `stored ‖ id` keys still sort by (stored form, id). Values whose full keys share their
    /// first 512 bytes share a stored form: a lookup of such a value finds them all, and the
    /// caller re-checks the candidates' real values.
    package static func stored(_ key: [UInt8]) -> ArraySlice<UInt8> {
        key.prefix(maximumStoredLength)
    }

    /// Whether `key` is longer than its stored form.
    package static func isCut(_ key: [UInt8]) -> Bool { key.count > maximumStoredLength }

    /// An index entry: the stored form of a value key, then the record id as 8 big-endian bytes.
    package static func entry(_ key: [UInt8], id: UInt64) -> [UInt8] {
        var entry = [UInt8]()
        entry.reserveCapacity(min(key.count, maximumStoredLength) + 8)
        entry.append(contentsOf: stored(key))
        appendBigEndian(id, to: &entry)
        return entry
    }

    /// The record id at the end of an index entry (0 for fewer than 8 bytes, never stored).
    package static func recordID(ofEntry entry: some RandomAccessCollection<UInt8>) -> UInt64 {
        guard entry.count >= 8 else { return 0 }
        var id: UInt64 = 0
        for byte in entry.suffix(8) { id = id << 8 | UInt64(byte) }
        return id
    }

    /// Bits of a double whose unsigned order is the numeric order (see the type's comment).
    static func orderedBits(_ number: Double) -> UInt64 {
        if number.isNaN { return .max }
        let bits = (number == 0 ? 0.0 : number).bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    static func appendBigEndian(_ number: UInt64, to key: inout [UInt8]) {
        withUnsafeBytes(of: number.bigEndian) { key.append(contentsOf: $0) }
    }

    /// Appends `bytes` with 0x00 escaped as 0x00 0xFF, then the terminator 0x00 0x01.
    static func appendEscaped(_ bytes: [UInt8], to key: inout [UInt8]) {
        key.reserveCapacity(key.count + bytes.count + 2)
        for byte in bytes { appendEscaped(byte, to: &key) }
        key.append(0)
        key.append(1)
    }

    @inline(__always)
    static func appendEscaped(_ byte: UInt8, to key: inout [UInt8]) {
        key.append(byte)
        if byte == 0 { key.append(0xFF) }
    }

    /// Compares two byte strings: negative, zero or positive (a proper prefix sorts first).
    package static func compare(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Int {
        var left = a.makeIterator(), right = b.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?) where x != y: return x < y ? -1 : 1
            default: continue
            }
        }
    }
}
