import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// A seeded workload mixing page writes, frees, aborted transactions, durable and relaxed
/// commits, checkpoints, compaction and clean reopen — with a model of the state after
/// every commit, so a test can check what recovery returns after a crash at any point.
struct CrashWorkload {
    struct Abort: Error {}

    let seed: UInt64
    let transactions: Int
    let options: PageLogOptions

    /// `states[k]`: the store's pages after the k-th commit that returned.
    private(set) var states: [[UInt64: [UInt8]]] = [[:]]
    /// The state of a commit whose call failed: it may or may not have happened.
    private(set) var inDoubt: [UInt64: [UInt8]]?
    /// Index in `states` of the newest state known durable (a durable commit, a checkpoint,
    /// a compaction or a close returned after it).
    private(set) var lastDurable = 0
    /// The first error the workload hit, which ended it.
    private(set) var error: Error?
    /// The log, still open, when the workload ended (nil if open failed or after an error in reopen).
    private(set) var log: PageLog?
    /// Invariant violations seen after steps of a run without faults (see `checkInvariants`).
    private(set) var invariantProblems: [String] = []
    /// Check invariants after every step (for runs without injected faults).
    var checksInvariants = false

    init(seed: UInt64, transactions: Int, options: PageLogOptions = smallOptions()) {
        self.seed = seed
        self.transactions = transactions
        self.options = options
    }

    mutating func run(on fs: MemoryFileSystem) {
        var random = SeededRandom(seed: seed)
        do {
            var log = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
            self.log = log
            var current: [UInt64: [UInt8]] = [:]
            for step in 0..<transactions {
                if checksInvariants {
                    invariantProblems += log.checkInvariants().map { "step \(step): \($0)" }
                }
                if step % 23 == 22 {
                    try log.checkpoint()
                    lastDurable = states.count - 1
                    continue
                }
                if step % 41 == 40 {
                    try log.compact(targetAmplification: 1.0)
                    lastDurable = states.count - 1
                    continue
                }
                if step % 67 == 66 {
                    self.log = nil
                    try log.close()
                    lastDurable = states.count - 1
                    log = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
                    self.log = log
                    continue
                }
                let durable = Int.random(in: 0..<10, using: &random) < 3
                let abort = Int.random(in: 0..<20, using: &random) == 0
                var next = current
                do {
                    try log.write(durability: durable ? .durable : .relaxed) { txn in
                        for _ in 0..<Int.random(in: 1...4, using: &random) {
                            let existing = Array(next.keys).sorted()
                            switch Int.random(in: 0..<10, using: &random) {
                            case 0..<4:
                                let id = try txn.allocatePageID()
                                let bytes = randomPage(&random, maximum: 1500)
                                try txn.write(id, entityID: UInt32(id % 5), schemaVersion: 1, bytes: bytes)
                                next[id] = bytes
                            case 4..<8 where !existing.isEmpty:
                                let id = existing.randomElement(using: &random)!
                                let bytes = randomPage(&random, maximum: 1500)
                                try txn.write(id, entityID: UInt32(id % 5), schemaVersion: 2, bytes: bytes)
                                next[id] = bytes
                            case 8 where !existing.isEmpty:
                                let id = existing.randomElement(using: &random)!
                                try txn.free(id)
                                next[id] = nil
                            default:
                                let bytes = randomPage(&random, maximum: 100)
                                try txn.write(3, bytes: bytes)  // a fixed page, as layers above use them
                                next[3] = bytes
                            }
                        }
                        if abort { throw Abort() }
                    }
                } catch is Abort {
                    continue
                } catch {
                    if next != current { inDoubt = next }
                    throw error
                }
                if next != current {
                    states.append(next)
                    current = next
                    if durable { lastDurable = states.count - 1 }
                }
            }
        } catch {
            self.error = error
        }
    }

    /// Whether `recovered` is an acceptable state after a crash: a committed state no older
    /// than the last durable one (or the commit that was in flight).
    func accepts(_ recovered: [UInt64: [UInt8]]) -> Int? {
        if let inDoubt, recovered == inDoubt { return states.count }
        for index in stride(from: states.count - 1, through: lastDurable, by: -1) where states[index] == recovered {
            return index
        }
        return nil
    }
}
