import StrataFormat
import StrataIO

/// One write transaction, handed to the body of `PageLog.write`. Its changes become visible
/// to readers, all together, when the body returns; never before.
///
/// Not thread-safe: use it only inside the body, on the thread running it.
package final class WriteTransaction {
    unowned let log: PageLog
    let writer: LogWriter
    /// This transaction's LSN: every frame it writes carries it.
    package let lsn: UInt64
    /// Page id → new location (`.none` when freed), for pages this transaction changed.
    private var changes: [UInt64: PageLocation] = [:]
    private var frameCount: UInt32 = 0
    private var reusedPageIDs: [UInt64] = []
    private let startNextPageID: UInt64
    /// Where the log ended when this transaction began: nothing it writes comes before.
    package let startPosition: LogPosition
    private var finished = false

    init(log: PageLog, writer: LogWriter, lsn: UInt64) {
        self.log = log
        self.writer = writer
        self.lsn = lsn
        startNextPageID = writer.nextPageID
        startPosition = writer.endPosition
    }

    /// A fresh page id (a freed one when available). It holds no page until written.
    package func allocatePageID() throws -> UInt64 {
        try checkOpen()
        if let id = writer.freePageIDs.take() {
            reusedPageIDs.append(id)
            return id
        }
        guard writer.nextPageID < PageLog.maximumPageID else { throw PageLogError.invalidPageID(writer.nextPageID) }
        defer { writer.nextPageID += 1 }
        return writer.nextPageID
    }

    /// Writes the full content of a page, replacing its previous content.
    /// - Parameters:
    ///   - entityID: the entity whose records the page holds (0 when none); stored in the page header.
    ///   - schemaVersion: the schema version the page was encoded with; stored in the page header.
    ///   - compress: overrides the store's `compression` option for this page.
    /// - Throws: `PageLogError.invalidPageID` for an id never allocated, `.pageTooLarge`,
    ///   or an I/O error (which poisons the store).
    package func write(_ pageID: UInt64, entityID: UInt32 = 0, schemaVersion: UInt32 = 0, bytes: UnsafeRawBufferPointer,
                       compress: Bool? = nil) throws {
        try checkOpen()
        try checkID(pageID)
        guard bytes.count <= log.options.maximumPageSize else {
            throw PageLogError.pageTooLarge(bytes: bytes.count, maximum: log.options.maximumPageSize)
        }
        var location = try log.append(kind: .page, pageID: pageID, lsn: lsn, entityID: entityID, schemaVersion: schemaVersion,
                                      payload: bytes, compress: compress ?? log.options.compression)
        location.lsn = lsn
        changes[pageID] = location
        frameCount += 1
    }

    /// Writes the full content of a page from a byte array.
    package func write(_ pageID: UInt64, entityID: UInt32 = 0, schemaVersion: UInt32 = 0, bytes: [UInt8],
                       compress: Bool? = nil) throws {
        try bytes.withUnsafeBytes { try write(pageID, entityID: entityID, schemaVersion: schemaVersion, bytes: $0, compress: compress) }
    }

    /// Writes a copy of an existing frame under this transaction's LSN (compaction).
    func relocate(_ pageID: UInt64, header: FrameHeader, stored: [UInt8]) throws {
        var location = try log.appendRelocated(header, stored: stored, lsn: lsn)
        location.lsn = lsn
        changes[pageID] = location
        frameCount += 1
    }

    /// Frees a page: after commit it no longer exists and its id may be reused.
    /// Freeing a page that does not exist does nothing.
    package func free(_ pageID: UInt64) throws {
        try checkOpen()
        try checkID(pageID)
        let current = changes[pageID] ?? writer.table[pageID]
        guard !current.isNone else { return }
        _ = try [UInt8]().withUnsafeBytes {
            try log.append(kind: .free, pageID: pageID, lsn: lsn, payload: $0, compress: false)
        }
        changes[pageID] = PageLocation.none
        frameCount += 1
    }

    /// Reads a page as this transaction sees it (its own writes included). `mapped` false
    /// reads with `pread` (see `SequentialPageReader.mapped`).
    package func read(_ pageID: UInt64, mapped: Bool = true) throws -> Page? {
        try checkOpen()
        let location = changes[pageID] ?? writer.table[pageID]
        guard !location.isNone else { return nil }
        if UInt64(location.segment) == writer.activeSegment && UInt64(location.offset) >= writer.flushedOffset {
            try log.flush()
        }
        let file: (any StorageFile)? = UInt64(location.segment) == writer.activeSegment
            ? writer.activeFile : log.shared.withLock { $0.segments[UInt64(location.segment)] }
        guard let file else {
            throw PageLogError.corruption(file: StoreFileNames.segment(UInt64(location.segment)), offset: UInt64(location.offset),
                                          reason: "segment \(location.segment), which holds page \(pageID), is missing")
        }
        return try PageLog.readPage(pageID, at: location, in: file, mapped: mapped)
    }

    /// Holds (or releases) checkpoints from this transaction's commit on: the layer above
    /// keeps a rollback point (PageLog+RollbackPoint.swift).
    package func holdCheckpoints(_ held: Bool) {
        log.checkpointsHeld.store(held, ordering: .releasing)
    }

    /// Whether this transaction changed anything.
    package var isEmpty: Bool { changes.isEmpty }

    private func checkOpen() throws {
        if finished { throw PageLogError.closed }
    }

    private func checkID(_ pageID: UInt64) throws {
        guard pageID < PageLog.firstAllocatablePageID || pageID < writer.nextPageID else {
            throw PageLogError.invalidPageID(pageID)
        }
    }

    /// The body threw: nothing becomes visible. Frames already spilled stay in the log as dead
    /// bytes; recovery ignores them because no commit frame with this LSN follows them.
    func abandon() {
        finished = true
        writer.freePageIDs.insert(contentsOf: reusedPageIDs)
        writer.nextPageID = startNextPageID
    }

    /// Appends the commit frame, applies the changes to the head table, publishes them to
    /// readers, and checkpoints when due. Returns the log position a durable commit must
    /// sync to, or nil when there was nothing to commit.
    func commit() throws -> LogPosition? {
        finished = true
        guard !changes.isEmpty else {
            writer.freePageIDs.insert(contentsOf: reusedPageIDs)
            return nil
        }
        let durablePosition = log.durable.withLock { $0 }
        let record = CommitRecord(frameCount: frameCount, durableSegment: durablePosition.segment,
                                  durableOffset: durablePosition.offset, nextPageID: writer.nextPageID)
        _ = try record.encoded().withUnsafeBytes {
            try log.append(kind: .commit, pageID: 0, lsn: lsn, payload: $0, compress: false)
        }
        try log.flush()
        let end = writer.endPosition
        for (pageID, location) in changes.sorted(by: { $0.key < $1.key }) {
            let old = writer.table[pageID]
            writer.replaceLive(old: old, new: location)
            writer.table[pageID] = location
            writer.dirtyChunks.insert(Int(pageID / UInt64(PageTable.chunkEntries)))
            if location.isNone && pageID >= PageLog.firstAllocatablePageID { writer.freePageIDs.insert(pageID) }
        }
        writer.lastLSN = lsn
        let table = writer.table
        log.shared.withLock { state in
            state.table = table
            state.lsn = lsn
        }
        if writer.bytesSinceCheckpoint >= UInt64(log.options.checkpointInterval) && !log.checkpointsHeld.load(ordering: .acquiring) {
            try log.checkpointLocked()
        }
        return end
    }
}
