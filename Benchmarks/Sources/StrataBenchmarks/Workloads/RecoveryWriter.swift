@_spi(Engine) import Strata
import Foundation

/// The writer role of open-recover (`--run-writer PATH [--max-bytes N]`): opens or creates
/// the store at PATH with the default options and appends pages in relaxed transactions of
/// 64 pages until it is killed. It never checkpoints or closes by itself, so the store is
/// left as a crash leaves it.
///
/// So that it never runs on by accident, it stops (exit status 3) after `--max-bytes` of
/// pages, and (exit status 4) when the process that started it has gone.
enum RecoveryWriter {
    static func run(storePath: String, byteLimit: UInt64?) -> Int32 {
        let parent = getppid()
        let limit = byteLimit ?? UInt64(16 * ByteCount.gibibyte)
        let batchBytes = UInt64(PageStore.benchmarkPagesPerTransaction * RecordPageSet.pageSize)
        do {
            let pageSet = RecordPageSet()
            let store = try PageStore.open(at: storePath)
            var written: UInt64 = 0
            while written < limit {
                guard getppid() == parent else {
                    StandardError.write("StrataBenchmarks writer: the workload process has gone; stopping\n")
                    return 4
                }
                _ = try store.appendPages(
                    count: PageStore.benchmarkPagesPerTransaction, from: pageSet, durability: .relaxed)
                written += batchBytes
            }
            StandardError.write("StrataBenchmarks writer: wrote \(ByteCount.text(written)) without being killed; stopping\n")
            return 3
        } catch {
            StandardError.write("StrataBenchmarks writer: \(error)\n")
            return 1
        }
    }
}
