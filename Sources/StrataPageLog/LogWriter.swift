import StrataFormat
import StrataIO

/// Bytes written to a segment and bytes of it the current state still uses.
struct SegmentUsage: Equatable {
    var totalBytes: UInt64
    var liveBytes: UInt64
}

/// A segment emptied by compaction, waiting until nothing can need it.
struct RetiredSegment {
    var segment: UInt64
    /// Deletable once both superblock slots have an epoch ≥ this.
    var epoch: UInt64
    /// Deletable once no snapshot older than this LSN is open.
    var lsn: UInt64
}

/// The writer's state: the active segment and its write buffer, the head page table, and
/// the bookkeeping checkpoints and compaction need.
///
/// Thread-safety: touched only while `PageLog.writerLock` is held (one writer at a time).
final class LogWriter: @unchecked Sendable {
    var activeSegment: UInt64
    var activeFile: any StorageFile
    /// Bytes of the active segment already handed to the file system.
    var flushedOffset: UInt64
    /// Where the active segment's file ends when the writer extended it with zeros ahead of
    /// the log for durable commits (invariant 35); at most the written end when it did not.
    var preallocatedEnd: UInt64
    /// Whether the active segment's file may hold zeros past `flushedOffset` (preallocated,
    /// or a preallocation that failed part way): its roll and `close` cut them.
    var mayHaveZeroTail = false
    /// Whether this instance wrote zeros ahead (only then does `close` cut them: a store
    /// opened and closed without writing keeps every byte as it found it).
    var wroteZerosAhead = false
    /// Set when a preallocation failed: no more are tried in this segment.
    var preallocationStopped = false
    /// Bytes appended after `flushedOffset`, not yet written.
    var buffer: [UInt8] = []
    /// The compression state frames are compressed with (nil if it could not be allocated:
    /// each frame then clears a state of its own).
    let compressor = LZ4Compressor()

    /// The committed page table (what the next transaction starts from).
    var table: PageTable
    var lastLSN: UInt64
    var nextLSN: UInt64
    var nextPageID: UInt64
    /// Freed page ids available for reuse.
    var freePageIDs: FreePageList
    var usage: [UInt64: SegmentUsage]
    /// Where each page table chunk was last checkpointed.
    var chunkLocations: [PageLocation]
    var dirtyChunks: Set<Int>
    var bytesSinceCheckpoint: UInt64 = 0
    /// Bytes of the segments deleted since the space reserve was last refilled (invariant 33).
    var freedSinceRefill: UInt64 = 0
    var superblock: Superblock
    var superblockFile: any StorageFile
    var rootAddress: FrameAddress
    var retired: [RetiredSegment] = []

    init(activeSegment: UInt64, activeFile: any StorageFile, flushedOffset: UInt64, table: PageTable, lastLSN: UInt64,
         nextLSN: UInt64, nextPageID: UInt64, freePageIDs: FreePageList, usage: [UInt64: SegmentUsage],
         chunkLocations: [PageLocation], dirtyChunks: Set<Int>, superblock: Superblock, superblockFile: any StorageFile,
         rootAddress: FrameAddress) {
        self.activeSegment = activeSegment
        self.activeFile = activeFile
        self.flushedOffset = flushedOffset
        preallocatedEnd = flushedOffset
        self.table = table
        self.lastLSN = lastLSN
        self.nextLSN = nextLSN
        self.nextPageID = nextPageID
        self.freePageIDs = freePageIDs
        self.usage = usage
        self.chunkLocations = chunkLocations
        self.dirtyChunks = dirtyChunks
        self.superblock = superblock
        self.superblockFile = superblockFile
        self.rootAddress = rootAddress
    }

    /// The logical end of the active segment (flushed bytes plus buffered bytes).
    var writeOffset: UInt64 { flushedOffset + UInt64(buffer.count) }

    var endPosition: LogPosition { LogPosition(segment: activeSegment, offset: writeOffset) }

    /// Materializes chunk `index` of the head table if it is pending (invariant 16) and lists
    /// its free ids — absent, below `freeBelow` (default: the next page id), not among
    /// `written` (pages the committing transaction writes there). A committing transaction
    /// passes the next page id it started with: ids it allocated itself are not listed (if it
    /// fails, `abandon` moves the next page id back below them).
    func materialize(_ index: Int, written: [UInt64: PageLocation] = [:], freeBelow: UInt64? = nil) throws {
        guard let entries = try table.materialize(index) else { return }
        let base = UInt64(index * PageTable.chunkEntries)
        let upper = min(freeBelow ?? nextPageID, base + UInt64(PageTable.chunkEntries))
        var id = max(PageLog.firstAllocatablePageID, base)
        var free: [UInt64] = []
        while id < upper {
            if (entries.isEmpty || entries[Int(id - base)].isNone) && written[id] == nil { free.append(id) }
            id += 1
        }
        freePageIDs.insert(contentsOf: free)
    }

    /// Materializes every pending chunk of the head table.
    func materializeAll() throws {
        for index in 0..<table.chunkCount where table.isPending(index) { try materialize(index) }
    }

    /// Marks the frame at `location` live and the one it replaces dead.
    func replaceLive(old: PageLocation, new: PageLocation) {
        if !old.isNone, var entry = usage[UInt64(old.segment)] {
            entry.liveBytes -= min(entry.liveBytes, UInt64(old.length))
            usage[UInt64(old.segment)] = entry
        }
        if !new.isNone { usage[UInt64(new.segment), default: SegmentUsage(totalBytes: 0, liveBytes: 0)].liveBytes += UInt64(new.length) }
    }

    var totalLogBytes: UInt64 { usage.values.reduce(0) { $0 + $1.totalBytes } }
    /// `totalLogBytes` without the retired segments, which the next checkpoints delete (or
    /// the first ones after the snapshots reading them end): what compaction aims at.
    var unretiredLogBytes: UInt64 {
        usage.reduce(0) { total, entry in
            retired.contains { $0.segment == entry.key } ? total : total + entry.value.totalBytes
        }
    }
    var totalLiveBytes: UInt64 { usage.values.reduce(0) { $0 + $1.liveBytes } }
}
