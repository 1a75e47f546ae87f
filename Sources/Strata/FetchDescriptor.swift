import FoundationEssentials

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
    private let ascending: @Sendable (Record, Record) -> Bool?

    /// Sorts by a comparable property.
    public init<Value: Comparable & SendableMetatype>(_ keyPath: KeyPath<Record, Value> & Sendable, order: SortOrder = .forward) {
        self.order = order
        ascending = { a, b in
            let left = a[keyPath: keyPath], right = b[keyPath: keyPath]
            return left == right ? nil : left < right
        }
    }

    /// Sorts by an optional comparable property; nil sorts first (forward).
    public init<Value: Comparable & SendableMetatype>(_ keyPath: KeyPath<Record, Value?> & Sendable, order: SortOrder = .forward) {
        self.order = order
        ascending = { a, b in
            switch (a[keyPath: keyPath], b[keyPath: keyPath]) {
            case (nil, nil): nil
            case (nil, _): true
            case (_, nil): false
            case (let left?, let right?): left == right ? nil : left < right
            }
        }
    }

    /// Whether `a` goes before `b` under this key, or nil when they tie.
    func precedes(_ a: Record, _ b: Record) -> Bool? {
        guard let ascending = ascending(a, b) else { return nil }
        return order == .forward ? ascending : !ascending
    }
}
