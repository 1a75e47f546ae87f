@_spi(Engine) import Strata
import Dispatch
import Foundation
import Synchronization

/// group-commit: 1,000 durable commits of one 1 KiB page each, made by 4 threads at once,
/// against the same 1,000 commits made by one thread (baseline `strata-1-thread`). Every
/// durable commit waits for an fdatasync; concurrent committers share them, so the 4-thread
/// run should need fewer syncs and less time. `syncs_per_commit` shows how many were shared.
enum GroupCommitWorkload {
    static let workload = Workload(
        name: "group-commit",
        summary: "1,000 durable one-page commits from 4 threads vs. from 1 thread",
        run: run
    )

    static let commits = 1_000
    static let threads = 4

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let page = [UInt8](repeating: 0x5A, count: 1024)
        context.progress("\(commits) durable commits from one thread")
        let single = try measure(at: context.path("single"), threads: 1, page: page)
        context.progress("\(commits) durable commits from \(threads) threads")
        let concurrent = try measure(at: context.path("concurrent"), threads: threads, page: page)
        return WorkloadResult(
            workload: workload.name,
            records: commits,
            strataSeconds: concurrent.seconds,
            baseline: WorkloadResult.Baseline(name: "strata-1-thread", seconds: single.seconds),
            notes: "\(threads) threads: \(concurrent.syncs) syncs for \(commits) commits; 1 thread: \(single.syncs) syncs",
            extra: [
                ("threads", .int(Int64(threads))),
                ("syncs_per_commit", .double(Double(concurrent.syncs) / Double(commits))),
                ("baseline_syncs_per_commit", .double(Double(single.syncs) / Double(commits))),
            ]
        )
    }

    /// Time and fdatasync calls of `commits` durable commits spread over `threads` threads;
    /// checks afterwards that every committed page is there.
    static func measure(at path: String, threads: Int, page: [UInt8]) throws -> (seconds: Double, syncs: Int) {
        var options = PageStore.Options()
        options.automaticCompaction = false
        let store = try PageStore.open(at: path, options: options)
        let syncsBefore = store.statistics.syncs
        let failures = Mutex<[String]>([])
        let ids = Mutex<[UInt64]>([])
        let perThread = commits / threads
        let seconds = Stopwatch.time {
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<perThread {
                    do {
                        let id = try store.write(durability: .durable) { transaction in
                            let id = try transaction.allocatePageID()
                            try transaction.write(pageID: id, bytes: page)
                            return id
                        }
                        ids.withLock { $0.append(id) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }.seconds
        let syncs = store.statistics.syncs - syncsBefore
        if let failure = failures.withLock({ $0.first }) { throw BenchmarkError.verificationFailed("a commit failed: \(failure)") }
        for id in ids.withLock({ $0 }) where try store.read(pageID: id) != page {
            throw BenchmarkError.verificationFailed("page \(id) does not hold what was committed")
        }
        try store.close()
        return (seconds, syncs)
    }
}
