#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What to fetch: which records (a `#Predicate`), in which order, and how many — the
/// vocabulary of SwiftData's `FetchDescriptor`.
///
/// ```swift
/// var descriptor = FetchDescriptor<Person>(predicate: #Predicate { $0.note.contains("VIP") },
///                                          sortBy: [RecordSort(\.fullName)])
/// descriptor.fetchLimit = 20
/// ```
public struct FetchDescriptor<Record: PersistentRecord>: Sendable {
    /// Which records to return; all when nil. Evaluated on each record.
    public var predicate: Predicate<Record>?
    /// The order of the results, first key first; insertion order (by identifier) when empty
    /// and for ties.
    public var sortBy: [RecordSort<Record>]
    /// At most this many results, when set.
    public var fetchLimit: Int?
    /// Skip this many results first, when set.
    public var fetchOffset: Int?

    /// A descriptor; every parameter is optional.
    public init(predicate: Predicate<Record>? = nil, sortBy: [RecordSort<Record>] = [], fetchLimit: Int? = nil,
                fetchOffset: Int? = nil) {
        self.predicate = predicate
        self.sortBy = sortBy
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
    }
}

/// One key of a fetch's sort order: a property of the record and a direction. (Named so it
/// does not clash with Foundation's `SortDescriptor` in apps that import both.)
public struct RecordSort<Record>: Sendable {
    /// Forward (ascending) or reverse.
    public var order: SortOrder
    // Inlinable, so the app's compiler specializes the comparison for the record and property
    // types: unspecialized, each comparison looked up generic metadata (most of a sort's time).
    @usableFromInline let ascending: @Sendable (Record, Record) -> Bool?
    /// Reads the key of every record once, and returns a comparison of two records by their
    /// positions (`ascending` of records i and j): a sort then reads no key path per comparison.
    @usableFromInline let ascendingByPosition: @Sendable ([Record]) -> (Int, Int) -> Bool?

    /// Sorts by a comparable property. A floating-point NaN, which compares neither below nor
    /// above any number, sorts after every number (forward), NaNs tying among themselves — as
    /// an index orders them — so a sort is one total order.
    @inlinable
    public init<Value: Comparable & SendableMetatype>(_ keyPath: KeyPath<Record, Value> & Sendable, order: SortOrder = .forward) {
        self.order = order
        let floating = Value.self is any FloatingPoint.Type
        ascending = { a, b in
            let left = a[keyPath: keyPath], right = b[keyPath: keyPath]
            if floating, let nanOrder = RecordSortNaN.ascending(left != left, right != right) { return nanOrder }
            return left == right ? nil : left < right
        }
        ascendingByPosition = { records in
            let keys = records.map { $0[keyPath: keyPath] }
            let unordered = floating ? keys.map { $0 != $0 } : []
            return { i, j in
                if floating, let nanOrder = RecordSortNaN.ascending(unordered[i], unordered[j]) { return nanOrder }
                let left = keys[i], right = keys[j]
                return left == right ? nil : left < right
            }
        }
    }

    /// Sorts by an optional comparable property; nil sorts first (forward), a NaN after every
    /// number.
    @inlinable
    public init<Value: Comparable & SendableMetatype>(_ keyPath: KeyPath<Record, Value?> & Sendable, order: SortOrder = .forward) {
        self.order = order
        let floating = Value.self is any FloatingPoint.Type
        ascending = { a, b in
            switch (a[keyPath: keyPath], b[keyPath: keyPath]) {
            case (nil, nil): nil
            case (nil, _): true
            case (_, nil): false
            case (let left?, let right?):
                if floating, let nanOrder = RecordSortNaN.ascending(left != left, right != right) { nanOrder }
                else { left == right ? nil : left < right }
            }
        }
        ascendingByPosition = { records in
            let keys = records.map { $0[keyPath: keyPath] }
            return { i, j in
                switch (keys[i], keys[j]) {
                case (nil, nil): nil
                case (nil, _): true
                case (_, nil): false
                case (let left?, let right?):
                    if floating, let nanOrder = RecordSortNaN.ascending(left != left, right != right) { nanOrder }
                    else { left == right ? nil : left < right }
                }
            }
        }
    }

    /// Whether `a` goes before `b` under this key, or nil when they tie.
    func precedes(_ a: Record, _ b: Record) -> Bool? {
        guard let ascending = ascending(a, b) else { return nil }
        return order == .forward ? ascending : !ascending
    }
}

/// How NaNs sort (`RecordSort`): after every number.
@usableFromInline
enum RecordSortNaN {
    /// Whether a key goes before another given which of them are NaN (`leftNaN`, `rightNaN`):
    /// nil when neither is (compare the values), a tie when both are.
    @inlinable
    static func ascending(_ leftNaN: Bool, _ rightNaN: Bool) -> Bool?? {
        guard leftNaN || rightNaN else { return nil }
        return .some(leftNaN == rightNaN ? nil : rightNaN)
    }
}

extension Array {
    /// Sorts records by `keys`, then by identifier: each key is read once per record (not once
    /// per comparison), and the records are moved once, to their final places.
    mutating func sort<Record>(by keys: [RecordSort<Record>]) where Element == Identified<Record> {
        let records = map(\.record)
        let ids = map(\.id.rawValue)  // ties: not generic
        let comparisons = keys.map { key in (key.order == .forward, key.ascendingByPosition(records)) }
        var order = Array<Int>(indices)
        order.sort { i, j in
            for (forward, ascending) in comparisons {
                if let ascending = ascending(i, j) { return forward ? ascending : !ascending }
            }
            return ids[i] < ids[j]
        }
        self = order.map { self[$0] }
    }
}
