import StrataIO

/// Tuning of a page log. The defaults suit stores from megabytes to hundreds of gigabytes.
package struct PageLogOptions: Sendable {
    /// A segment file is closed and a new one started when the next frame would pass this size.
    package var segmentSize = 64 << 20
    /// An automatic checkpoint is written after this many bytes of log; it bounds recovery time.
    package var checkpointInterval = 64 << 20
    /// Compress page payloads with LZ4 when that saves at least 1/8 of their size.
    package var compression = true
    /// Compact in the background when space amplification passes `maximumSpaceAmplification`.
    package var automaticCompaction = true
    /// Log bytes / live bytes above which compaction runs (default 2x).
    package var maximumSpaceAmplification = 2.0
    /// Stores whose log is smaller than this are never compacted automatically.
    package var compactionMinimumBytes = 128 << 20
    /// Relaxed commits are synced once this many bytes of log are unsynced (default 16 MiB),
    /// which bounds what a power loss can take from a stream of relaxed commits.
    package var relaxedSyncBytes = 16 << 20
    /// Bytes buffered before a write system call.
    package var writeBufferSize = 1 << 20
    /// Bytes of zeros a durable commit leaves written ahead of the log's end in the active
    /// segment (Architecture.md, invariant 35), so the next durable commits overwrite
    /// allocated blocks and their sync does not change the file's size: on ext4 a small
    /// durable commit took 30 % less time (group-commit). 0: none.
    package var preallocation = 256 << 10
    /// The largest page accepted.
    package var maximumPageSize = 16 << 20
    /// Bytes of the space reserve (invariant 33), the file whose blocks the store gives back
    /// when the device fills, so it can still open, delete and compact; 0: none.
    package var spaceReserve = 4 << 20
    /// Build the frames of a large transaction's page writes (LZ4, header, CRC32C) on a
    /// background worker while the caller goes on (Architecture.md, invariant 17). The bytes
    /// written are the same either way; off, every frame is built on the calling thread.
    /// On by default only where the process may use two or more processors: on one, the
    /// worker only takes turns with the caller, and the hand-over (a copy of each page,
    /// wake-ups, three times the context switches) made a one-core bulk insert slower.
    package var framePipeline = Processors.usable > 1
    /// Page writes a transaction makes on the calling thread before the frame pipeline takes
    /// over, so small transactions pay no thread hop.
    package var framePipelineThreshold = 64
    /// The most page bytes in flight in the frame pipeline; a page write waits for the oldest
    /// frame beyond it, which bounds the pipeline's memory.
    package var framePipelineBytes = 1 << 20
    /// Page bytes queued before the pipeline's worker is woken (when idle), so a wake-up
    /// serves a batch of pages rather than one.
    package var framePipelineBatchBytes = 128 << 10
    /// Tests: false never starts the frame pipeline's worker, so every frame is built by the
    /// transaction when it places every frame in flight (commit, a read of a page in flight). Such a
    /// transaction must never fill `framePipelineBytes`: it would wait for the worker forever.
    package var framePipelineWorkerStarts = true

    package init() {}
}

/// When a commit (a `Context.save()`, a page log transaction) is durable.
///
/// The one public declaration of the page log: the store API offers it as `Strata.Durability`
/// (a type alias), so the setting an app chooses is the one the log acts on.
public enum Durability: Sendable {
    /// On stable storage when the call returns: the log is synced (`fdatasync` on Linux, a
    /// full flush with `F_FULLFSYNC` on Apple platforms: Docs/Architecture.md, "Platforms"),
    /// one sync shared by concurrent committers (group commit).
    case durable
    /// Crash-consistent but not yet synced: a power loss may lose this commit and the ones
    /// after it, never leave part of one, and never lose a commit before the last sync (like
    /// SQLite's `synchronous=NORMAL` in WAL mode). Synced by the next durable commit,
    /// checkpoint or close, and whenever `relaxedSyncBytes` (16 MiB) of log are unsynced,
    /// which bounds what a crash can take.
    case relaxed
}

/// A position in the log: a segment and a byte offset in it. Ordered by segment, then offset.
package struct LogPosition: Comparable, Hashable, Sendable, CustomStringConvertible {
    package var segment: UInt64
    package var offset: UInt64

    package init(segment: UInt64, offset: UInt64) {
        self.segment = segment
        self.offset = offset
    }

    package static func < (a: LogPosition, b: LogPosition) -> Bool {
        (a.segment, a.offset) < (b.segment, b.offset)
    }

    package var description: String { "\(segment):\(offset)" }
}

/// A page as read from the log.
package struct Page: Sendable, Equatable {
    package var id: UInt64
    package var entityID: UInt32
    package var schemaVersion: UInt32
    /// The LSN of the transaction that wrote this image.
    package var lsn: UInt64
    package var bytes: [UInt8]

    package init(id: UInt64, entityID: UInt32, schemaVersion: UInt32, lsn: UInt64, bytes: [UInt8]) {
        self.id = id
        self.entityID = entityID
        self.schemaVersion = schemaVersion
        self.lsn = lsn
        self.bytes = bytes
    }
}

/// What opening a store found.
package struct RecoveryReport: Sendable, Equatable {
    /// The epoch of the superblock recovery started from.
    package var superblockEpoch: UInt64 = 0
    /// Whether the newest superblock slot was unusable and the older one was used.
    package var usedOlderSuperblock = false
    /// Bytes of log read after the checkpoint.
    package var replayedBytes: UInt64 = 0
    /// Committed transactions applied from the tail.
    package var replayedTransactions = 0
    /// Whether the log ended in an incomplete (torn or uncommitted) write that was cut off.
    package var tailWasTorn = false
    /// Whether the store was created by this open.
    package var created = false
}

/// Counters describing a page log.
package struct PageLogStatistics: Sendable, Equatable {
    /// Bytes in segment files.
    package var logBytes: UInt64
    /// Bytes of frames the current state refers to.
    package var liveBytes: UInt64
    package var segmentCount: Int
    package var lastLSN: UInt64
    package var pageCount: Int
    package var checkpointEpoch: UInt64
    /// fdatasync calls on segment files since the store was opened.
    package var segmentSyncs: Int
}
