/// A fixed set of distinct pages whose bytes look like record pages — the reference
/// workload's `Person` rows as text, "Last123, First456;created=…;note=…|" — so they
/// compress about as well as real data (≈2× with LZ4). Generated once, before any timing,
/// from a seed; workloads cycle through them.
///
/// The rule every workload uses: the page with id X (or at position X of a plain file)
/// holds `page(at: X)`, i.e. page X modulo the set's size. That is how data read back is
/// checked without keeping a copy of it.
struct RecordPageSet: Sendable {
    /// The size of every page: 16 KiB.
    static let pageSize = 16 * 1024
    /// The seed of the standard set ("STRATA").
    static let standardSeed: UInt64 = 0x5354_5241_5441

    /// The pages, each `pageSize` bytes.
    let pages: [[UInt8]]
    /// The same pages back to back, for writing many at once.
    let contiguousBytes: [UInt8]

    /// Generates `count` pages from `seed`.
    init(count: Int = 256, seed: UInt64 = standardSeed) {
        precondition(count > 0, "a page set needs at least one page")
        var generator = SplitMix64(seed: seed)
        pages = (0..<count).map { _ in Self.makePage(using: &generator) }
        contiguousBytes = pages.flatMap { $0 }
    }

    var count: Int { pages.count }

    /// The page for id or position `index` (taken modulo the set's size).
    func page(at index: UInt64) -> [UInt8] {
        pages[Int(index % UInt64(pages.count))]
    }

    private static let words = [
        "lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do",
        "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna", "aliqua", "enim",
        "ad", "minim", "veniam", "quis", "nostrud",
    ]

    private static func makePage(using generator: inout SplitMix64) -> [UInt8] {
        var page: [UInt8] = []
        page.reserveCapacity(pageSize + 160)
        while page.count < pageSize {
            let number = UInt64.random(in: 0..<1_000_000, using: &generator)
            let first = UInt64.random(in: 0..<1_000, using: &generator)
            let createdAt = 1_700_000_000 + UInt64.random(in: 0..<50_000_000, using: &generator)
            var note = ""
            while note.utf8.count < 60 {
                note += (words.randomElement(using: &generator) ?? "lorem") + " "
            }
            page.append(contentsOf: "Last\(number), First\(first);created=\(createdAt);note=\(note)|".utf8)
        }
        return Array(page.prefix(pageSize))
    }
}
