/// The payload of a checkpoint frame (Docs/FileFormat.md, "Checkpoint root").
/// It names every page table chunk and carries the statistics of every segment.
package struct CheckpointRoot: Equatable, Sendable {
    /// Per-segment byte counts used by compaction.
    package struct SegmentStatistics: Equatable, Sendable {
        package var segmentID: UInt64
        /// Bytes written to the segment, header included.
        package var totalBytes: UInt64
        /// Bytes of frames the checkpointed state still refers to.
        package var liveBytes: UInt64

        package init(segmentID: UInt64, totalBytes: UInt64, liveBytes: UInt64) {
            self.segmentID = segmentID
            self.totalBytes = totalBytes
            self.liveBytes = liveBytes
        }
    }

    /// Entries per page table chunk written by this library.
    package static let defaultChunkEntries = 1024
    /// Upper bounds that keep a corrupt root from asking for huge allocations.
    /// With 1,024 entries a chunk, 2^21 chunks cover page ids below 2^31 (`PageLog.maximumPageID`);
    /// 2^19 segments of 64 MiB cover 32 TiB. A root at both limits is 32 + 24 × (2^21 + 2^19)
    /// = 62.9 MB, within the 64 MiB frame limit.
    package static let maximumChunks = 1 << 21
    package static let maximumSegments = 1 << 19

    package var lsn: UInt64
    package var nextPageID: UInt64
    package var chunkEntries: UInt32
    /// Address of every chunk; `PageLocation.none` for a chunk with no pages.
    package var chunks: [PageLocation]
    package var segments: [SegmentStatistics]

    package init(lsn: UInt64, nextPageID: UInt64, chunkEntries: UInt32, chunks: [PageLocation], segments: [SegmentStatistics]) {
        self.lsn = lsn
        self.nextPageID = nextPageID
        self.chunkEntries = chunkEntries
        self.chunks = chunks
        self.segments = segments
    }

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 32 + chunks.count * PageLocation.encodedSize + segments.count * 24)
        writer.append(lsn)
        writer.append(nextPageID)
        writer.append(chunkEntries)
        writer.append(UInt32(chunks.count))
        writer.append(UInt32(segments.count))
        writer.append(UInt32(0))
        for chunk in chunks { chunk.append(to: &writer) }
        for segment in segments {
            writer.append(segment.segmentID)
            writer.append(segment.totalBytes)
            writer.append(segment.liveBytes)
        }
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws -> CheckpointRoot {
        try bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            let lsn = try reader.read(UInt64.self, "lsn")
            let nextPageID = try reader.read(UInt64.self, "next page id")
            let entries = try reader.read(UInt32.self, "chunk entries")
            guard entries > 0, entries <= 1 << 20 else { throw FormatError("chunk entries \(entries) out of range", at: 16) }
            let chunkCount = Int(try reader.read(UInt32.self, "chunk count"))
            let segmentCount = Int(try reader.read(UInt32.self, "segment count"))
            guard try reader.read(UInt32.self, "reserved") == 0 else { throw FormatError("reserved root field is not zero", at: 28) }
            guard chunkCount <= maximumChunks, segmentCount <= maximumSegments,
                  reader.remaining == chunkCount * PageLocation.encodedSize + segmentCount * 24 else {
                throw FormatError("checkpoint root sizes (\(chunkCount) chunks, \(segmentCount) segments) do not match its \(bytes.count) bytes", at: 20)
            }
            var chunks: [PageLocation] = []
            chunks.reserveCapacity(chunkCount)
            for _ in 0..<chunkCount { chunks.append(try PageLocation.read(from: &reader)) }
            var segments: [SegmentStatistics] = []
            segments.reserveCapacity(segmentCount)
            for _ in 0..<segmentCount {
                let start = reader.position
                let statistics = SegmentStatistics(segmentID: try reader.read(UInt64.self, "segment id"),
                                                   totalBytes: try reader.read(UInt64.self, "total bytes"),
                                                   liveBytes: try reader.read(UInt64.self, "live bytes"))
                guard statistics.liveBytes <= statistics.totalBytes, statistics.totalBytes <= UInt64(UInt32.max),
                      statistics.segmentID > 0, statistics.segmentID <= UInt64(UInt32.max) else {
                    throw FormatError("invalid statistics for segment \(statistics.segmentID)", at: start)
                }
                segments.append(statistics)
            }
            return CheckpointRoot(lsn: lsn, nextPageID: nextPageID, chunkEntries: entries, chunks: chunks, segments: segments)
        }
    }
}

/// The payload of a table chunk frame: `chunkEntries` page locations, for page ids
/// `chunkIndex * chunkEntries ..< (chunkIndex + 1) * chunkEntries`.
package enum TableChunkCodec {
    /// Throws `FormatError` unless a payload of `count` bytes holds exactly `entries` locations.
    /// Callers check it before allocating room for `entries` (a count read from the store).
    package static func checkSize(_ count: Int, entries: Int) throws {
        guard entries >= 0, entries <= count / PageLocation.encodedSize, count == entries * PageLocation.encodedSize else {
            throw FormatError("table chunk is \(count) bytes, expected \(entries) entries of \(PageLocation.encodedSize)")
        }
    }

    package static func encode(_ entries: [PageLocation]) -> [UInt8] {
        var writer = ByteWriter(capacity: entries.count * PageLocation.encodedSize)
        for entry in entries { entry.append(to: &writer) }
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8], entries: Int) throws -> [PageLocation] {
        // The size is checked before the array of `entries` is allocated.
        try checkSize(bytes.count, entries: entries)
        return try bytes.withUnsafeBytes { raw in
            var result = [PageLocation](repeating: .none, count: entries)
            _ = try result.withUnsafeMutableBufferPointer { try decode(raw, into: $0) }
            return result
        }
    }

    /// Decodes the chunk payload `raw` into `result` (whose count is the chunk's entry count),
    /// writing every element once, and returns how many entries are present. Hot at open (one
    /// call per 1,024 pages): direct loads instead of a `ByteReader`, no intermediate array.
    /// Throws `FormatError` for a payload of the wrong size or an invalid entry.
    package static func decode(_ raw: UnsafeRawBufferPointer, into result: UnsafeMutableBufferPointer<PageLocation>) throws -> Int {
        let entries = result.count
        try checkSize(raw.count, entries: entries)
        var present = 0
        for index in 0..<entries {
            let base = index * PageLocation.encodedSize
            let segment = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: base, as: UInt32.self))
            let offset = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: base + 4, as: UInt32.self))
            let length = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: base + 8, as: UInt32.self))
            let reserved = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: base + 12, as: UInt32.self))
            let lsn = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base + 16, as: UInt64.self))
            let location = PageLocation(segment: segment, offset: offset, length: length, lsn: lsn)
            if segment == 0 {
                guard offset == 0, length == 0, reserved == 0, lsn == 0 else {
                    throw FormatError("empty page table entry with non-zero fields", at: base)
                }
                result.initializeElement(at: index, to: .none)
                continue
            }
            guard reserved == 0, length >= UInt32(FrameHeader.size), offset >= UInt32(SegmentHeader.size),
                  offset % UInt32(FrameHeader.alignment) == 0, lsn > 0 else {
                throw FormatError("invalid page table entry (segment \(segment), offset \(offset), length \(length))", at: base)
            }
            result.initializeElement(at: index, to: location)
            present += 1
        }
        return present
    }
}
