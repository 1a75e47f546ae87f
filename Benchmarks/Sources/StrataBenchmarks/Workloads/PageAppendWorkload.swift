@_spi(Engine) import Strata
import Foundation

/// page-append: 1 GiB (4 GiB with `--full`) of 16 KiB record pages appended through the
/// page log in relaxed transactions of 64 pages, then one checkpoint and close so all of
/// it is durable — against the "copy" baseline, the same bytes written to a plain file.
/// Both are timed in this process, one after the other, each from creating its file(s)
/// to its last sync. Afterwards a spread of pages is read back from both and compared.
enum PageAppendWorkload {
    static let workload = Workload(
        name: "page-append",
        summary: "append 16 KiB record pages through the page log vs. pwrite+fdatasync of the same bytes",
        run: run
    )

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let totalBytes = context.scale.pick(quick: ByteCount.gibibyte, full: 4 * ByteCount.gibibyte)
        let pageCount = totalBytes / RecordPageSet.pageSize
        let pageSet = RecordPageSet()
        let storePath = context.path("store")
        let copyPath = context.path("copy.bin")

        context.progress("appending \(ByteCount.text(totalBytes)) through the page log")
        sync()
        let (ids, strataSeconds) = try Stopwatch.time {
            try PageStore.createFilled(at: storePath, pageCount: pageCount, from: pageSet)
        }
        let logBytes = FolderSize.bytes(at: storePath)

        context.progress("writing the same bytes to a plain file")
        sync()
        let copySeconds = try Stopwatch.time {
            try CopyBaseline.write(pageCount: pageCount, from: pageSet, to: copyPath)
        }.seconds

        context.progress("reading back a sample of both")
        let store = try PageStore.open(at: storePath)
        let verified = try store.verifyPages(ids, against: pageSet)
        let storedPages = store.statistics.pageCount
        try store.close()
        guard storedPages == pageCount else {
            throw BenchmarkError.verificationFailed("the store holds \(storedPages) pages, \(pageCount) were written")
        }
        _ = try CopyBaseline.verify(pageCount: pageCount, against: pageSet, at: copyPath)

        return WorkloadResult(
            workload: workload.name,
            records: pageCount,
            strataSeconds: strataSeconds,
            baseline: .copy(seconds: copySeconds),
            notes: "\(ByteCount.text(totalBytes)) in \(PageStore.benchmarkPagesPerTransaction)-page relaxed txns"
                + " + checkpoint; \(ByteCount.text(logBytes)) on disk",
            extra: [
                ("bytes", .int(Int64(totalBytes))),
                ("strata_log_bytes", .int(Int64(clamping: logBytes))),
                ("page_size", .int(Int64(RecordPageSet.pageSize))),
                ("pages_per_transaction", .int(Int64(PageStore.benchmarkPagesPerTransaction))),
                ("verified_pages", .int(Int64(verified))),
            ]
        )
    }
}
