#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Value {
    /// A total order on values, for sorting query results and index keys.
    ///
    /// - `null` sorts first, before every other value.
    /// - Values of different kinds sort by kind, in this fixed order: null, bool, int, double,
    ///   string, data, date, uuid, codable, references. In particular `.int` and `.double` are **not**
    ///   compared numerically: an attribute has one type, so its values share one kind.
    /// - Within a kind: `false < true`; integers numerically; doubles and dates by the IEEE-754
    ///   total order (`-NaN < -∞ < … < -0.0 < +0.0 < … < +∞ < NaN`), which agrees with the
    ///   bitwise equality of ``Value``; strings as Swift orders them (by Unicode scalar values of
    ///   their canonical composition, so canonically equivalent strings are equal); data,
    ///   codable bytes and UUIDs lexicographically by byte; references lexicographically by id.
    ///
    /// The order is consistent with `==`: exactly one of `a < b`, `a == b`, `b < a` holds.
    /// Use it as `values.sorted(by: Value.areInIncreasingOrder)`.
    public static func areInIncreasingOrder(_ lhs: Value, _ rhs: Value) -> Bool {
        lhs.compare(rhs) < 0
    }

    /// -1, 0 or 1 as `self` sorts before, equal to, or after `other` (see ``areInIncreasingOrder(_:_:)``).
    package func compare(_ other: Value) -> Int {
        switch (self, other) {
        case (.null, .null): return 0
        case (.bool(let a), .bool(let b)): return a == b ? 0 : (a ? 1 : -1)
        case (.int(let a), .int(let b)): return a == b ? 0 : (a < b ? -1 : 1)
        case (.double(let a), .double(let b)): return Self.totalOrder(a, b)
        case (.string(let a), .string(let b)): return a == b ? 0 : (a < b ? -1 : 1)
        case (.data(let a), .data(let b)), (.codable(let a), .codable(let b)): return Self.lexicographic(a, b)
        case (.references(let a), .references(let b)):
            for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        case (.date(let a), .date(let b)):
            return Self.totalOrder(a.timeIntervalSinceReferenceDate, b.timeIntervalSinceReferenceDate)
        case (.uuid(let a), .uuid(let b)):
            return withUnsafeBytes(of: a.uuid) { x in withUnsafeBytes(of: b.uuid) { y in Self.lexicographic(x, y) } }
        default:
            return kindRank < other.kindRank ? -1 : 1
        }
    }

    /// The position of this value's kind in the order across kinds.
    private var kindRank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int: 2
        case .double: 3
        case .string: 4
        case .data: 5
        case .date: 6
        case .uuid: 7
        case .codable: 8
        case .references: 9
        }
    }

    private static func totalOrder(_ a: Double, _ b: Double) -> Int {
        if a.bitPattern == b.bitPattern { return 0 }
        return a.isTotallyOrdered(belowOrEqualTo: b) ? -1 : 1
    }

    private static func lexicographic(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
}
