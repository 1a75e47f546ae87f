import StrataFormat
import StrataIO

/// A page read in place from its frame and verified exactly as `Snapshot.read` verifies it
/// (the checksum over the whole stored frame; the page id and LSN the page table names),
/// whose payload is decompressed only as far as a reader asks (`prefix`, `bytes`): a point
/// lookup in a leaf needs the leaf's directory and the record it reads, not the whole page.
/// A payload stored in two LZ4 blocks (`PayloadCodec.lz4Halves`) decompresses the second
/// half's block alone for bytes there.
///
/// Valid only inside `Snapshot.withPartialPage`'s body; the bytes `prefix` and `bytes`
/// return are valid until the end of the body.
package struct PartialPage {
    /// The page's length in bytes (uncompressed).
    package let count: Int
    /// Where the second block's bytes start (`count` for a single block or no compression).
    package let split: Int
    private let stored: UnsafeRawBufferPointer
    private let firstBlock: UnsafeRawBufferPointer
    private let secondBlock: UnsafeRawBufferPointer
    private let compressed: Bool
    private let buffer: UnsafeMutableRawBufferPointer
    /// How many bytes of each block are decompressed into `buffer` (at their page offsets).
    private var decodedFirst = 0
    private var decodedSecond = 0
    private let path: String
    private let offset: UInt64

    fileprivate init(header: FrameHeader, stored: UnsafeRawBufferPointer, buffer: UnsafeMutableRawBufferPointer,
                     path: String, offset: UInt64) throws {
        count = Int(header.rawLength)
        self.stored = stored
        compressed = header.codec != .none
        (firstBlock, secondBlock, split) = try FrameCodec.blocks(header, stored: stored)
        self.buffer = buffer
        self.path = path
        self.offset = offset
    }

    /// The first `length` bytes of the page (`length` ≤ `count`).
    /// - Throws: as `bytes(_:)`.
    package mutating func prefix(_ length: Int) throws -> UnsafeRawBufferPointer {
        try bytes(0..<length)
    }

    /// The page's bytes in `range` (within `0..<count`). A compressed block is decompressed
    /// from its start up to the end of the range (LZ4 cannot resume a block, so reaching
    /// further than any call before decompresses the block's start again; less costs nothing).
    /// - Throws: `PageLogError.corruption` when `range` exceeds the page or the stored bytes do
    ///   not decompress (neither happens to a frame whose checksum matched, unless the writer
    ///   stored wrong bytes).
    package mutating func bytes(_ range: Range<Int>) throws -> UnsafeRawBufferPointer {
        guard range.lowerBound >= 0, range.upperBound <= count else {
            throw PageLogError.corrupt(path, offset, FormatError("bytes \(range) asked of a \(count)-byte page"))
        }
        guard compressed else { return UnsafeRawBufferPointer(rebasing: stored[range]) }
        do {
            if range.lowerBound < split {
                let end = min(range.upperBound, split)
                if end > decodedFirst {
                    try LZ4Codec.decompressPrefix(firstBlock, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<end]))
                    decodedFirst = end
                }
            }
            if range.upperBound > split {
                let end = range.upperBound - split
                if end > decodedSecond {
                    try LZ4Codec.decompressPrefix(secondBlock, into: UnsafeMutableRawBufferPointer(rebasing: buffer[split..<(split + end)]))
                    decodedSecond = end
                }
            }
        } catch let error as FormatError {
            throw PageLogError.corrupt(path, offset, error)
        }
        return UnsafeRawBufferPointer(rebasing: buffer[range])
    }
}

extension Snapshot {
    /// Calls `body` with the verified frame of `pageID` read in place — its header, its stored
    /// payload, and the file path and offset errors name — as `Snapshot.read` reads and
    /// verifies it (checksum, page id, LSN); false when the snapshot has no such page. (Not
    /// generic: no type metadata per call on the point-read path.)
    /// - Throws: `PageLogError.corruption` when the frame fails verification; I/O errors.
    func withVerifiedFrame(_ pageID: UInt64, mapped: Bool = true, window: ReadWindow? = nil,
                           _ body: (FrameHeader, UnsafeRawBufferPointer, _ path: String, _ offset: UInt64) throws -> Void) throws -> Bool {
        let location = try table.location(of: pageID)
        guard !location.isNone else { return false }
        let segment = UInt64(location.segment)
        guard let file = segments[segment] else {
            throw PageLogError.corruption(file: StoreFileNames.segment(segment), offset: UInt64(location.offset),
                                          reason: "segment \(location.segment), which holds page \(pageID), is missing")
        }
        let offset = UInt64(location.offset)
        try PageLog.checkFrameLength(location.length, path: file.path, offset: offset)
        let read: Void? = try PageLog.translatingIOErrors {
            let verify = { (raw: UnsafeRawBufferPointer) throws in
                let (header, stored) = try PageLog.verifiedFrame(raw, path: file.path, offset: offset)
                try PageLog.checkPageFrame(header, pageID: pageID, location: location, path: file.path)
                try body(header, stored, file.path, offset)
            }
            if mapped && mayMap(location) { return try file.withBytes(at: offset, count: Int(location.length), verify) }
            if let window { return try window.withBytes(file, segment: segment, offset: offset, count: Int(location.length), verify) }
            return try file.withBytesRead(at: offset, count: Int(location.length), verify)
        }
        guard read != nil else {
            throw PageLogError.corruption(file: file.path, offset: offset, reason: "frame of \(location.length) bytes cut short at end of file")
        }
        return true
    }

    /// Calls `body` with the page as a `PartialPage` — frame read in place (from the memory map
    /// on the real file system), verified, decompressed on demand into a temporary buffer;
    /// false when the snapshot has no such page. (Not generic: no type metadata per call.)
    /// - Throws: `PageLogError.corruption` when the frame fails verification; I/O errors.
    package func withPartialPage(_ pageID: UInt64, _ body: (inout PartialPage) throws -> Void) throws -> Bool {
        try withVerifiedFrame(pageID) { header, stored, path, offset in
            try log.partialPageScratch.with(byteCount: header.codec != .none ? Int(header.rawLength) : 0) { buffer in
                var page: PartialPage
                do { page = try PartialPage(header: header, stored: stored, buffer: buffer, path: path, offset: offset) } catch let error as FormatError {
                    throw PageLogError.corrupt(path, offset, error)
                }
                try body(&page)
            }
        }
    }
}
