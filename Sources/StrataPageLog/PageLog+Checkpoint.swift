import StrataFormat
import StrataIO

extension PageLog {
    /// Checkpoint state machine (Docs/Architecture.md, "Checkpoint"):
    /// 1. write every dirty page table chunk as a frame;
    /// 2. write the checkpoint root (chunk addresses + segment usage);
    /// 3. sync the active segment;
    /// 4. write the superblock slot the new epoch selects, sync the superblock file;
    /// 5. delete retired segments nothing can need any more, and refill the space reserve
    ///    (invariant 33) from the space they held — unless `refillingReserve` is false (a
    ///    compaction, which refills once at its end: until then it needs that room itself).
    /// A crash before step 4 completes leaves the previous superblock in charge; recovery
    /// replays through the new frames, which change nothing.
    func checkpointLocked(refillingReserve: Bool = true) throws {
        let lsn = writer.lastLSN
        // 1. Dirty chunks.
        if writer.chunkLocations.count < writer.table.chunkCount {
            writer.chunkLocations.append(contentsOf: repeatElement(.none, count: writer.table.chunkCount - writer.chunkLocations.count))
        }
        for index in writer.dirtyChunks.sorted() where index < writer.chunkLocations.count {
            let entries = try writer.table.chunkEntries(index)
            let old = writer.chunkLocations[index]
            var new = PageLocation.none
            if entries.contains(where: { !$0.isNone }) {
                new = try TableChunkCodec.encode(entries).withUnsafeBytes {
                    try append(kind: .tableChunk, pageID: UInt64(index), lsn: lsn, payload: $0, compress: options.compression)
                }
                new.lsn = lsn
            }
            writer.replaceLive(old: old, new: new)
            writer.chunkLocations[index] = new
        }
        // 2. Root. Its own frame is not in the usage it records; readers add it when loading.
        let oldRoot = writer.rootAddress
        writer.replaceLive(old: PageLocation(segment: UInt32(oldRoot.segment), offset: UInt32(oldRoot.offset), length: oldRoot.length, lsn: 1),
                           new: .none)
        let root = CheckpointRoot(
            lsn: lsn, nextPageID: writer.nextPageID, chunkEntries: UInt32(PageTable.chunkEntries),
            chunks: writer.chunkLocations,
            segments: writer.usage.keys.sorted().map { id in
                let usage = writer.usage[id] ?? SegmentUsage(totalBytes: 0, liveBytes: 0)
                return CheckpointRoot.SegmentStatistics(segmentID: id, totalBytes: usage.totalBytes, liveBytes: usage.liveBytes)
            })
        let rootLocation = try root.encoded().withUnsafeBytes {
            try append(kind: .checkpoint, pageID: 0, lsn: lsn, payload: $0, compress: options.compression)
        }
        writer.replaceLive(old: .none, new: rootLocation)
        // 3. Sync the log.
        try syncActiveSegment()
        // 4. Superblock.
        let address = FrameAddress(segment: UInt64(rootLocation.segment), offset: UInt64(rootLocation.offset), length: rootLocation.length)
        var superblock = Superblock(storeID: storeID, epoch: writer.superblock.epoch + 1, checkpointLSN: lsn, root: address)
        superblock.formatVersion = formatVersion
        let file = writer.superblockFile
        try io {
            try file.write(superblock.encoded(), at: UInt64(superblock.slot * Superblock.slotStride))
            try file.sync()
        }
        writer.superblock = superblock
        writer.rootAddress = address
        writer.dirtyChunks = []
        writer.bytesSinceCheckpoint = 0
        // 5. Retired segments.
        try deleteRetiredSegments()
        if refillingReserve { refillReserve() }
    }

    /// Refills the space reserve (invariant 33) by the bytes of the segments deleted since the
    /// last refill, so it never takes back more than the store itself gave up.
    func refillReserve() {
        guard writer.freedSinceRefill > 0 else { return }
        reserve?.refill(upTo: writer.freedSinceRefill)
        writer.freedSinceRefill = 0
    }

    /// Deletes segments emptied by compaction once both superblock slots point past them and
    /// no open snapshot can read them.
    func deleteRetiredSegments() throws {
        guard !writer.retired.isEmpty else { return }
        let oldestSnapshot = oldestSnapshotLSN
        var kept: [RetiredSegment] = []
        var deleted: [UInt64] = []
        for segment in writer.retired {
            let slotsPast = writer.superblock.epoch >= segment.epoch + 1
            let snapshotsPast = oldestSnapshot.map { $0 >= segment.lsn } ?? true
            if slotsPast && snapshotsPast { deleted.append(segment.segment) } else { kept.append(segment) }
        }
        guard !deleted.isEmpty else { return }
        writer.retired = kept
        var freed: UInt64 = 0
        for id in deleted {
            let file = shared.withLock { $0.segments.removeValue(forKey: id) }
            file?.close()
            freed += writer.usage[id]?.totalBytes ?? 0
            writer.usage[id] = nil
            try io { try fileSystem.removeFile(path(StoreFileNames.segment(id))) }
        }
        try io { try fileSystem.syncDirectory(directory) }
        writer.freedSinceRefill += freed
    }
}
