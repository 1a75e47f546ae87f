import StrataFormat
import StrataIO

extension PageLog {
    /// Recovery (Docs/Architecture.md, "Recovery"): pick the newest valid superblock slot and
    /// recover from its checkpoint; if that checkpoint is damaged, try the older slot (its
    /// replay runs through the newer checkpoint's frames and reaches the same end). `finish`
    /// turns the recovered state into what the caller opens (a writer's page log, or a
    /// follower's state); a corruption it throws makes the older slot be tried too.
    ///
    /// `segmentIDs`: the segment files present, or nil to list them after reading the
    /// superblock (a follower: a segment its writer creates meanwhile is then either listed or
    /// found by the next refresh). `readOnly`: a follower's recovery (invariant 32): files
    /// opened for reading only, a torn tail is where the writer is appending, not an error.
    static func recover<T>(directory: String, fileSystem: any FileSystem, options: PageLogOptions, segmentIDs: [UInt64]?,
                           created: Bool, readOnly: Bool, _ finish: (Recovery, any StorageFile) throws -> T) throws -> T {
        let superblockPath = joinPath(directory, StoreFileNames.superblock)
        let superblockFile: any StorageFile
        let bytes: [UInt8]
        do {
            superblockFile = try readOnly ? fileSystem.openForReading(superblockPath) : fileSystem.openFile(superblockPath, create: false)
            bytes = try superblockFile.read(count: Superblock.fileSize, at: 0)
        } catch let error as IOError {
            throw PageLogError.io(error)
        }
        var candidates: [Superblock] = []
        var problems: [String] = []
        for slot in 0..<2 {
            let start = slot * Superblock.slotStride
            let slice = start < bytes.count ? Array(bytes[start..<min(bytes.count, start + Superblock.encodedSize)]) : []
            do {
                let block = try Superblock.decode(slice)
                guard block.slot == slot else {
                    problems.append("slot \(slot) at offset \(start): epoch \(block.epoch) belongs in slot \(block.slot)")
                    continue
                }
                candidates.append(block)
            } catch let error as FormatError {
                if let version = error.unsupportedVersion {
                    throw PageLogError.unsupportedFormatVersion(file: superblockPath, found: version, supported: currentFormatVersion)
                }
                problems.append("slot \(slot) at offset \(start): \(error.reason)")
            }
        }
        candidates.sort { $0.epoch > $1.epoch }
        guard !candidates.isEmpty else {
            throw PageLogError.corruption(file: superblockPath, offset: 0,
                                          reason: "neither superblock slot is valid (\(problems.joined(separator: "; ")))")
        }
        let segmentIDs = try segmentIDs ?? listSegments(directory: directory, fileSystem: fileSystem)
        // Every valid slot proves the log was synced up to the end of the checkpoint it names;
        // recovering from an older slot must replay at least that far.
        let mustReach = candidates.map { LogPosition(segment: $0.root.segment, offset: $0.root.end) }.max()
        var firstError: Error?
        for (index, superblock) in candidates.enumerated() {
            do {
                var recovery = try Recovery(directory: directory, fileSystem: fileSystem, options: options, superblock: superblock,
                                            segmentIDs: segmentIDs, mustReach: mustReach, readOnly: readOnly)
                recovery.report.usedOlderSuperblock = index > 0
                recovery.report.created = created
                return try finish(recovery, superblockFile)
            } catch let error as PageLogError {
                guard case .corruption = error else { throw error }
                if firstError == nil { firstError = error }
            }
        }
        throw firstError ?? PageLogError.corruption(file: superblockPath, offset: 0, reason: "no usable checkpoint")
    }

    /// The ids of the segment files in `directory`, ascending.
    static func listSegments(directory: String, fileSystem: any FileSystem) throws -> [UInt64] {
        do {
            return try fileSystem.contentsOfDirectory(directory).compactMap(StoreFileNames.segmentID).sorted()
        } catch let error as IOError {
            throw PageLogError.io(error)
        }
    }
}

/// The work of recovering from one superblock; `finish` builds the open page log. A
/// follower keeps its `Recovery` and goes on replaying the log from where it ended
/// (`PageLog+Follow.swift`).
struct Recovery {
    let directory: String
    let fileSystem: any FileSystem
    let options: PageLogOptions
    let superblock: Superblock
    /// A follower's recovery (invariant 32): files opened for reading only; a segment listed
    /// but gone when opened is skipped (the writer deleted it; the chain check still requires
    /// every segment from the checkpoint's on); replay keeps frames pending at the end.
    let readOnly: Bool
    var report = RecoveryReport()

    var files: [UInt64: any StorageFile] = [:]
    var headers: [UInt64: SegmentHeader] = [:]
    var table = PageTable()
    var chunkLocations: [PageLocation] = []
    var chunksNeedRewrite = false
    /// For each checkpointed chunk, whether it was loaded with every entry present (its ids
    /// are then all in use unless replay changed the chunk); lets `finish` skip full chunks
    /// when it lists the free page ids.
    var fullChunks: [Bool] = []
    /// Whether every checkpointed chunk was loaded (false: a writer's open left them pending,
    /// invariant 16, and `referencedSegments` holds only what replay saw).
    var allChunksLoaded = true
    /// Segments the checkpointed page table refers to.
    var referencedSegments = Set<UInt64>()
    var usage: [UInt64: SegmentUsage] = [:]
    var lastLSN: UInt64
    var maxSeenLSN: UInt64
    var nextPageID: UInt64
    var dirtyChunks = Set<Int>()
    /// Where the valid log ends: the last segment and the first offset after its last valid
    /// frame. Replay starts here (just after the checkpoint root at first).
    var end: LogPosition
    var lastSegmentSize: UInt64 = 0
    /// Whether the last segment's file goes on after the log with zeros only (invariant 35):
    /// the writer keeps them and overwrites them as it appends.
    var zeroTail = false
    /// Frames of the transaction replay has not seen the commit frame of yet (a follower
    /// keeps them from one refresh to the next: its writer may be appending that transaction).
    var pending: [(pageID: UInt64, location: PageLocation)] = []
    var pendingLSN: UInt64?
    /// The header of the last valid frame replay read in the last segment, and where: a
    /// follower reads it again after each refresh to prove the bytes it replayed were not cut
    /// and rewritten meanwhile (a migration's rollback). Nil before the segment's first frame.
    var witness: (segment: UInt64, offset: UInt64, header: FrameHeader)?
    /// The end of the last checkpoint root replay passed (or the superblock's): bytes before it
    /// are never truncated (invariant 26 holds checkpoints from a rollback point on), so a
    /// follower may read them through memory maps (invariant 32).
    var checkpointedEnd: LogPosition
    /// Page table entries per segment, kept by a follower (nil otherwise) so that it lets go of
    /// segments its table no longer refers to.
    var pageCounts: [UInt64: Int]?
    /// The path of the segment after the last, which a follower looks for at each refresh.
    var nextSegmentPath: (id: UInt64, path: String)?

    private func path(_ name: String) -> String { joinPath(directory, name) }

    init(directory: String, fileSystem: any FileSystem, options: PageLogOptions, superblock: Superblock, segmentIDs: [UInt64],
         mustReach: LogPosition?, readOnly: Bool = false) throws {
        self.directory = directory
        self.fileSystem = fileSystem
        self.options = options
        self.superblock = superblock
        self.readOnly = readOnly
        end = LogPosition(segment: superblock.root.segment, offset: superblock.root.end)
        checkpointedEnd = end
        report.superblockEpoch = superblock.epoch
        lastLSN = superblock.checkpointLSN
        maxSeenLSN = superblock.checkpointLSN
        nextPageID = PageLog.firstAllocatablePageID
        try openSegments(segmentIDs)
        try loadCheckpoint()
        try replay()
        if let mustReach, end < mustReach {
            throw PageLogError.corruption(file: path(StoreFileNames.segment(end.segment)), offset: end.offset,
                                          reason: "the log ends at \(end), before the checkpoint at \(mustReach) named by the newer superblock slot")
        }
    }

    // MARK: Segments

    private mutating func openSegments(_ ids: [UInt64]) throws {
        for id in ids {
            let name = path(StoreFileNames.segment(id))
            guard id <= UInt64(UInt32.max) else {
                throw PageLogError.corruption(file: name, offset: 0, reason: "segment id \(id) is out of range")
            }
            guard let (file, header) = try openSegment(id) else { continue }  // a follower's writer deleted it
            files[id] = file
            headers[id] = header
        }
        let rootSegment = superblock.root.segment
        guard files[rootSegment] != nil else {
            throw PageLogError.corruption(file: path(StoreFileNames.superblock), offset: UInt64(superblock.slot * Superblock.slotStride + 48),
                                          reason: "segment \(rootSegment), which holds the checkpoint, is missing")
        }
        let last = ids.last ?? rootSegment
        for id in rootSegment...last where id > rootSegment {
            guard let header = headers[id] else {
                throw PageLogError.corruption(file: path(StoreFileNames.segment(id)), offset: 0,
                                              reason: "segment \(id) is missing from the log, which runs from segment \(rootSegment) to \(last)")
            }
            guard header.previousSegmentID == id - 1 else {
                throw PageLogError.corruption(file: path(StoreFileNames.segment(id)), offset: 40,
                                              reason: "segment \(id) continues segment \(header.previousSegmentID), expected \(id - 1)")
            }
        }
    }

    /// Opens segment `id` and checks its header (store id, id); nil when a follower finds it
    /// gone (a writer never does: its listing is its own).
    func openSegment(_ id: UInt64) throws -> (any StorageFile, SegmentHeader)? {
        let name = path(StoreFileNames.segment(id))
        let file: any StorageFile
        let bytes: [UInt8]
        do {
            file = try readOnly ? fileSystem.openForReading(name) : fileSystem.openFile(name, create: false)
            bytes = try file.read(count: SegmentHeader.size, at: 0)
        } catch let error as IOError where readOnly && error.kind == .notFound {
            return nil
        } catch let error as IOError {
            throw PageLogError.io(error)
        }
        let header: SegmentHeader
        do {
            header = try SegmentHeader.decode(bytes)
        } catch let error as FormatError {
            if let version = error.unsupportedVersion {
                throw PageLogError.unsupportedFormatVersion(file: name, found: version, supported: currentFormatVersion)
            }
            throw PageLogError.corrupt(name, 0, error)
        }
        guard header.storeID == superblock.storeID else {
            throw PageLogError.corruption(file: name, offset: 16, reason: "segment belongs to store \(header.storeID), not \(superblock.storeID)")
        }
        guard header.segmentID == id else {
            throw PageLogError.corruption(file: name, offset: 32, reason: "segment file \(id) says it is segment \(header.segmentID)")
        }
        return (file, header)
    }

    // MARK: Checkpoint

    /// Reads and checks the checkpoint root `superblock` names, in `rootFile` (its segment):
    /// a valid checkpoint frame at the slot's LSN whose root decodes, at that LSN, with a next
    /// page id in range. Recovery loads it; verification reads every valid slot's.
    /// - Throws: `PageLogError.corruption` at the root frame (or the field at fault); `.io`.
    static func readCheckpointRoot(of superblock: Superblock, in rootFile: any StorageFile) throws -> CheckpointRoot {
        let address = superblock.root
        let (header, payload) = try PageLog.readFrame(in: rootFile, at: address.offset, length: address.length, decompress: true, mapped: false)
        guard header.kind == .checkpoint, header.lsn == superblock.checkpointLSN else {
            throw PageLogError.corruption(file: rootFile.path, offset: address.offset,
                                          reason: "the superblock names a checkpoint at LSN \(superblock.checkpointLSN), found a \(header.kind) frame at LSN \(header.lsn)")
        }
        let root: CheckpointRoot
        do { root = try CheckpointRoot.decode(payload) } catch let error as FormatError {
            throw PageLogError.corrupt(rootFile.path, address.offset + UInt64(FrameHeader.size), error)
        }
        guard root.lsn == header.lsn else {
            throw PageLogError.corruption(file: rootFile.path, offset: address.offset + UInt64(FrameHeader.size),
                                          reason: "checkpoint root LSN \(root.lsn) differs from its frame's LSN \(header.lsn)")
        }
        guard root.nextPageID <= PageLog.maximumPageID else {
            throw PageLogError.corruption(file: rootFile.path, offset: address.offset + UInt64(FrameHeader.size) + 8,
                                          reason: "next page id \(root.nextPageID) exceeds the maximum \(PageLog.maximumPageID)")
        }
        return root
    }

    private mutating func loadCheckpoint() throws {
        let address = superblock.root
        guard let rootFile = files[address.segment] else { return }
        let root = try Self.readCheckpointRoot(of: superblock, in: rootFile)
        nextPageID = max(root.nextPageID, PageLog.firstAllocatablePageID)
        let entriesPerChunk = Int(root.chunkEntries)
        chunksNeedRewrite = entriesPerChunk != PageTable.chunkEntries
        if !chunksNeedRewrite { fullChunks = [Bool](repeating: false, count: root.chunks.count) }
        // The chunks are left pending (invariant 16) unless a writer must rewrite them at
        // another size.
        let lazy = !chunksNeedRewrite
        let segmentIDs = Set(files.keys)
        var scratch: [UInt8] = []
        for (index, location) in root.chunks.enumerated() where !location.isNone {
            guard let file = files[UInt64(location.segment)] else {
                throw PageLogError.corruption(file: rootFile.path, offset: address.offset,
                                              reason: "page table chunk \(index) is in segment \(location.segment), which is missing")
            }
            if lazy {
                table.setPending(index, PendingChunk(index: index, location: location, file: file, entriesPerChunk: entriesPerChunk,
                                                     nextPageID: nextPageID, segments: segmentIDs))
                continue
            }
            let (entries, present) = try Self.readChunk(index, at: location, in: file, entries: entriesPerChunk, scratch: &scratch)
            guard present > 0 else {
                if !chunksNeedRewrite { table.setChunk(index, entries, isEmpty: true) }
                continue
            }
            try Self.checkChunk(entries, index: index, at: location, in: file, nextPageID: nextPageID, seen: &referencedSegments) {
                files[$0] != nil
            }
            if chunksNeedRewrite {
                for (slot, entry) in entries.enumerated() where !entry.isNone {
                    try table.set(entry, for: UInt64(index * entriesPerChunk + slot))
                }
            } else {
                table.setChunk(index, entries, isEmpty: false)
                fullChunks[index] = present == entriesPerChunk
            }
        }
        allChunksLoaded = !lazy
        chunkLocations = chunksNeedRewrite ? [] : root.chunks
        if chunksNeedRewrite { dirtyChunks = Set(0..<table.chunkCount) }
        for statistics in root.segments where files[statistics.segmentID] != nil {
            usage[statistics.segmentID] = SegmentUsage(totalBytes: statistics.totalBytes, liveBytes: statistics.liveBytes)
        }
        // The root's own frame is not in the statistics it carries (and its segment may be
        // newer than them, when appending the root started a segment).
        var rootUsage = usage[address.segment] ?? SegmentUsage(totalBytes: UInt64(SegmentHeader.size), liveBytes: 0)
        rootUsage.totalBytes += UInt64(address.length)
        rootUsage.liveBytes += UInt64(address.length)
        usage[address.segment] = rootUsage
    }

    // MARK: Replay

    /// Replays the log from `end` (invariant 5: a transaction's frames take effect at its commit
    /// frame) through every segment in `headers`, up to the first frame that is not valid, and
    /// sets `end` there. A follower calls it again after each refresh found more bytes (or a
    /// new segment): it goes on from where it stopped, with its pending frames.
    mutating func replay() throws {
        var segment = end.segment
        var start = end.offset
        var rescanned = false
        while true {
            guard let file = files[segment] else { break }
            let size: UInt64
            do { size = try file.size() } catch let error as IOError { throw PageLogError.io(error) }
            guard size <= UInt64(UInt32.max) else {
                throw PageLogError.corruption(file: file.path, offset: UInt64(UInt32.max), reason: "segment file of \(size) bytes exceeds 4 GiB")
            }
            if usage[segment] == nil { usage[segment] = SegmentUsage(totalBytes: UInt64(SegmentHeader.size), liveBytes: 0) }
            var scanner = FrameScanner(file: file, start: start, size: size)
            var stopOffset: UInt64 = start
            var stopReason = ""
            scan: while true {
                switch try scanner.next() {
                case .end(let offset, let reason):
                    stopOffset = offset
                    stopReason = reason
                    break scan
                case .frame(let header, let stored, let offset):
                    let length = UInt64(header.frameLength)
                    switch header.kind {
                    case .page, .free:
                        guard header.lsn > lastLSN, header.lsn >= (pendingLSN ?? 0) else {
                            stopOffset = offset
                            stopReason = "stale frame (LSN \(header.lsn) after LSN \(max(lastLSN, pendingLSN ?? 0)))"
                            break scan
                        }
                        if header.lsn != pendingLSN {
                            pending.removeAll()  // an abandoned transaction: its frames are dead
                            pendingLSN = header.lsn
                        }
                        if header.kind == .free && header.rawLength != 0 {
                            throw PageLogError.corruption(file: file.path, offset: offset, reason: "free frame with a \(header.rawLength)-byte payload")
                        }
                        let location = header.kind == .page
                            ? PageLocation(segment: UInt32(segment), offset: UInt32(offset), length: UInt32(length), lsn: header.lsn)
                            : PageLocation.none
                        pending.append((header.pageID, location))
                        maxSeenLSN = max(maxSeenLSN, header.lsn)
                    case .commit:
                        guard header.lsn > lastLSN, header.lsn >= (pendingLSN ?? 0) else {
                            stopOffset = offset
                            stopReason = "stale commit (LSN \(header.lsn))"
                            break scan
                        }
                        if header.lsn != pendingLSN { pending.removeAll() }
                        guard header.codec == .none, header.pageID == 0, header.entityID == 0, header.schemaVersion == 0 else {
                            throw PageLogError.corruption(file: file.path, offset: offset,
                                                          reason: "commit frame with a codec, page id, entity or schema version set")
                        }
                        let record: CommitRecord
                        do { record = try CommitRecord.decode(stored) } catch let error as FormatError {
                            throw PageLogError.corrupt(file.path, offset + UInt64(FrameHeader.size), error)
                        }
                        guard record.nextPageID <= PageLog.maximumPageID else {
                            throw PageLogError.corruption(file: file.path, offset: offset + UInt64(FrameHeader.size) + 24,
                                                          reason: "next page id \(record.nextPageID) exceeds the maximum \(PageLog.maximumPageID)")
                        }
                        guard record.frameCount == UInt32(pending.count) else {
                            throw PageLogError.corruption(file: file.path, offset: offset,
                                                          reason: "commit of LSN \(header.lsn) counts \(record.frameCount) frames, the log holds \(pending.count)")
                        }
                        for (pageID, location) in pending {
                            guard pageID < record.nextPageID || pageID < PageLog.firstAllocatablePageID else {
                                throw PageLogError.corruption(file: file.path, offset: offset,
                                                              reason: "commit of LSN \(header.lsn) writes page \(pageID) at or above its next page id \(record.nextPageID)")
                            }
                            let old = try table.location(of: pageID)
                            if !old.isNone, var entry = usage[UInt64(old.segment)] {
                                entry.liveBytes -= min(entry.liveBytes, UInt64(old.length))
                                usage[UInt64(old.segment)] = entry
                            }
                            if !location.isNone { usage[UInt64(location.segment)]?.liveBytes += UInt64(location.length) }
                            if pageCounts != nil { countPages(old: old, new: location) }
                            try table.set(location, for: pageID)
                            dirtyChunks.insert(Int(pageID / UInt64(PageTable.chunkEntries)))
                        }
                        nextPageID = max(nextPageID, record.nextPageID)
                        lastLSN = header.lsn
                        maxSeenLSN = max(maxSeenLSN, header.lsn)
                        report.replayedTransactions += 1
                        pending.removeAll()
                        pendingLSN = nil
                    case .tableChunk, .checkpoint:
                        // Written by a checkpoint whose superblock slot is not in charge (for a
                        // follower: its writer's checkpoints); changes nothing. Checkpoints run
                        // between transactions, so frames pending here belong to an abandoned
                        // transaction (whose LSN a later one may reuse).
                        pending.removeAll()
                        pendingLSN = nil
                        if header.kind == .checkpoint {
                            checkpointedEnd = max(checkpointedEnd, LogPosition(segment: segment, offset: offset + length))
                        }
                    }
                    usage[segment]?.totalBytes += length
                    report.replayedBytes += length
                    witness = (segment, offset, header)
                }
            }
            if let next = headers[segment + 1] {
                guard stopOffset == next.previousSegmentEnd else {
                    throw PageLogError.corruption(file: file.path, offset: stopOffset,
                                                  reason: "\(stopReason), but segment \(segment + 1) says this segment's log runs to offset \(next.previousSegmentEnd)")
                }
                segment += 1
                start = UInt64(SegmentHeader.size)
                witness = nil
                continue
            }
            // The last segment: anything after the valid frames is a torn or unfinished write,
            // unless a later commit proves those bytes had been synced.
            end = LogPosition(segment: segment, offset: stopOffset)
            lastSegmentSize = size
            if stopOffset < size {
                if try scanner.isZero(from: stopOffset) {
                    zeroTail = true  // written ahead (invariant 35), not a torn write: no frame can prove it
                } else if let proof = try scanner.findDurabilityProof(after: stopOffset, beyond: end, segment: segment) {
                    // A follower may have read the frame at the stop while its writer was still
                    // writing it, and the proving commit after it was synced: read it once more.
                    if readOnly && !rescanned {
                        rescanned = true
                        start = stopOffset
                        continue
                    }
                    throw PageLogError.corruption(file: file.path, offset: stopOffset,
                                                  reason: "\(stopReason); the commit at offset \(proof) shows these bytes had been synced")
                } else {
                    report.tailWasTorn = true
                }
            }
            if !pending.isEmpty { report.tailWasTorn = true }
            break
        }
    }

    /// Keeps `pageCounts` as a table entry moves from `old` to `new`.
    private mutating func countPages(old: PageLocation, new: PageLocation) {
        if !old.isNone, let count = pageCounts?[UInt64(old.segment)] {
            pageCounts?[UInt64(old.segment)] = count > 1 ? count - 1 : nil
        }
        if !new.isNone { pageCounts?[UInt64(new.segment), default: 0] += 1 }
    }

    // MARK: Finish

    /// Builds the page log. When the tail was cut, the last segment is truncated at the cut
    /// and synced before anything is appended, so the bytes after the cut are never read
    /// again — and opening needs no new space, even on a full device (Docs/Architecture.md,
    /// invariants 6 and 33). A tail of zeros only is kept: the writer appends over it as it
    /// does over the zeros it writes ahead (invariant 35), and a reader opening the store
    /// changes no byte of it.
    func finish(superblockFile: any StorageFile, lock: any FileLock) throws -> PageLog {
        let usage = self.usage
        let segments = files
        guard let lastFile = files[end.segment] else {
            throw PageLogError.corruption(file: path(StoreFileNames.segment(end.segment)), offset: 0, reason: "segment missing")
        }
        do {
            if end.offset < lastSegmentSize && !zeroTail { try lastFile.truncate(to: end.offset) }
            // What was read may still be only in the page cache (a killed process); sync it
            // (and the cut) before commit records may claim it durable.
            try lastFile.sync()
        } catch let error as IOError {
            throw PageLogError.io(error)
        }
        let activeSegment = end.segment
        let activeOffset = end.offset
        let activeFile = lastFile
        // Free ids as ranges, ascending, then reversed so the lowest are handed out first.
        var free: [Range<UInt64>] = []
        func add(_ range: Range<UInt64>) {
            guard !range.isEmpty else { return }
            if let last = free.last, last.upperBound == range.lowerBound {
                free[free.count - 1] = last.lowerBound..<range.upperBound
            } else {
                free.append(range)
            }
        }
        let chunkSize = UInt64(PageTable.chunkEntries)
        for chunkIndex in 0..<Int((nextPageID + chunkSize - 1) / chunkSize) {
            let base = UInt64(chunkIndex) * chunkSize
            let upper = min(nextPageID, base + chunkSize)
            let lower = max(PageLog.firstAllocatablePageID, base)
            guard lower < upper else { continue }
            if table.isPending(chunkIndex) {
                continue  // its free ids are listed when the writer materializes it (invariant 16)
            } else if chunkIndex >= table.chunkCount || table.chunks[chunkIndex].isEmpty {
                add(lower..<upper)
            } else if chunkIndex < fullChunks.count, fullChunks[chunkIndex], !dirtyChunks.contains(chunkIndex) {
                continue  // loaded full and untouched by replay: no free id
            } else {
                table.chunks[chunkIndex].withUnsafeBufferPointer { chunk in
                    for id in lower..<upper where chunk[Int(id - base)].isNone { add(id..<(id + 1)) }
                }
            }
        }
        let writer = LogWriter(
            activeSegment: activeSegment, activeFile: activeFile, flushedOffset: activeOffset, table: table, lastLSN: lastLSN,
            nextLSN: max(lastLSN, maxSeenLSN) + 1, nextPageID: nextPageID, freePageIDs: FreePageList(ranges: free.reversed()), usage: usage,
            chunkLocations: chunkLocations, dirtyChunks: dirtyChunks, superblock: superblock, superblockFile: superblockFile,
            rootAddress: superblock.root)
        writer.bytesSinceCheckpoint = report.replayedBytes
        if zeroTail {
            writer.preallocatedEnd = lastSegmentSize
            writer.mayHaveZeroTail = true
        }
        // Segments before the checkpoint's that nothing refers to were emptied by a compaction
        // whose deletion did not happen; retire them again.
        // With the chunks pending, which segments pages refer to is not known: a segment the
        // checkpoint's statistics give live bytes is kept (keeping one is always safe); if any
        // other is left, the table is loaded to decide, as when it was loaded at open.
        var referenced = referencedSegments  // replay only writes to segments at or after the checkpoint's
        for chunk in chunkLocations where !chunk.isNone { referenced.insert(UInt64(chunk.segment)) }
        var candidates = files.keys.sorted().filter { $0 < superblock.root.segment && !referenced.contains($0) }
        if !allChunksLoaded && !candidates.isEmpty {
            candidates = candidates.filter { (usage[$0]?.liveBytes ?? 0) == 0 }
            if !candidates.isEmpty {
                try writer.table.forEach { _, location in referenced.insert(UInt64(location.segment)) }
                candidates = candidates.filter { !referenced.contains($0) }
            }
        }
        for id in candidates {
            writer.retired.append(RetiredSegment(segment: id, epoch: superblock.epoch + 1, lsn: 0))
        }
        return PageLog(fileSystem: fileSystem, directory: directory, options: options, storeID: superblock.storeID,
                       recoveryReport: report, writer: writer, segments: segments,
                       durablePosition: LogPosition(segment: activeSegment, offset: activeOffset), lock: lock,
                       reserve: SpaceReserve.open(directory: directory, fileSystem: fileSystem, capacity: options.spaceReserve))
    }
}
