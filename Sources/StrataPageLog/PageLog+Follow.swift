import StrataFormat
import StrataIO

/// Followers (Docs/Architecture.md, "Reader processes", invariant 32): a page log opened
/// `readOnly` next to the instance — in this process or another — that writes the store. It
/// takes no lock and never writes; it recovers as a writer does (the same `Recovery`), then
/// `refresh()` goes on replaying the log from where it ended, so new snapshots see each commit
/// the writer appends. Whatever cannot be explained by appends (its segment removed or cut
/// short, frames it replayed rewritten, a broken chain) makes it reload from the newest
/// superblock into a new table; it never applies a frame it cannot prove committed.
///
/// State: `LogFollower`, touched only with `writerLock` held (a follower has no writer, so
/// the lock only serializes refreshes).
final class LogFollower: @unchecked Sendable {
    /// The replay state: files, table, where the log ended, pending frames, witness.
    var recovery: Recovery
    /// The superblock file the state was loaded from (kept open for the inert `LogWriter`).
    var superblockFile: any StorageFile
    /// Full reloads since the follower opened.
    var reloads = 0
    /// The epochs of the two superblock slots as last decoded, and the highest checkpoint
    /// segment a valid slot named then. A slot is only ever rewritten with a new epoch, so equal
    /// epochs mean nothing to decode.
    var slotEpochs: (UInt64, UInt64)?
    var newestSlotSegment: UInt64 = 0

    init(recovery: Recovery, superblockFile: any StorageFile) {
        self.recovery = recovery
        self.superblockFile = superblockFile
    }
}

extension PageLog {
    /// Loads attempted before an error that a concurrent writer can cause (corruption, a file
    /// gone) is reported: each attempt reads the superblock and lists the segments anew.
    static let followerLoadAttempts = 4

    /// Opens a follower (`open(…, readOnly: true)`).
    static func openFollower(directory: String, fileSystem: any FileSystem, options: PageLogOptions) throws -> PageLog {
        let (recovery, superblockFile) = try loadFollower(directory: directory, fileSystem: fileSystem, options: options)
        let follower = LogFollower(recovery: recovery, superblockFile: superblockFile)
        // A follower never writes: its LogWriter is empty and never used (every write path
        // checks `checkWritable` first), so it pins neither a table nor a segment.
        let writer = LogWriter(
            activeSegment: recovery.end.segment, activeFile: superblockFile, flushedOffset: recovery.end.offset, table: PageTable(),
            lastLSN: recovery.lastLSN, nextLSN: recovery.lastLSN + 1, nextPageID: recovery.nextPageID, freePageIDs: FreePageList(),
            usage: [:], chunkLocations: [], dirtyChunks: [], superblock: recovery.superblock, superblockFile: superblockFile,
            rootAddress: recovery.superblock.root)
        let log = PageLog(fileSystem: fileSystem, directory: directory, options: options, storeID: recovery.superblock.storeID,
                          recoveryReport: recovery.report, writer: writer, segments: recovery.files, durablePosition: recovery.end,
                          lock: nil, follower: follower, mappableEnd: recovery.checkpointedEnd)
        log.shared.withLock { $0.table = recovery.table }
        log.checkpointsHeld.store(true, ordering: .releasing)
        return log
    }

    /// Recovers a follower's state: newest valid superblock → checkpoint → replay to the last
    /// valid commit (a torn tail is where the writer is appending). Retried when the error may
    /// come from the writer changing the folder meanwhile (a checkpoint, a deletion, a rollback).
    static func loadFollower(directory: String, fileSystem: any FileSystem,
                             options: PageLogOptions) throws -> (Recovery, any StorageFile) {
        var attempt = 1
        while true {
            do {
                let loaded = try recover(directory: directory, fileSystem: fileSystem, options: options, segmentIDs: nil,
                                         created: false, readOnly: true) { ($0, $1) }
                var recovery = loaded.0
                guard try recovery.witnessIntact() else {
                    throw PageLogError.corruption(file: joinPath(directory, StoreFileNames.segment(recovery.end.segment)),
                                                  offset: recovery.witness?.offset ?? 0, reason: "the log was cut back while it was read")
                }
                recovery.releaseUnreferencedSegments()
                return (recovery, loaded.1)
            } catch let error as PageLogError where attempt < followerLoadAttempts && error.mayComeFromAConcurrentWriter {
                attempt += 1
            }
        }
    }

    /// A follower: applies every transaction its writer committed since the last call, and
    /// publishes a new table for new snapshots (snapshots taken before keep theirs, invariant
    /// 11). Returns whether a new table was published. A writer returns false at once: its
    /// snapshots always see its latest commit.
    ///
    /// Cheap when nothing changed: an `fstat` of the last segment, a `stat` of the next one's
    /// name and a look at the superblock's epochs through its memory map. It reloads from the
    /// newest superblock (a new table) when its last segment was removed or cut short, when the
    /// last frame it replayed is no longer there (a migration's rollback cut the log and the
    /// writer appended again), or when the log does not continue as the segment chain says or a
    /// checkpoint names a segment after its last while the next one is gone (segments it needed
    /// were compacted away).
    ///
    /// - Throws: `PageLogError.closed`; `.corruption` when a reload finds committed data damaged
    ///   (the follower then keeps its last table); `.io`.
    @discardableResult
    package func refresh() throws -> Bool {
        guard let follower else { return false }
        return try writerLock.withLock { _ in
            if shared.withLock({ $0.closed }) { throw PageLogError.closed }
            var recovery = follower.recovery  // a copy: a failure leaves the follower as it was
            do {
                guard try catchUp(&recovery, follower) else { return try reload(follower) }
            } catch let error as PageLogError where error.mayComeFromAConcurrentWriter {
                return try reload(follower)
            }
            let advanced = recovery.lastLSN != follower.recovery.lastLSN
            // Pages per segment are counted once the writer changed something (loading every
            // pending chunk, invariant 16), then kept up by replay.
            if advanced && recovery.pageCounts == nil { recovery.pageCounts = try recovery.table.pageCountsBySegment() }
            recovery.releaseUnreferencedSegments()
            follower.recovery = recovery
            if advanced { publish(recovery) }
            return advanced
        }
    }

    /// The number of tables a follower published so far (`Snapshot.publication` of a snapshot
    /// taken now); 0 for a writer.
    package var publication: UInt64 { shared.withLock { $0.publication } }

    /// Follower refreshes so far that reloaded from the superblock (tests, diagnostics).
    package var followerReloads: Int {
        guard let follower else { return 0 }
        return writerLock.withLock { _ in follower.reloads }
    }

    /// Where a follower's replay ended: its last segment and the offset after the last valid
    /// frame it read (tests, diagnostics). Nil for a writer.
    package var followerPosition: LogPosition? {
        guard let follower else { return nil }
        return writerLock.withLock { _ in follower.recovery.end }
    }

    /// Replays what was appended after `recovery.end`, into the segments the writer rolled to.
    /// False when the log cannot have grown by appends only (reload).
    private func catchUp(_ recovery: inout Recovery, _ follower: LogFollower) throws -> Bool {
        var scanned = false
        while true {
            let position = recovery.end
            guard let file = recovery.files[position.segment] else { return false }
            let status = try PageLog.translatingIOErrors { try file.status() }
            // Removed (compacted, or rolled back) or shorter than what was replayed: not appends.
            guard status.isLinked, status.size >= position.offset else { return false }
            let rolled = try recovery.openNextSegment()
            // No next segment, yet a checkpoint in a later one: the writer rolled past this
            // segment and compacted the next one away while this follower was not looking.
            if !rolled, try follower.newestCheckpointSegment() > position.segment { return false }
            guard rolled || status.size > position.offset else { break }
            try recovery.replay()
            scanned = true
            if !rolled { break }
        }
        // The bytes replayed must still be there: a rollback cuts a segment and the writer appends
        // again, which only the last frame read shows (its length alone may be back).
        return try !scanned || recovery.witnessIntact()
    }

    /// Replaces the follower's state by a fresh load and publishes its table.
    private func reload(_ follower: LogFollower) throws -> Bool {
        let (recovery, superblockFile) = try Self.loadFollower(directory: directory, fileSystem: fileSystem, options: options)
        follower.recovery = recovery
        follower.superblockFile = superblockFile
        follower.slotEpochs = nil
        follower.reloads += 1
        publish(recovery)
        return true
    }

    /// Makes the follower's table the one new snapshots see.
    private func publish(_ recovery: Recovery) {
        shared.withLock { state in
            state.table = recovery.table
            state.lsn = recovery.lastLSN
            state.segments = recovery.files
            state.mappableEnd = recovery.checkpointedEnd
            state.publication += 1
        }
    }

    /// A follower's `close()`: nothing is written; the files are let go (snapshots still open
    /// keep the ones they read).
    func closeFollower() {
        guard let follower else { return }
        writerLock.withLock { _ in
            let alreadyClosed = shared.withLock { state in
                defer {
                    state.closed = true
                    state.segments = [:]
                }
                return state.closed
            }
            if alreadyClosed { return }
            follower.recovery.files = [:]
            follower.superblockFile.close()
        }
    }

    /// `statistics` of a follower: what it has replayed.
    func followerStatistics(_ follower: LogFollower) -> PageLogStatistics {
        writerLock.withLock { _ in
            let recovery = follower.recovery
            return PageLogStatistics(logBytes: recovery.usage.values.reduce(0) { $0 + $1.totalBytes },
                                     liveBytes: recovery.usage.values.reduce(0) { $0 + $1.liveBytes }, segmentCount: recovery.files.count,
                                     lastLSN: recovery.lastLSN, pageCount: (try? recovery.table.count()) ?? 0, checkpointEpoch: recovery.superblock.epoch,
                                     segmentSyncs: 0)
        }
    }
}

extension LogFollower {
    /// The highest segment a valid superblock slot names the checkpoint of: when it is after a
    /// follower's last segment while the next segment is missing, the writer rolled past and
    /// compacted the next one away. Read through the file's memory map when it has one — no
    /// system call (the superblock is rewritten in place, never shortened, so mapping it is
    /// safe) — and decoded only when a slot's epoch changed. A slot torn by a write in progress
    /// fails its checksum and is ignored; the other slot is whole.
    func newestCheckpointSegment() throws -> UInt64 {
        let stride = Superblock.slotStride, size = Superblock.encodedSize
        let read: Void? = try PageLog.translatingIOErrors {
            try superblockFile.withBytes(at: 0, count: stride + size) { raw in
                let epochs = (raw.loadUnaligned(fromByteOffset: 32, as: UInt64.self), raw.loadUnaligned(fromByteOffset: stride + 32, as: UInt64.self))
                if let seen = slotEpochs, seen == epochs { return }
                var newest: UInt64 = 0
                for slot in 0..<2 {
                    let bytes = Array(raw[(slot * stride)..<(slot * stride + size)])
                    if let block = try? Superblock.decode(bytes), block.slot == slot { newest = max(newest, block.root.segment) }
                }
                slotEpochs = epochs
                newestSlotSegment = newest
            }
        }
        return read == nil ? 0 : newestSlotSegment
    }
}

extension Recovery {
    /// Opens the segment after `end`'s when it exists (the writer rolled, or started one after
    /// a cut tail), so that `replay` continues into it. False when there is none.
    /// - Throws: `PageLogError.corruption` when it does not continue `end`'s segment.
    mutating func openNextSegment() throws -> Bool {
        let id = end.segment + 1
        if headers[id] != nil { return true }
        // A `stat` first: the common answer, no such file, then costs no thrown error.
        if nextSegmentPath?.id != id { nextSegmentPath = (id, joinPath(directory, StoreFileNames.segment(id))) }
        guard let name = nextSegmentPath?.path, fileSystem.fileExists(name), let (file, header) = try openSegment(id) else { return false }
        guard header.previousSegmentID == end.segment else {
            throw PageLogError.corruption(file: file.path, offset: 40, reason: "segment \(id) continues segment \(header.previousSegmentID), expected \(end.segment)")
        }
        files[id] = file
        headers[id] = header
        return true
    }

    /// Whether the last frame replay read (`witness`) is still the same frame.
    func witnessIntact() throws -> Bool {
        guard let witness else { return true }
        guard let file = files[witness.segment] else { return false }
        let header = try PageLog.translatingIOErrors {
            try file.withBytesRead(at: witness.offset, count: FrameHeader.size) { try? FrameHeader.decode($0) }
        }
        return header ?? nil == witness.header
    }

    /// Lets go of segments before the last one that no page table entry refers to (a
    /// follower's: compacted by its writer), so their files can be freed once no snapshot
    /// reads them.
    mutating func releaseUnreferencedSegments() {
        guard let pageCounts else { return }
        for id in Array(files.keys) where id < end.segment && pageCounts[id] == nil {
            files[id] = nil
            headers[id] = nil
            usage[id] = nil
        }
    }
}

extension PageLogError {
    /// Whether a follower may see this error only because its writer changed the folder while
    /// it read (so it tries again): corruption, or a file gone.
    var mayComeFromAConcurrentWriter: Bool {
        switch self {
        case .corruption: true
        case .io(let error): error.kind == .notFound
        default: false
        }
    }
}
