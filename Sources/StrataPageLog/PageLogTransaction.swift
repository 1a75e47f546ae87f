import StrataFormat
import StrataIO

/// One write transaction, handed to the body of `PageLog.write`. Its changes become visible
/// to readers, all together, when the body returns; never before.
///
/// Not thread-safe: use it only inside the body, on the thread running it.
package final class PageLogTransaction {
    unowned let log: PageLog
    let writer: LogWriter
    /// This transaction's LSN: every frame it writes carries it.
    package let lsn: UInt64
    /// Page id → new location (`.none` when freed), for pages this transaction changed.
    private var changes: [UInt64: PageLocation] = [:]
    /// Page images a reader kept (`SequentialPageReader`), which `read` takes instead of
    /// reading their frames again (nil: none).
    package var pageImages: PageImages?
    private var frameCount: UInt32 = 0
    private var reusedPageIDs: [UInt64] = []
    private let startNextPageID: UInt64
    /// Where the log ended when this transaction began: nothing it writes comes before.
    package let startPosition: LogPosition
    private var finished = false
    /// Page writes made so far (the frame pipeline takes over past
    /// `PageLogOptions.framePipelineThreshold`).
    private var pageWrites = 0
    /// Page writes handed to the frame pipeline and not yet placed in the log, in submission
    /// order; those before `inFlightHead` are placed.
    private var inFlight: [FrameJob] = []
    private var inFlightHead = 0
    /// Page writes handed to the frame pipeline and not yet placed in the log (for tests).
    package var framesInFlight: Int { inFlight.count - inFlightHead }
    /// A filter of the pages submitted since the pipeline was last empty (bit `id % 4096`; a
    /// superset of the pages in flight): a read of a page whose bit is clear needs no frame
    /// placed first. A bitmap rather than a set: one store per page write, no hashing (a set
    /// cost about 400 instructions a page), and a false positive only places the frames early.
    private var inFlightFilter: [UInt64] = []
    /// Bytes of the jobs in flight (`FrameJob.cost`) (bounded by `PageLogOptions.framePipelineBytes`).
    private var inFlightBytes = 0
    /// Bytes of the jobs submitted since the worker was last started.
    private var unstartedBytes = 0
    /// The error placing a pipelined frame threw; every later call rethrows it.
    private var pipelineFailure: (any Error)?

    /// Whether page writes past the threshold go through the frame pipeline: the option is on
    /// and both the worker and the writer have a reusable LZ4 state (so both compress alike).
    private let usesPipeline: Bool
    /// Page writes made before the frame pipeline takes over: `framePipelineThreshold`, or 0
    /// for a transaction known to write many pages (`pipelinesEveryPage`).
    private var pipelineThreshold: Int

    /// Makes every page write of this transaction go through the frame pipeline (when it is
    /// used), not only those past `framePipelineThreshold`: for a transaction that will write
    /// many pages (a migration's batch), whose first ones would otherwise be compressed on the
    /// caller's thread. The same bytes either way (invariant 17); pages written before the
    /// call were written as usual.
    package func pipelinesEveryPage() {
        pipelineThreshold = 0
    }

    /// Makes the rest of this transaction's page writes build their frames on the calling
    /// thread, after the frames in flight: for the burst of pages a commit writes at its end,
    /// which the caller has nothing else to do meanwhile, and which a worker on another core
    /// would compress from cache lines this thread just wrote. Not for a transaction that
    /// pipelines every page (`pipelinesEveryPage`: a migration's batches, the deferred
    /// compression pass), whose writes are all such bursts. The same bytes either way
    /// (invariant 17).
    package func buildsRemainingFramesHere() throws {
        guard usesPipeline, pipelineThreshold != .max, pipelineThreshold != 0 else { return }
        try drainPipeline()
        // The worker stopped, as at the end of a transaction that used it.
        if pageWrites > pipelineThreshold { log.framePipeline.waitUntilIdle() }
        pipelineThreshold = .max
    }

    init(log: PageLog, writer: LogWriter, lsn: UInt64) {
        self.log = log
        self.writer = writer
        self.lsn = lsn
        startNextPageID = writer.nextPageID
        startPosition = writer.endPosition
        usesPipeline = log.options.framePipeline && log.framePipeline.isAvailable && writer.compressor != nil
        pipelineThreshold = log.options.framePipelineThreshold
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
    ///   - directoryLength: for a page read in part (a record tree leaf), how many of its first
    ///     bytes a partial read needs before any other (its directory): the page is then stored
    ///     for partial reads (`FrameCodec.append`). Nil for pages read whole.
    /// - Throws: `PageLogError.invalidPageID` for an id never allocated, `.pageTooLarge`,
    ///   or an I/O error (which poisons the store). With the frame pipeline on, an I/O error
    ///   placing an earlier page's frame is thrown by this call instead (invariant 17).
    package func write(_ pageID: UInt64, entityID: UInt32 = 0, schemaVersion: UInt32 = 0, bytes: UnsafeRawBufferPointer,
                       compress: Bool? = nil, directoryLength: Int? = nil) throws {
        try writePage(pageID, entityID: entityID, schemaVersion: schemaVersion, bytes: bytes, owned: nil, compress: compress,
                      directoryLength: directoryLength)
    }

    /// Writes the full content of a page from a byte array (which the frame pipeline keeps
    /// instead of copying).
    package func write(_ pageID: UInt64, entityID: UInt32 = 0, schemaVersion: UInt32 = 0, bytes: [UInt8],
                       compress: Bool? = nil, directoryLength: Int? = nil) throws {
        try bytes.withUnsafeBytes {
            try writePage(pageID, entityID: entityID, schemaVersion: schemaVersion, bytes: $0, owned: bytes, compress: compress,
                          directoryLength: directoryLength)
        }
    }

    /// `write`: `owned`, when given, holds the same bytes as `bytes`.
    private func writePage(_ pageID: UInt64, entityID: UInt32, schemaVersion: UInt32, bytes: UnsafeRawBufferPointer,
                           owned: [UInt8]?, compress: Bool?, directoryLength: Int?) throws {
        try checkOpen()
        try checkID(pageID)
        guard bytes.count <= log.options.maximumPageSize else {
            throw PageLogError.pageTooLarge(bytes: bytes.count, maximum: log.options.maximumPageSize)
        }
        let compress = compress ?? log.options.compression
        pageWrites += 1
        // A page stored uncompressed is a header and a checksum away: built here (after the
        // frames in flight), not handed over.
        if usesPipeline && pageWrites > pipelineThreshold && compress {
            try submit(FrameJob(pageID: pageID, lsn: lsn, entityID: entityID, schemaVersion: schemaVersion,
                                payload: owned ?? [UInt8](bytes), compress: compress, directoryLength: directoryLength,
                                formatVersion: log.formatVersion))
            return
        }
        try drainPipeline()
        var location = try log.append(kind: .page, pageID: pageID, lsn: lsn, entityID: entityID, schemaVersion: schemaVersion,
                                      payload: bytes, compress: compress, directoryLength: directoryLength)
        location.lsn = lsn
        changes[pageID] = location
        frameCount += 1
    }

    // MARK: Frame pipeline (invariant 17)

    /// Hands a page write to the pipeline (`enqueue`), and starts the worker when a batch waits.
    private func submit(_ job: FrameJob) throws {
        try enqueue(job)
        unstartedBytes += job.cost
        // Start the worker once a batch of work waits (or the in-flight bound is near), not
        // for every page: each start may cost a thread wake-up.
        let start = unstartedBytes >= min(log.options.framePipelineBatchBytes, log.options.framePipelineBytes / 2)
        if start { unstartedBytes = 0 }
        log.framePipeline.submit(job, start: start)
    }

    /// Puts `job` last among the frames in flight: first places the frames already built,
    /// then waits for the oldest ones while the bytes in flight would pass the bound.
    private func enqueue(_ job: FrameJob) throws {
        try placeBuiltFrames()
        let bound = log.options.framePipelineBytes
        while inFlightHead < inFlight.count && inFlightBytes + job.cost > bound {
            try placeNextFrame()
        }
        inFlight.append(job)
        if inFlightFilter.isEmpty { inFlightFilter = [UInt64](repeating: 0, count: 64) }
        inFlightFilter[Int(truncatingIfNeeded: job.pageID >> 6) & 63] |= 1 << (job.pageID & 63)
        inFlightBytes += job.cost
    }

    /// Whether `pageID` may have a frame in flight (`inFlightFilter`; false positives only).
    private func mayBeInFlight(_ pageID: UInt64) -> Bool {
        inFlightHead < inFlight.count && inFlightFilter[Int(truncatingIfNeeded: pageID >> 6) & 63] & (1 << (pageID & 63)) != 0
    }

    /// Places the frames at the head of the queue that the worker finished, without waiting.
    private func placeBuiltFrames() throws {
        while inFlightHead < inFlight.count, inFlight[inFlightHead].done.load(ordering: .acquiring) {
            try placeNextFrame()
        }
    }

    /// Places every frame in flight, waiting for the worker as needed, so the log holds exactly
    /// what the synchronous path would have written by now. Every call that appends to or
    /// reads the log (other than a pipelined page write) does this first.
    private func drainPipeline() throws {
        if let pipelineFailure { throw pipelineFailure }
        while inFlightHead < inFlight.count { try placeNextFrame(helping: true) }
    }

    /// Before a read of `pageID`: places the frames in flight only when the read may depend on
    /// them — the page may be among them (`inFlightFilter`), or its image lies in the write
    /// buffer's unflushed part (the read flushes it, and the synchronous path's flush would
    /// have held every frame up to now). A read of any other page leaves them to the worker,
    /// so a transaction that reads one page while it writes others (the deferred compression
    /// pass) keeps both threads compressing, and the file system sees the same calls in the
    /// same order.
    private func drainPipeline(beforeReading pageID: UInt64) throws {
        if let pipelineFailure { throw pipelineFailure }
        guard inFlightHead < inFlight.count else { return }
        if !mayBeInFlight(pageID) {
            let location = try changes[pageID] ?? writer.table.location(of: pageID)
            if location.isNone || !isUnflushed(location) { return }
        }
        try drainPipeline()
    }

    /// Empties `inFlightFilter` (nothing is in flight).
    private func clearInFlightFilter() {
        for index in inFlightFilter.indices { inFlightFilter[index] = 0 }
    }

    /// Whether the frame at `location` is still in the write buffer (a read flushes it first).
    private func isUnflushed(_ location: PageLocation) -> Bool {
        UInt64(location.segment) == writer.activeSegment && UInt64(location.offset) >= writer.flushedOffset
    }

    /// Waits for the oldest frame in flight and places it as `log.append` would have: appended
    /// to the write buffer, then accounted, rolled or flushed by `placeAppendedFrame`.
    /// `helping`: every frame in flight is needed now, so frames no worker took yet are built
    /// on this thread meanwhile (when only room in flight is needed, the worker is busy and
    /// this thread has other work).
    private func placeNextFrame(helping: Bool = false) throws {
        let job = inFlight[inFlightHead]
        log.framePipeline.wait(for: job, helpingWith: helping ? writer.compressor : nil)
        inFlightHead += 1
        inFlightBytes -= job.cost
        if inFlightHead == inFlight.count {
            inFlight.removeAll(keepingCapacity: true)
            clearInFlightFilter()
            inFlightHead = 0
        } else if inFlightHead >= 1024 {
            inFlight.removeFirst(inFlightHead)
            inFlightHead = 0
        }
        let start = writer.buffer.count
        writer.buffer.append(contentsOf: job.frame)
        var location: PageLocation
        do {
            location = try log.placeAppendedFrame(start: start, length: job.frame.count)
        } catch {
            // The synchronous path threw this from the page's own `write`. The frames behind it
            // are dropped: the transaction can only end by throwing (the store is poisoned).
            pipelineFailure = error
            inFlight.removeAll()
            clearInFlightFilter()
            inFlightHead = 0
            inFlightBytes = 0
            throw error
        }
        location.lsn = lsn
        changes[job.pageID] = job.frees ? PageLocation.none : location
        frameCount += 1
    }

    /// Ends the pipeline's part in this transaction: every frame in flight placed (when
    /// `place`) or dropped, and the worker stopped.
    private func finishPipeline(place: Bool) throws {
        defer {
            inFlight.removeAll()
            clearInFlightFilter()
            inFlightHead = 0
            inFlightBytes = 0
            if usesPipeline && pageWrites > pipelineThreshold {
                log.framePipeline.waitUntilIdle()
            }
        }
        if place { try drainPipeline() }
    }

    /// Writes a copy of an existing frame under this transaction's LSN (compaction).
    func relocate(_ pageID: UInt64, header: FrameHeader, stored: [UInt8]) throws {
        try drainPipeline()
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
        // Whether the page exists depends on its frames in flight, if any: placed first.
        if mayBeInFlight(pageID) { try drainPipeline() }
        let current = try changes[pageID] ?? writer.table.location(of: pageID)
        guard !current.isNone else { return }
        if inFlightHead < inFlight.count {
            // The free frame joins the frames in flight, built (a header), so the log gets the
            // synchronous path's frames in its order without this thread waiting for the
            // worker: a transaction freeing pages while it writes others (deletes beside the
            // history journal's parts) keeps both threads compressing. Placed, it sets the
            // page's change to none; until then a read or free of the page places it first
            // (its bit is in `inFlightFilter`).
            try enqueue(FrameJob(freeing: pageID, lsn: lsn, formatVersion: log.formatVersion))
            return
        }
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
        try drainPipeline(beforeReading: pageID)
        if let pageImages, let image = pageImages.take(pageID, at: try changes[pageID] ?? writer.table.location(of: pageID)) {
            return image  // the frame there, verified and decompressed by a reader a moment ago
        }
        guard let (location, file) = try currentFrame(of: pageID) else { return nil }
        return try PageLog.readPage(pageID, at: location, in: file, mapped: mapped)
    }

    /// The LSN of page `pageID`'s current image as this transaction sees it — this
    /// transaction's own when it wrote the page (or may have: a frame the pipeline is still
    /// building) — or nil when the page does not exist. An image with a given page id and LSN
    /// never changes (LSNs only grow), so a copy of it kept elsewhere can stand for a read.
    package func currentLSN(of pageID: UInt64) throws -> UInt64? {
        try checkOpen()
        if mayBeInFlight(pageID) { return lsn }
        let location = try changes[pageID] ?? writer.table.location(of: pageID)
        return location.isNone ? nil : location.lsn
    }

    /// Whether the store compresses pages (`PageLogOptions.compression`).
    package var compressesPages: Bool { log.options.compression }

    /// The page's image as this transaction sees it when it is stored uncompressed (codec 0),
    /// to be written again compressed; nil when it is stored compressed or does not exist.
    /// The frame is verified as `read` verifies it, and not decompressed.
    package func uncompressedImage(of pageID: UInt64) throws -> Page? {
        try checkOpen()
        try drainPipeline(beforeReading: pageID)
        guard let (location, file) = try currentFrame(of: pageID) else { return nil }
        let (header, stored) = try PageLog.readFrame(in: file, at: UInt64(location.offset), length: location.length,
                                                     decompress: false, mapped: false)
        try PageLog.checkPageFrame(header, pageID: pageID, location: location, path: file.path)
        guard header.codec == .none else { return nil }
        return Page(id: pageID, entityID: header.entityID, schemaVersion: header.schemaVersion, lsn: header.lsn, bytes: stored)
    }

    /// Where the page's current image is (this transaction's writes included) and the file
    /// holding it, flushed so it can be read; nil when the page does not exist.
    private func currentFrame(of pageID: UInt64) throws -> (PageLocation, any StorageFile)? {
        let location = try changes[pageID] ?? writer.table.location(of: pageID)
        guard !location.isNone else { return nil }
        if isUnflushed(location) {
            try log.flush()
        }
        let file: (any StorageFile)? = UInt64(location.segment) == writer.activeSegment
            ? writer.activeFile : log.shared.withLock { $0.segments[UInt64(location.segment)] }
        guard let file else {
            throw PageLogError.corruption(file: StoreFileNames.segment(UInt64(location.segment)), offset: UInt64(location.offset),
                                          reason: "segment \(location.segment), which holds page \(pageID), is missing")
        }
        return (location, file)
    }

    /// Holds (or releases) checkpoints from this transaction's commit on: the layer above
    /// keeps a rollback point (PageLog+RollbackPoint.swift).
    package func holdCheckpoints(_ held: Bool) {
        log.checkpointsHeld.store(held, ordering: .releasing)
    }

    /// Whether this transaction changed anything (a page write still in the frame pipeline
    /// counts: it will be placed).
    package var isEmpty: Bool { changes.isEmpty && inFlightHead == inFlight.count }

    private func checkOpen() throws {
        if finished { throw PageLogError.closed }
        if let pipelineFailure { throw pipelineFailure }
    }

    private func checkID(_ pageID: UInt64) throws {
        guard pageID < PageLog.firstAllocatablePageID || pageID < writer.nextPageID else {
            throw PageLogError.invalidPageID(pageID)
        }
    }

    /// The body threw: nothing becomes visible. Frames already spilled stay in the log as dead
    /// bytes; recovery ignores them because no commit frame with this LSN follows them.
    ///
    /// Frames still in the frame pipeline are placed first, as the synchronous path placed them
    /// before the body threw. Returns the I/O error placing them threw, if any (it poisoned the
    /// store): the synchronous path would have thrown it from the page's `write`, before the
    /// body's own error, so `PageLog.write` reports it instead.
    @discardableResult
    func abandon() -> (any Error)? {
        let earlierFailure = pipelineFailure != nil
        var failure: (any Error)?
        do { try finishPipeline(place: true) } catch { failure = earlierFailure ? nil : error }
        finished = true
        writer.freePageIDs.insert(contentsOf: reusedPageIDs)
        writer.nextPageID = startNextPageID
        return failure
    }

    /// Appends the commit frame, applies the changes to the head table, publishes them to
    /// readers, and checkpoints when due. Returns the log position a durable commit must
    /// sync to, or nil when there was nothing to commit.
    func commit() throws -> LogPosition? {
        defer { finished = true }
        try finishPipeline(place: true)
        guard !changes.isEmpty else {
            writer.freePageIDs.insert(contentsOf: reusedPageIDs)
            return nil
        }
        // The chunks this commit changes are materialized first (invariant 16): one that
        // cannot be read fails the transaction here, before its commit frame.
        let sortedChanges = changes.sorted(by: { $0.key < $1.key })
        var lastChunk = -1
        for (pageID, _) in sortedChanges {
            let chunk = Int(pageID / UInt64(PageTable.chunkEntries))
            if chunk != lastChunk {
                try writer.materialize(chunk, written: changes, freeBelow: startNextPageID)
                lastChunk = chunk
            }
        }
        let durablePosition = log.durable.withLock { $0 }
        let record = CommitRecord(frameCount: frameCount, durableSegment: durablePosition.segment,
                                  durableOffset: durablePosition.offset, nextPageID: writer.nextPageID)
        _ = try record.encoded().withUnsafeBytes {
            try log.append(kind: .commit, pageID: 0, lsn: lsn, payload: $0, compress: false)
        }
        try log.flush()
        let end = writer.endPosition
        for (pageID, location) in sortedChanges {
            let old = try writer.table.location(of: pageID)  // materialized above: cannot throw
            writer.replaceLive(old: old, new: location)
            try writer.table.set(location, for: pageID)
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
