import Dispatch
import StrataFormat
import StrataIO

/// What a compaction did.
package struct CompactionReport: Sendable, Equatable {
    /// Segments whose live pages were moved out; they are deleted once nothing needs them.
    package var retiredSegments: [UInt64] = []
    /// Segment files deleted by this call (retired by this or an earlier compaction).
    package var deletedSegments: [UInt64] = []
    package var relocatedPages = 0
    package var relocatedBytes: UInt64 = 0
}

extension PageLog {
    /// Compacts now: moves the live pages out of the emptiest sealed segments until the
    /// log is at most `targetAmplification` times the live bytes (default: three quarters of
    /// `maximumSpaceAmplification`, at least 1), then checkpoints twice so both superblock
    /// slots stop referring to the emptied segments, which are then deleted — unless an
    /// open snapshot still needs them, in which case a later checkpoint deletes them.
    /// `progress`, when given, is called after each segment moved with the fraction (0…1) of
    /// the excess log bytes reclaimed so far.
    ///
    /// `relocating` false (automatic compaction while relocations are held,
    /// `holdingAutomaticRelocations`): only sealed segments without a live page are retired,
    /// nothing is moved, and the active segment is not sealed early — unless the device is low
    /// on space (invariant 33), when compaction works as usual.
    @discardableResult
    package func compact(targetAmplification: Double? = nil, relocating: Bool = true,
                         progress: ((Double) -> Void)? = nil) throws -> CompactionReport {
        try writerLock.withLock { _ in
            try checkWritable()
            if checkpointsHeld.load(ordering: .acquiring) { return CompactionReport() }
            return try compactLocked(targetAmplification: targetAmplification, relocating: relocating, progress: progress)
        }
    }

    func compactLocked(targetAmplification: Double?, relocating: Bool = true,
                       progress: ((Double) -> Void)? = nil) throws -> CompactionReport {
        let target = max(1.0, targetAmplification ?? options.maximumSpaceAmplification * 0.75)
        var report = CompactionReport()
        let retiredBefore = Set(writer.retired.map(\.segment))
        let segmentsBefore = Set(writer.usage.keys)
        // Whether segments retired (by this call or before) wait for the final pair of checkpoints.
        var awaitingDeletion = !retiredBefore.isEmpty
        let emptyOnly = !relocating && !isLowOnSpace
        // The active segment's dead space is reclaimed only once it is sealed: when the log
        // needs compacting and at least half of the active segment (and 64 KiB) is dead, seal it
        // now, so its live pages move like any other segment's. (A small store's migration
        // leaves the old version, and its deferred compression the uncompressed leaves, there.)
        if !emptyOnly, let active = writer.usage[writer.activeSegment],
           Double(writer.unretiredLogBytes) > target * Double(max(writer.totalLiveBytes, 1)),
           active.totalBytes - min(active.liveBytes, active.totalBytes) >= max(active.totalBytes / 2, 64 << 10) {
            try rollSegment()
        }
        // Only segments sealed before this point are candidates: relocation writes new segments,
        // and compacting those would never end.
        let firstNewSegment = writer.activeSegment
        let excess = max(1, Double(writer.unretiredLogBytes) - target * Double(max(writer.totalLiveBytes, 1)))
        while true {
            // Retired segments count as gone: each relocation adds its copy to the log, and
            // the victim's bytes go at the checkpoints below.
            let total = writer.unretiredLogBytes
            let live = writer.totalLiveBytes
            if Double(total) <= target * Double(max(live, 1)) { break }
            let retired = Set(writer.retired.map(\.segment))
            let candidates = writer.usage.filter { id, usage in
                id < firstNewSegment && !retired.contains(id)
                    && (emptyOnly ? usage.liveBytes == 0 : usage.liveBytes + UInt64(SegmentHeader.size) < usage.totalBytes)
            }
            // The emptiest segment first; ties by id, so a run is reproducible. Low on space
            // (invariant 33), the one with the fewest live bytes: the least room to move it.
            let lowOnSpace = isLowOnSpace
            guard let victim = candidates.min(by: { a, b in
                let left = lowOnSpace ? Double(a.value.liveBytes) : Double(a.value.liveBytes) / Double(max(a.value.totalBytes, 1))
                let right = lowOnSpace ? Double(b.value.liveBytes) : Double(b.value.liveBytes) / Double(max(b.value.totalBytes, 1))
                return left != right ? left < right : a.key < b.key
            })?.key else { break }
            let (pages, bytes) = try relocate(segment: victim)
            report.retiredSegments.append(victim)
            report.relocatedPages += pages
            report.relocatedBytes += bytes
            awaitingDeletion = true
            if let progress {
                let left = Double(writer.unretiredLogBytes) - target * Double(max(writer.totalLiveBytes, 1))
                progress(min(1, max(0, 1 - left / excess)))
            }
            if lowOnSpace {
                // Delete it now (invariant 10), so the next one moves into the room it leaves.
                try checkpointLocked(refillingReserve: false)
                try checkpointLocked(refillingReserve: false)
                awaitingDeletion = false
            }
        }
        if awaitingDeletion {
            try checkpointLocked(refillingReserve: false)
            try checkpointLocked(refillingReserve: false)
        }
        refillReserve()
        report.deletedSegments = segmentsBefore.subtracting(writer.usage.keys).sorted()
        return report
    }

    /// Moves every live page of `segment` to the end of the log in one transaction, marks the
    /// page table chunks stored there for rewriting, and retires the segment.
    private func relocate(segment: UInt64) throws -> (pages: Int, bytes: UInt64) {
        guard let file = shared.withLock({ $0.segments[segment] }) else {
            throw PageLogError.corruption(file: path(StoreFileNames.segment(segment)), offset: 0, reason: "segment \(segment) is missing")
        }
        // Every chunk is materialized: the ones stored in this segment are rewritten at the
        // next checkpoint, and no pending chunk may be left to read from a deleted segment.
        try writer.materializeAll()
        var live: [(UInt64, PageLocation)] = []
        try writer.table.forEach { id, location in
            if UInt64(location.segment) == segment { live.append((id, location)) }
        }
        live.sort { $0.1.offset < $1.1.offset }
        let transaction = PageLogTransaction(log: self, writer: writer, lsn: writer.nextLSN)
        writer.nextLSN += 1
        var bytes: UInt64 = 0
        do {
            for (pageID, location) in live {
                let (header, stored) = try PageLog.readFrame(in: file, at: UInt64(location.offset), length: location.length, decompress: false, mapped: false)
                guard header.kind == .page, header.pageID == pageID, header.lsn == location.lsn else {
                    throw PageLogError.corruption(file: file.path, offset: UInt64(location.offset),
                                                  reason: "expected page \(pageID) at LSN \(location.lsn), found a \(header.kind) frame for page \(header.pageID) at LSN \(header.lsn)")
                }
                try transaction.relocate(pageID, header: header, stored: stored)
                bytes += UInt64(location.length)
            }
        } catch {
            transaction.abandon()
            throw error
        }
        for (index, chunk) in writer.chunkLocations.enumerated() where UInt64(chunk.segment) == segment {
            writer.dirtyChunks.insert(index)
        }
        _ = try transaction.commit()
        writer.retired.append(RetiredSegment(segment: segment, epoch: writer.superblock.epoch + 1, lsn: writer.lastLSN))
        return (live.count, bytes)
    }

    /// Runs `body` with automatic compaction limited to the sealed segments without a live
    /// page (they cost no copy), then starts one if the log needs it: for work that is about
    /// to make most live pages dead (the deferred compression pass, which writes every
    /// uncompressed leaf again), so that compaction does not copy the pages it drops. An
    /// explicit `compact` meanwhile works as usual.
    package func holdingAutomaticRelocations<T>(_ body: () throws -> T) rethrows -> T {
        relocationHolds.add(1, ordering: .relaxed)
        defer {
            relocationHolds.subtract(1, ordering: .relaxed)
            scheduleCompactionIfNeeded()
        }
        return try body()
    }

    /// Starts a background compaction when space amplification passed the limit.
    package func scheduleCompactionIfNeeded() {
        guard options.automaticCompaction, !checkpointsHeld.load(ordering: .acquiring) else { return }
        let wanted = writerLock.withLock { _ in
            let total = writer.unretiredLogBytes
            return total >= UInt64(options.compactionMinimumBytes)
                && Double(total) > options.maximumSpaceAmplification * Double(max(writer.totalLiveBytes, 1))
        }
        guard wanted, !backgroundCompactionScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            defer { backgroundCompactionScheduled.store(false, ordering: .releasing) }
            do {
                try compact(relocating: relocationHolds.load(ordering: .relaxed) == 0)
            } catch PageLogError.closed {
                // Closed meanwhile: nothing to do.
            } catch {
                backgroundError.withLock { $0 = "\(error)" }
            }
        }
    }
}
