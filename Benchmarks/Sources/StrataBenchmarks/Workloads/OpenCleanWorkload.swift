@_spi(Engine) import Strata
import Foundation

/// open-clean: the time `PageStore.open` takes on a cleanly closed store whose files take
/// 1 GiB (4 GiB with `--full`) — what an app pays at launch. The store is built first (not
/// timed), then opened 5 times (11 with `--full`), closing in between (not timed); the
/// median counts. The files are in the page cache, as they are for an app relaunched soon
/// after. No baseline.
enum OpenCleanWorkload {
    static let workload = Workload(
        name: "open-clean",
        summary: "PageStore.open on a cleanly closed store (median of several opens)",
        run: run
    )

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let targetBytes = UInt64(context.scale.pick(quick: ByteCount.gibibyte, full: 4 * ByteCount.gibibyte))
        let openCount = context.scale.pick(quick: 5, full: 11)
        let pageSet = RecordPageSet()
        let storePath = context.path("store")

        context.progress("creating a store of \(ByteCount.text(targetBytes)) (not timed)")
        let ids = try PageStore.createFilled(at: storePath, storeBytes: targetBytes, from: pageSet)
        let storeBytes = FolderSize.bytes(at: storePath)

        context.progress("opening it \(openCount) times")
        sync()
        var openSeconds: [Double] = []
        var replayedBytes: UInt64 = 0
        for _ in 0..<openCount {
            let (store, seconds) = try Stopwatch.time { try PageStore.open(at: storePath) }
            openSeconds.append(seconds)
            replayedBytes = max(replayedBytes, store.recoveryReport.replayedBytes)
            try store.close()
        }

        let store = try PageStore.open(at: storePath)
        let verified = try store.verifyPages(ids, against: pageSet)
        try store.close()

        let median = Measurements.median(openSeconds)
        return WorkloadResult(
            workload: workload.name,
            records: ids.count,
            strataSeconds: median,
            baseline: nil,
            notes: "median of \(openCount) opens of \(ByteCount.text(storeBytes))"
                + " (\(ByteCount.text(ids.count * RecordPageSet.pageSize)) of pages, warm cache);"
                + " \(ByteCount.text(replayedBytes)) replayed",
            extra: [
                ("store_bytes", .int(Int64(clamping: storeBytes))),
                ("open_seconds", .array(openSeconds.map { .double($0) })),
                ("replayed_tail_bytes", .int(Int64(clamping: replayedBytes))),
                ("verified_pages", .int(Int64(verified))),
            ]
        )
    }
}
