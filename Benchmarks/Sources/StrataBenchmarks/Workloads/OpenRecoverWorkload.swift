@_spi(Engine) import Strata
import Foundation

/// open-recover: the time `PageStore.open` takes after a crash. A writer process
/// (`RecoveryWriter`) appends pages in relaxed transactions, checkpointing only as the
/// default options do, until the store takes 200 MiB on disk (1 GiB with `--full`); it is
/// then killed with SIGKILL, and opening the store — choosing the superblock and replaying
/// the log written since the last checkpoint — is timed. No baseline.
enum OpenRecoverWorkload {
    static let workload = Workload(
        name: "open-recover",
        summary: "PageStore.open after the writing process was killed (SIGKILL)",
        run: run
    )

    /// How long the writer may take to reach the target size before it is killed anyway.
    private static let writerDeadlineSeconds = 120.0

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let targetBytes = UInt64(context.scale.pick(quick: 200 * ByteCount.mebibyte, full: ByteCount.gibibyte))
        let storePath = context.path("store")

        context.progress("writing until the store takes \(ByteCount.text(targetBytes)), then SIGKILL")
        let (storeBytes, writerSeconds) = try writeAndKill(storePath: storePath, targetBytes: targetBytes)

        sync()
        let (store, openSeconds) = try Stopwatch.time { try PageStore.open(at: storePath) }
        let report = store.recoveryReport
        let pageCount = store.statistics.pageCount
        // The writer's page ids are not known here. New ids are allocated densely above a
        // small reserved range, so this bound covers them.
        let verified = try store.verifyExistingPages(upTo: UInt64(pageCount) + 4096, against: RecordPageSet())
        try store.close()
        guard pageCount == 0 || verified > 0 else {
            throw BenchmarkError.verificationFailed("the store holds \(pageCount) pages but none of the probed ids exist")
        }

        let shortfall = storeBytes < targetBytes ? " (writer reached only this in \(Int(writerSeconds)) s)" : ""
        return WorkloadResult(
            workload: workload.name,
            records: pageCount,
            strataSeconds: openSeconds,
            baseline: nil,
            notes: "killed at \(ByteCount.text(storeBytes))\(shortfall); replayed \(ByteCount.text(report.replayedBytes))"
                + " in \(report.replayedTransactions) txns" + (report.tailWasTorn ? ", torn tail" : ""),
            extra: [
                ("replayed_tail_bytes", .int(Int64(clamping: report.replayedBytes))),
                ("replayed_transactions", .int(Int64(report.replayedTransactions))),
                ("tail_was_torn", .bool(report.tailWasTorn)),
                ("store_bytes", .int(Int64(clamping: storeBytes))),
                ("writer_seconds", .double(writerSeconds)),
                ("verified_pages", .int(Int64(verified))),
            ]
        )
    }

    /// Starts a writer on `storePath`, waits until the folder holds `targetBytes` (or the
    /// deadline passes) and kills it. Returns the folder's size after the kill and how long
    /// the writer ran. Throws when the writer stops on its own.
    private static func writeAndKill(storePath: String, targetBytes: UInt64) throws -> (storeBytes: UInt64, seconds: Double) {
        let writer = try SelfProcess(
            arguments: ["--run-writer", storePath, "--max-bytes", String(targetBytes * 16)],
            captureOutput: false
        )
        let stopwatch = Stopwatch()
        while FolderSize.bytes(at: storePath) < targetBytes, stopwatch.elapsedSeconds < writerDeadlineSeconds {
            guard writer.isRunning else {
                throw BenchmarkError.setupFailed("the writer \(writer.waitForExit().termination) before it was killed")
            }
            usleep(10_000)
        }
        try writer.send(signal: SIGKILL)
        let termination = writer.waitForExit().termination
        let seconds = stopwatch.elapsedSeconds
        guard case .killed(SIGKILL) = termination else {
            throw BenchmarkError.setupFailed("the writer \(termination) before it was killed")
        }
        return (FolderSize.bytes(at: storePath), seconds)
    }
}
