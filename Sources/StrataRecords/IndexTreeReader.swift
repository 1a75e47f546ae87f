import StrataPageLog
import StrataSchema

/// Reads one index tree in a snapshot. Thread-safe (a value over an immutable snapshot and a
/// thread-safe cache of decoded nodes).
package struct IndexTreeReader: Sendable {
    package let snapshot: Snapshot
    package let root: RecordTreeRoot
    package let cache: NodeCache

    package init(snapshot: Snapshot, root: RecordTreeRoot, cache: NodeCache) {
        self.snapshot = snapshot
        self.root = root
        self.cache = cache
    }

    /// Calls `body` with every entry ≥ `lower`, in order, until it returns false.
    package func scan(from lower: [UInt8], _ body: ([UInt8]) throws -> Bool) throws {
        try Self.scan(rootPageID: root.rootPageID, from: lower, load: { pageID in
            try cache.page(pageID, in: snapshot, make: { try CachedIndexNode(pageID: pageID, bytes: $0) }).node
        }, body)
    }

    /// Record ids of the entries whose values `range` may hold, in key order, until `body`
    /// returns false (see `IndexRange` for when candidates must be re-checked).
    package func scan(_ range: IndexRange, _ body: (UInt64) throws -> Bool) throws {
        try range.scan(using: scan(from:_:), body)
    }

    /// The scan shared by readers and writers: a stack of (node, next child) from the root
    /// down to the leaf holding `lower`; leaves are visited left to right from there.
    static func scan(rootPageID: UInt64, from lower: [UInt8], load: (UInt64) throws -> IndexNode,
                     _ body: ([UInt8]) throws -> Bool) throws {
        guard rootPageID != 0 else { return }
        var stack: [(pageID: UInt64, next: Int)] = [(rootPageID, -1)]
        while let top = stack.popLast() {
            guard stack.count < 64 else { throw RecordTreeError.corruptNode(pageID: top.pageID, reason: "index tree deeper than 64 levels") }
            let node = try load(top.pageID)
            if node.isLeaf {
                // Every key of later leaves is above `lower`: only the first leaf searches.
                var index = node.search(lower).index
                while index < node.count {
                    if try !body(node.keys[index]) { return }
                    index += 1
                }
                continue
            }
            let next = top.next >= 0 ? top.next : node.childIndex(for: lower)
            guard next < node.count else { continue }
            stack.append((top.pageID, next + 1))
            stack.append((node.children[next], -1))
        }
    }
}

/// A range of values of one indexed attribute: bounds optional, each inclusive or exclusive,
/// compared in `IndexKey` order (Swift predicate order: -0.0 equals +0.0; strings by their
/// canonical composition; NaN after +∞, so an unbounded upper end includes NaNs).
///
/// A scan returns *candidates*: exactly the records whose values lie in the range, except that
/// values with keys longer than `IndexKey.maximumStoredLength` (512) bytes are compared by
/// their first 512 key bytes, so records with such values near a bound may be returned
/// although out of range. Callers re-check every candidate with the real condition.
package struct IndexRange: Sendable, Equatable {
    package var lower: Value?
    package var lowerInclusive: Bool
    package var upper: Value?
    package var upperInclusive: Bool

    /// The range from `lower` to `upper` (nil: unbounded).
    package init(lower: Value? = nil, lowerInclusive: Bool = true, upper: Value? = nil, upperInclusive: Bool = true) {
        self.lower = lower
        self.lowerInclusive = lowerInclusive
        self.upper = upper
        self.upperInclusive = upperInclusive
    }

    /// Every value, null included.
    package static let all = IndexRange()

    /// The values equal to `value`.
    package static func equal(to value: Value) -> IndexRange { IndexRange(lower: value, upper: value) }

    /// Runs `scan` from the lower bound and passes the record id of every entry in range.
    func scan(using scan: ([UInt8], ([UInt8]) throws -> Bool) throws -> Void, _ body: (UInt64) throws -> Bool) throws {
        try scanEntries(using: scan) { id, _ in try body(id) }
    }

    /// Whether a key of `value` is never stored cut (so an entry in range is a record in range).
    var boundsAreWhole: Bool {
        !(lower.map { IndexKey.isCut(IndexKey.encode($0)) } ?? false) && !(upper.map { IndexKey.isCut(IndexKey.encode($0)) } ?? false)
    }

    /// `scan`, passing with each record id whether its entry's key may have been cut (stored
    /// at `IndexKey.maximumStoredLength` bytes: its value is then known only by that prefix).
    func scanEntries(using scan: ([UInt8], ([UInt8]) throws -> Bool) throws -> Void, _ body: (UInt64, Bool) throws -> Bool) throws {
        let lowerKey = lower.map(IndexKey.encode), upperKey = upper.map(IndexKey.encode)
        let lowerStored = lowerKey.map { Array(IndexKey.stored($0)) }, upperStored = upperKey.map { Array(IndexKey.stored($0)) }
        // A cut bound stands for every value sharing its first 512 bytes: it stays inclusive.
        let skipLower = !lowerInclusive && !(lowerKey.map(IndexKey.isCut) ?? true)
        let stopAtUpper = !upperInclusive && !(upperKey.map(IndexKey.isCut) ?? true)
        try withoutActuallyEscaping(body) { body in
            try scan(lowerStored ?? []) { entry in
                let value = Array(entry.dropLast(8))
                if let upperStored {
                    let order = IndexNode.compare(value, upperStored)
                    if order > 0 || (order == 0 && stopAtUpper) { return false }
                }
                if skipLower, let lowerStored, IndexNode.compare(value, lowerStored) == 0 { return true }
                return try body(IndexKey.recordID(ofEntry: entry), value.count >= IndexKey.maximumStoredLength)
            }
        }
    }
}
