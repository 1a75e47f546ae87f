@_spi(Engine) import Strata

extension PageStore {
    /// How many pages the benchmarks write per transaction.
    static let benchmarkPagesPerTransaction = 64

    /// Writes `count` new pages in transactions of `pagesPerTransaction` pages, each
    /// committed with `durability`. The page with id X gets `pageSet.page(at: X)`.
    /// Returns the new pages' ids in the order they were written.
    func appendPages(
        count: Int,
        from pageSet: RecordPageSet,
        pagesPerTransaction: Int = benchmarkPagesPerTransaction,
        durability: Durability
    ) throws -> [UInt64] {
        var ids: [UInt64] = []
        ids.reserveCapacity(count)
        while ids.count < count {
            let batch = min(pagesPerTransaction, count - ids.count)
            let written = try write(durability: durability) { transaction in
                try (0..<batch).map { _ in
                    let id = try transaction.allocatePageID()
                    try transaction.write(pageID: id, bytes: pageSet.page(at: id))
                    return id
                }
            }
            ids.append(contentsOf: written)
        }
        return ids
    }

    /// Creates a store at `path` holding `count` pages of `pageSet`, written in relaxed
    /// transactions, then checkpointed and closed. Returns the pages' ids.
    static func createFilled(
        at path: String, pageCount count: Int, from pageSet: RecordPageSet, options: Options = Options()
    ) throws -> [UInt64] {
        let store = try PageStore.open(at: path, options: options)
        let ids = try store.appendPages(count: count, from: pageSet, durability: .relaxed)
        try store.checkpoint()
        try store.close()
        return ids
    }

    /// Creates a store at `path` whose files take at least `storeBytes` on disk (pages
    /// compress, so that takes more bytes of pages), written in relaxed transactions, then
    /// checkpointed and closed. Returns the pages' ids.
    static func createFilled(
        at path: String, storeBytes: UInt64, from pageSet: RecordPageSet, options: Options = Options()
    ) throws -> [UInt64] {
        let store = try PageStore.open(at: path, options: options)
        var ids: [UInt64] = []
        while FolderSize.bytes(at: path) < storeBytes {
            // 64 MiB of pages between looks at the folder.
            ids += try store.appendPages(count: 4096, from: pageSet, durability: .relaxed)
        }
        try store.checkpoint()
        try store.close()
        return ids
    }
}
