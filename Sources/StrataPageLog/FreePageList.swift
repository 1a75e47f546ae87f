/// Page ids free for reuse. Kept as ranges, so ids that were never written — a large unused
/// span, or a span a damaged but checksummed checkpoint claims — take no memory per id.
/// Ids are handed out from the end of the list; recovery lists them so the lowest go first.
struct FreePageList: Equatable {
    private(set) var ranges: [Range<UInt64>] = []

    init(ranges: [Range<UInt64>] = []) {
        self.ranges = ranges.filter { !$0.isEmpty }
    }

    var isEmpty: Bool { ranges.isEmpty }

    mutating func insert(_ id: UInt64) { ranges.append(id..<(id + 1)) }

    mutating func insert(contentsOf ids: [UInt64]) {
        for id in ids.reversed() { insert(id) }
    }

    /// A free id, or nil when none is left.
    mutating func take() -> UInt64? {
        guard let last = ranges.popLast() else { return nil }
        if last.count > 1 { ranges.append((last.lowerBound + 1)..<last.upperBound) }
        return last.lowerBound
    }
}
