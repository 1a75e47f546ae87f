import StrataFormat
import StrataIO

/// Reading one checkpointed page table chunk: at open, or at its first lookup when it was left
/// pending (invariant 16).
extension Recovery {
    /// Checks the entries of a decoded chunk against the log: each entry's segment exists
    /// (`exists`, asked once per distinct segment not yet in `seen`, which collects them) and
    /// each page id is below `nextPageID`. Throws `PageLogError.corruption` naming the chunk.
    static func checkChunk(_ entries: [PageLocation], index: Int, at location: PageLocation, in file: any StorageFile,
                           nextPageID: UInt64, seen: inout Set<UInt64>, exists: (UInt64) -> Bool) throws {
        let entriesPerChunk = entries.count
        // Validate each distinct segment once per chunk (a chunk's pages share few segments,
        // mostly in runs), and the highest present page id against the next page id.
        try entries.withUnsafeBufferPointer { buffer in
            var previousSegment: UInt32 = 0
            var highestSlot = -1
            for slot in 0..<buffer.count {
                let segment = buffer[slot].segment
                guard segment != 0 else { continue }
                highestSlot = slot
                guard segment != previousSegment else { continue }
                previousSegment = segment
                guard !seen.contains(UInt64(segment)) else { continue }
                guard exists(UInt64(segment)) else {
                    throw PageLogError.corruption(file: file.path, offset: UInt64(location.offset),
                                                  reason: "page \(index * entriesPerChunk + slot) is in segment \(segment), which is missing")
                }
                seen.insert(UInt64(segment))
            }
            guard highestSlot < 0 || UInt64(index * entriesPerChunk + highestSlot) < nextPageID else {
                // Report the lowest offending page, as a slot-by-slot check would.
                let first = (0..<buffer.count).first { !buffer[$0].isNone && UInt64(index * entriesPerChunk + $0) >= nextPageID } ?? highestSlot
                throw PageLogError.corruption(file: file.path, offset: UInt64(location.offset),
                                              reason: "page \(index * entriesPerChunk + first) is at or above the next page id \(nextPageID)")
            }
        }
    }

    /// Reads page table chunk `index` at `location`, verifies its frame (checksum, kind, chunk
    /// index, LSN) and decodes it in one pass: the frame is read into a temporary buffer,
    /// decompressed into `scratch` (reused across chunks) and decoded straight into the
    /// returned array, with no intermediate copies. Returns the entries and how many are present.
    /// Throws `PageLogError.corruption` naming the frame when any of it is damaged.
    static func readChunk(_ index: Int, at location: PageLocation, in file: any StorageFile, entries: Int,
                           scratch: inout [UInt8]) throws -> (entries: [PageLocation], present: Int) {
        let offset = UInt64(location.offset)
        try PageLog.checkFrameLength(location.length, path: file.path, offset: offset)
        let decoded = try PageLog.translatingIOErrors {
            try file.withBytesRead(at: offset, count: Int(location.length)) { raw -> ([PageLocation], Int) in
                let (header, stored) = try PageLog.verifiedFrame(raw, path: file.path, offset: offset)
                guard header.kind == .tableChunk, header.pageID == UInt64(index), header.lsn == location.lsn else {
                    throw PageLogError.corruption(file: file.path, offset: offset,
                                                  reason: "expected page table chunk \(index) at LSN \(location.lsn), found a \(header.kind) frame (id \(header.pageID), LSN \(header.lsn))")
                }
                func decode(_ payload: UnsafeRawBufferPointer) throws -> ([PageLocation], Int) {
                    var present = 0
                    do {
                        try TableChunkCodec.checkSize(payload.count, entries: entries)  // before allocating
                        let result = try [PageLocation](unsafeUninitializedCapacity: entries) { buffer, initialized in
                            present = try TableChunkCodec.decode(payload, into: buffer)
                            initialized = entries
                        }
                        return (result, present)
                    } catch let error as FormatError {
                        throw PageLogError.corrupt(file.path, offset + UInt64(FrameHeader.size), error)
                    }
                }
                switch header.codec {
                case .none:
                    return try decode(stored)
                case .lz4, .lz4Halves, .lz4Blocks:
                    let rawLength = Int(header.rawLength)
                    do { try TableChunkCodec.checkSize(rawLength, entries: entries) } catch let error as FormatError {
                        throw PageLogError.corrupt(file.path, offset, error)
                    }
                    if scratch.count < rawLength { scratch = [UInt8](repeating: 0, count: rawLength) }
                    return try scratch.withUnsafeMutableBytes { buffer in
                        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<rawLength])
                        do { try FrameCodec.decompress(header, stored: stored, into: target) } catch let error as FormatError {
                            throw PageLogError.corrupt(file.path, offset, error)
                        }
                        return try decode(UnsafeRawBufferPointer(target))
                    }
                }
            }
        }
        guard let decoded else {
            throw PageLogError.corruption(file: file.path, offset: offset, reason: "frame of \(location.length) bytes cut short at end of file")
        }
        return decoded
    }
}
