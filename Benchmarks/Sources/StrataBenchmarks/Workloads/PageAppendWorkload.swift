@_spi(Engine) import Strata
import Foundation

/// page-append: 1 GiB (4 GiB with `--full`) of 16 KiB record pages appended through the
/// page log in relaxed transactions of 64 pages, then one checkpoint and close so all of
/// it is durable — against the "copy" baseline: as many bytes as Strata's log holds on disk
/// (its pages compressed) written to a plain file with pwrite and one fdatasync, the
/// machine's own limit for putting those bytes on disk. Each run is a fresh process, timed
/// from creating its file(s) to its last sync, and the sides alternate (`AlternatingRuns`;
/// Strata goes first in the first round, which gives the copy its byte count). After each
/// run a spread of pages is read back and compared (not timed).
enum PageAppendWorkload {
    static let workload = Workload(
        name: "page-append",
        summary: "append 16 KiB record pages through the page log vs. pwrite+fdatasync of as many bytes as the log holds",
        rows: run,
        parts: [
            AlternatingRuns.timedPartName("strata"): runStrata,
            AlternatingRuns.timedPartName("copy"): runCopy,
        ]
    )

    /// Alternating pairs.
    static let rounds = 3

    static func totalBytes(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: ByteCount.gibibyte, full: 4 * ByteCount.gibibyte)
    }

    static func run(_ context: WorkloadContext) throws -> [WorkloadResult] {
        let totalBytes = totalBytes(context.scale)
        let pageCount = totalBytes / RecordPageSet.pageSize
        var logBytes: UInt64 = 0, copyBytes: UInt64 = 0
        let runs = try AlternatingRuns.run(context, rounds: rounds, baselines: ["copy"]) { side, report in
            if side == "strata" { logBytes = try report.uint64("store_bytes") } else { copyBytes = try report.uint64("store_bytes") }
        }
        var rows = try runs.rows(
            workload: context.workloadName, records: pageCount,
            notes: "\(ByteCount.text(totalBytes)) of pages in \(PageStore.benchmarkPagesPerTransaction)-page relaxed txns + checkpoint;"
                + " copy writes the log's \(ByteCount.text(logBytes))",
            extra: [
                ("bytes", .int(Int64(totalBytes))),
                ("strata_log_bytes", .int(Int64(clamping: logBytes))),
                ("copy_bytes", .int(Int64(clamping: copyBytes))),
                ("page_size", .int(Int64(RecordPageSet.pageSize))),
                ("pages_per_transaction", .int(Int64(PageStore.benchmarkPagesPerTransaction))),
            ],
            settings: { _ in [("write", .string("pwrite in 1 MiB writes, one fdatasync")), ("bytes", .string("as many as Strata's log on disk"))] },
            storeBytes: { $0 == "strata" ? logBytes : copyBytes }
        )
        let verified = try runs.reports["strata"]?.last?.int("verified_pages") ?? 0
        for index in rows.indices { rows[index].extra.append(("verified_pages", .int(Int64(verified)))) }
        return rows
    }

    /// Part "time-strata": appends the pages through the page log (timed), checks a spread of
    /// them (not timed), and leaves the log's size for the copy.
    @Sendable static func runStrata(_ context: WorkloadContext) throws -> JSONValue {
        let pageCount = totalBytes(context.scale) / RecordPageSet.pageSize
        let pageSet = RecordPageSet()
        let storePath = context.path("store")
        try? FileManager.default.removeItem(atPath: storePath)
        sync()
        let (ids, seconds) = try Stopwatch.time { try PageStore.createFilled(at: storePath, pageCount: pageCount, from: pageSet) }
        let logBytes = FolderSize.bytes(at: storePath)
        let store = try PageStore.open(at: storePath)
        let verified = try store.verifyPages(ids, against: pageSet)
        let storedPages = store.statistics.pageCount
        try store.close()
        guard storedPages == pageCount else {
            throw BenchmarkError.verificationFailed("the store holds \(storedPages) pages, \(pageCount) were written")
        }
        try Data(String(logBytes).utf8).write(to: URL(fileURLWithPath: context.path("strata-log-bytes")))
        return .object([("seconds", .double(seconds)), ("store_bytes", .int(Int64(clamping: logBytes))),
                        ("verified_pages", .int(Int64(verified)))])
    }

    /// Part "time-copy": writes as many whole pages as Strata's log holds bytes (timed), then
    /// reads a spread of them back.
    @Sendable static func runCopy(_ context: WorkloadContext) throws -> JSONValue {
        let sizeFile = context.path("strata-log-bytes")
        guard let text = try? String(contentsOfFile: sizeFile, encoding: .utf8), let logBytes = Int(text) else {
            throw BenchmarkError.setupFailed("the copy needs Strata's log size in \(sizeFile), written by part time-strata")
        }
        let pageCount = (logBytes + RecordPageSet.pageSize - 1) / RecordPageSet.pageSize
        let pageSet = RecordPageSet()
        let copyPath = context.path("copy.bin")
        try? FileManager.default.removeItem(atPath: copyPath)
        sync()
        let seconds = try Stopwatch.time { try CopyBaseline.write(pageCount: pageCount, from: pageSet, to: copyPath) }.seconds
        _ = try CopyBaseline.verify(pageCount: pageCount, against: pageSet, at: copyPath)
        return .object([("seconds", .double(seconds)), ("store_bytes", .int(Int64(pageCount * RecordPageSet.pageSize)))])
    }
}
