import StrataIO
import StrataPageLog
import StrataRecords

/// The raw log-structured page store under Strata's record layer: numbered pages of bytes,
/// atomic multi-page transactions, snapshots, checkpoints, crash recovery and compaction.
///
/// This is engine-level API (`@_spi(Engine) import Strata`), for benchmarks and tools; apps
/// use the record API. Thread-safe: one write transaction runs at a time, reads never wait.
@_spi(Engine)
public final class PageStore: Sendable {
    /// Tuning of a page store (the same options a `Store` takes).
    public typealias Options = StorageOptions

    /// When a commit is durable.
    public typealias Durability = Strata.Durability

    /// Counters describing a store.
    public struct Statistics: Sendable {
        /// Bytes in segment files.
        public var logBytes: UInt64
        /// Bytes of frames the current state refers to.
        public var liveBytes: UInt64
        /// Number of segment files.
        public var segmentCount: Int
        /// The LSN of the last committed transaction.
        public var lastLSN: UInt64
        /// Pages present.
        public var pageCount: Int
        /// fdatasync calls on the log since the store was opened; below the number of durable
        /// commits when concurrent commits share syncs (group commit).
        public var syncs: Int
    }

    /// What opening the store found.
    public struct RecoveryReport: Sendable {
        /// Bytes of log replayed after the last checkpoint.
        public var replayedBytes: UInt64
        /// Committed transactions replayed after the last checkpoint.
        public var replayedTransactions: Int
        /// Whether an incomplete write at the end of the log was cut off.
        public var tailWasTorn: Bool
    }

    /// A write transaction; valid only inside the body passed to `write`.
    public final class Transaction {
        let base: PageLogTransaction

        init(_ base: PageLogTransaction) { self.base = base }

        /// A fresh page id (a freed one when available).
        public func allocatePageID() throws -> UInt64 {
            try translatingErrors { try base.allocatePageID() }
        }

        /// Replaces the content of a page.
        /// - Throws: `StrataError.invalidPageID`, `.pageTooLarge`, `.io`.
        public func write(pageID: UInt64, bytes: [UInt8]) throws {
            try translatingErrors { try base.write(pageID, bytes: bytes) }
        }

        /// Frees a page; freeing a missing page does nothing.
        public func free(pageID: UInt64) throws {
            try translatingErrors { try base.free(pageID) }
        }

        /// A page as this transaction sees it, or nil when absent.
        public func read(pageID: UInt64) throws -> [UInt8]? {
            try translatingErrors { try base.read(pageID)?.bytes }
        }
    }

    let log: PageLog

    private init(log: PageLog) { self.log = log }

    /// Opens (creating when missing) the store in the folder at `path` and recovers it.
    /// - Throws: `StrataError.locked`, `.corruption`, `.unsupportedFormatVersion`, `.io`.
    public static func open(at path: String, options: Options = Options()) throws -> PageStore {
        try translatingErrors {
            PageStore(log: try PageLog.open(directory: path, fileSystem: options.fileSystem, options: options.pageLogOptions))
        }
    }

    /// Runs `body` as one atomic transaction; if it throws, nothing it wrote is visible.
    public func write<T>(durability: Durability = .durable, _ body: (Transaction) throws -> T) throws -> T {
        try translatingErrors {
            try log.write(durability: durability) { try body(Transaction($0)) }
        }
    }

    /// The latest committed content of a page, or nil when absent.
    public func read(pageID: UInt64) throws -> [UInt8]? {
        try translatingErrors { try log.read(pageID)?.bytes }
    }

    /// Writes a checkpoint now.
    public func checkpoint() throws {
        try translatingErrors { try log.checkpoint() }
    }

    /// Compacts now (moves live pages out of mostly-dead segments and deletes them).
    public func compact() throws {
        try translatingErrors { _ = try log.compact() }
    }

    /// Checkpoints and closes the store.
    public func close() throws {
        try translatingErrors { try log.close() }
    }

    /// Counters describing the store now.
    public var statistics: Statistics {
        let statistics = log.statistics
        return Statistics(logBytes: statistics.logBytes, liveBytes: statistics.liveBytes, segmentCount: statistics.segmentCount,
                          lastLSN: statistics.lastLSN, pageCount: statistics.pageCount, syncs: statistics.segmentSyncs)
    }

    /// What opening the store found.
    public var recoveryReport: RecoveryReport {
        let report = log.recoveryReport
        return RecoveryReport(replayedBytes: report.replayedBytes, replayedTransactions: report.replayedTransactions,
                              tailWasTorn: report.tailWasTorn)
    }
}
