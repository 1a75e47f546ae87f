import StrataFormat
import StrataIO

/// A page read in place from its frame and verified as `Snapshot.read` verifies it (the
/// checksums; the page id and LSN the page table names), whose payload is decompressed only
/// as far as a reader asks (`prefix`, `bytes`): a point lookup in a leaf needs the leaf's
/// directory and the record it reads, not the whole page.
///
/// - A page stored for partial reads (codec 3, format 3: `FrameCodec.BlockLayout`) has its
///   directory raw in the frame: bytes there are returned in place. Bytes past it are in
///   independent LZ4 blocks: each block a range touches is verified (its own checksum) and
///   decompressed from its start up to the range's end. The frame's other blocks are neither
///   read nor checked.
/// - Otherwise the whole frame's checksum is verified first; a payload in two LZ4 blocks
///   (`PayloadCodec.lz4Halves`) decompresses the second half's block alone for bytes there.
///
/// Valid only inside `Snapshot.withPartialPage`'s body; the bytes `prefix` and `bytes`
/// return are valid until the end of the body.
package struct PartialPage {
    /// The page's length in bytes (uncompressed).
    package let count: Int
    /// Where the second block's bytes start (`count` for a single block or no compression),
    /// for a payload stored whole or in halves.
    package let split: Int
    /// How many of the page's first bytes are stored raw: read in place, with no decompression
    /// (the directory of a page stored for partial reads, every byte of an uncompressed one).
    package let directLength: Int
    private let stored: UnsafeRawBufferPointer
    private let firstBlock: UnsafeRawBufferPointer
    private let secondBlock: UnsafeRawBufferPointer
    private let layout: FrameCodec.BlockLayout?
    private let compressed: Bool
    private let buffer: UnsafeMutableRawBufferPointer
    /// How many bytes of each half are decompressed into `buffer` (at their page offsets).
    private var decodedFirst = 0
    private var decodedSecond = 0
    /// Blocks (of a codec 3 page) verified, decompressed whole, and the one decompressed in
    /// part last, with how far (blocks past 63 are verified again at each use).
    private var verifiedBlocks: UInt64 = 0
    private var wholeBlocks: UInt64 = 0
    private var partBlock = -1
    private var partExtent = 0
    /// How many of the prefix's bytes are copied into `buffer` (for a range reaching past it).
    private var copiedPrefix = 0
    private let path: String
    private let offset: UInt64

    fileprivate init(header: FrameHeader, stored: UnsafeRawBufferPointer, buffer: UnsafeMutableRawBufferPointer,
                     path: String, offset: UInt64) throws {
        count = Int(header.rawLength)
        self.stored = stored
        compressed = header.codec != .none
        if header.codec == .lz4Blocks {
            let layout = try FrameCodec.BlockLayout(rawLength: count, stored: stored)
            self.layout = layout
            directLength = layout.prefixLength
            (firstBlock, secondBlock, split) = (layout.prefix, layout.prefix, count)
        } else {
            layout = nil
            directLength = compressed ? 0 : count
            (firstBlock, secondBlock, split) = try FrameCodec.blocks(header, stored: stored)
        }
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
    /// - Throws: `PageLogError.corruption` when `range` exceeds the page, a block's checksum
    ///   does not match, or the stored bytes do not decompress.
    package mutating func bytes(_ range: Range<Int>) throws -> UnsafeRawBufferPointer {
        guard range.lowerBound >= 0, range.upperBound <= count else {
            throw PageLogError.corrupt(path, offset, FormatError("bytes \(range) asked of a \(count)-byte page"))
        }
        guard compressed else { return UnsafeRawBufferPointer(rebasing: stored[range]) }
        guard !range.isEmpty else { return UnsafeRawBufferPointer(rebasing: buffer[range]) }
        do {
            if let layout {
                if range.upperBound <= layout.prefixLength { return UnsafeRawBufferPointer(rebasing: layout.prefix[range]) }
                try decodeBlocks(layout, range)
            } else {
                try decodeHalves(range)
            }
        } catch let error as FormatError {
            throw PageLogError.corrupt(path, offset, error)
        }
        return UnsafeRawBufferPointer(rebasing: buffer[range])
    }

    /// Makes `buffer[range]` hold the page's bytes (codec 3): the prefix's part copied, each
    /// block's part verified and decompressed.
    private mutating func decodeBlocks(_ layout: FrameCodec.BlockLayout, _ range: Range<Int>) throws {
        if range.lowerBound < layout.prefixLength && copiedPrefix < layout.prefixLength {
            if let target = buffer.baseAddress, let source = layout.prefix.baseAddress {
                target.copyMemory(from: source, byteCount: layout.prefixLength)
            }
            copiedPrefix = layout.prefixLength
        }
        let first = layout.blockIndex(containing: max(range.lowerBound, layout.prefixLength))
        let last = layout.blockIndex(containing: range.upperBound - 1)
        for index in first...last {
            let bit: UInt64 = index < 64 ? 1 << UInt64(index) : 0
            if wholeBlocks & bit != 0 { continue }
            let blockRange = layout.rawRange(index)
            let end = min(range.upperBound, blockRange.upperBound)
            if index == partBlock && end - blockRange.lowerBound <= partExtent { continue }
            let block = try layout.verifiedBlock(index, checked: verifiedBlocks & bit != 0)
            verifiedBlocks |= bit
            try layout.expand(block.bytes, block.entry, index: index,
                              into: UnsafeMutableRawBufferPointer(rebasing: buffer[blockRange.lowerBound..<end]))
            if end == blockRange.upperBound {
                wholeBlocks |= bit
            } else {
                (partBlock, partExtent) = (index, end - blockRange.lowerBound)
            }
        }
    }

    /// Makes `buffer[range]` hold the page's bytes (one LZ4 block, or halves).
    private mutating func decodeHalves(_ range: Range<Int>) throws {
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
    }
}

extension Snapshot {
    /// Calls `body` with the verified frame of `pageID` read in place — its header, its stored
    /// payload, and the file path and offset errors name — as `Snapshot.read` reads and
    /// verifies it (checksum, page id, LSN); false when the snapshot has no such page. (Not
    /// generic: no type metadata per call on the point-read path.)
    /// - Throws: `PageLogError.corruption` when the frame fails verification; I/O errors.
    func withVerifiedFrame(_ pageID: UInt64, mapped: Bool = true, window: ReadWindow? = nil, headOnly: Bool = false,
                           _ body: (FrameHeader, UnsafeRawBufferPointer, _ path: String, _ location: PageLocation) throws -> Void) throws -> Bool {
        let location = try table.location(of: pageID)
        guard !location.isNone else { return false }
        let segment = UInt64(location.segment)
        guard let file = segments[segment] else {
            throw PageLogError.corruption(file: StoreFileNames.segment(segment), offset: UInt64(location.offset),
                                          reason: "segment \(location.segment), which holds page \(pageID), is missing")
        }
        let offset = UInt64(location.offset)
        // The path is fetched once (each fetch through the existential retains and releases
        // it), and `verify` is a local function, not a closure value: no context is
        // allocated per read.
        let path = file.path
        try PageLog.checkFrameLength(location.length, path: path, offset: offset)
        let read: Void? = try PageLog.translatingIOErrors {
            func verify(_ raw: UnsafeRawBufferPointer) throws {
                let (header, stored) = try PageLog.verifiedFrame(raw, path: path, offset: offset, headOnly: headOnly)
                try PageLog.checkPageFrame(header, pageID: pageID, location: location, path: path)
                try body(header, stored, path, location)
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

    /// Calls `body` with the page's raw payload, verified as `read` verifies it (the whole
    /// frame's checksums, page id, LSN) and decompressed into a temporary buffer — valid during
    /// the call; false when the snapshot has no such page. Nothing is kept: for pages read once
    /// and copied elsewhere (an overflowed record's chunks, assembled into one buffer), so no
    /// array is made per page. `mapped` false reads the frame with `pread`, so its file pages do
    /// not stay mapped into the process (a large record read once).
    /// - Throws: `PageLogError.corruption` when the frame fails verification; I/O errors.
    package func withPayload(_ pageID: UInt64, mapped: Bool = true, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        try withVerifiedFrame(pageID, mapped: mapped) { header, stored, path, location in
            guard header.codec != .none else { return try body(stored) }
            let offset = UInt64(location.offset)
            try withUnsafeTemporaryAllocation(byteCount: Int(header.rawLength), alignment: 8) { buffer in
                do { try FrameCodec.decompress(header, stored: stored, into: buffer) } catch let error as FormatError {
                    throw PageLogError.corrupt(path, offset, error)
                }
                try body(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// Calls `body` with the page as a `PartialPage` — frame read in place (from the memory map
    /// on the real file system), verified, decompressed on demand into a temporary buffer;
    /// false when the snapshot has no such page. (Not generic: no type metadata per call.)
    /// `mapped` false reads the frame with `pread` into a temporary buffer instead: for a
    /// large frame verified whole but read in part once (an overflowed record's first chunk),
    /// whose pages should not stay mapped into the process.
    /// - Throws: `PageLogError.corruption` when the frame fails verification; I/O errors.
    package func withPartialPage(_ pageID: UInt64, mapped: Bool = true, _ body: (inout PartialPage) throws -> Void) throws -> Bool {
        try withVerifiedFrame(pageID, mapped: mapped, headOnly: true) { header, stored, path, location in
            let offset = UInt64(location.offset)
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
