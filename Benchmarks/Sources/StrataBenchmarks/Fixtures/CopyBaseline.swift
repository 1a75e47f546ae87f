import Foundation

/// The "copy" baseline: the same pages a workload gives Strata, written back to back to one
/// plain file with `pwrite` in 1 MiB writes and made durable with one `fdatasync` — the
/// machine's own limit for putting those bytes on disk.
enum CopyBaseline {
    /// The size of each write.
    static let writeSize = 1 << 20

    /// Writes `pageCount` pages of `pageSet` (page X of the file is `pageSet.page(at: X)`)
    /// to a new file at `path`, syncs it and closes it.
    static func write(pageCount: Int, from pageSet: RecordPageSet, to path: String) throws {
        let pagesPerWrite = writeSize / RecordPageSet.pageSize
        // Each write is one slice of the set's contiguous bytes, so the set must hold a whole
        // number of writes.
        precondition(pageSet.count % pagesPerWrite == 0, "page set size must be a multiple of \(pagesPerWrite)")
        let file = try RawFile(path: path, truncate: true)
        try pageSet.contiguousBytes.withUnsafeBytes { setBytes in
            var page = 0
            while page < pageCount {
                let pages = min(pagesPerWrite, pageCount - page)
                let start = (page % pageSet.count) * RecordPageSet.pageSize
                let slice = UnsafeRawBufferPointer(rebasing: setBytes[start..<start + pages * RecordPageSet.pageSize])
                try file.write(slice, at: UInt64(page) * UInt64(RecordPageSet.pageSize))
                page += pages
            }
        }
        try file.sync()
        try file.close()
    }

    /// Reads back a spread of the file's pages and checks them against `pageSet`. Returns
    /// how many pages were compared.
    static func verify(pageCount: Int, against pageSet: RecordPageSet, at path: String, sampleCount: Int = 512) throws -> Int {
        let file = try RawFile(path: path, truncate: false)
        let sample = Sample.evenlySpread(count: sampleCount, in: pageCount)
        for page in sample {
            let bytes = try file.read(count: RecordPageSet.pageSize, at: UInt64(page) * UInt64(RecordPageSet.pageSize))
            let expected = pageSet.page(at: UInt64(page))
            guard bytes == expected else {
                throw BenchmarkError.verificationFailed("copy file page \(page): \(Sample.firstDifference(bytes, expected))")
            }
        }
        try file.close()
        return sample.count
    }
}
