#if canImport(Glibc)
import Glibc
#endif
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// Small segments and checkpoint intervals so a few hundred transactions exercise segment
/// rolls, checkpoints and compaction.
func smallOptions() -> PageLogOptions {
    var options = PageLogOptions()
    options.segmentSize = 16 << 10
    options.checkpointInterval = 24 << 10
    options.automaticCompaction = false
    options.writeBufferSize = 4 << 10
    options.compactionMinimumBytes = 0
    options.spaceReserve = 64 << 10
    return options
}

let storePath = "/store"

/// Waits until `log`'s background compaction is idle and, asked once more (as the next commit
/// would ask), finds nothing to do: compaction runs in the background and may lag the last writes.
func waitForBackgroundCompaction(_ log: PageLog) {
    for _ in 0..<10 {
        while log.backgroundCompactionScheduled.load(ordering: .acquiring) { usleep(1000) }
        log.scheduleCompactionIfNeeded()
        if !log.backgroundCompactionScheduled.load(ordering: .acquiring) { break }
    }
}

/// Every page of the latest state, as id → bytes.
func contents(of log: PageLog) throws -> [UInt64: [UInt8]] {
    let snapshot = try log.snapshot()
    var result: [UInt64: [UInt8]] = [:]
    for id in try snapshot.pageIDs() {
        result[id] = try snapshot.read(id)?.bytes
    }
    return result
}

/// A page payload: compressible or random, of a random size.
func randomPage(_ random: inout SeededRandom, maximum: Int = 3000) -> [UInt8] {
    let size = Int.random(in: 0...maximum, using: &random)
    return Bool.random(using: &random) ? random.recordLikeBytes(size) : random.bytes(size)
}

extension PageLogError {
    var isCorruption: Bool {
        if case .corruption = self { return true }
        return false
    }
}
