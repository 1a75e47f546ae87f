import StrataFormat
import StrataIO

/// A page read in place from its frame and verified exactly as `Snapshot.read` verifies it
/// (the checksum over the whole stored frame; the page id and LSN the page table names),
/// whose payload is decompressed only as far as a reader asks (`prefix`): a point lookup in a
/// leaf needs the start of the page up to the record it reads, not the whole page.
///
/// Valid only inside `Snapshot.withPartialPage`'s body; the bytes `prefix` returns are valid
/// until the next `prefix` call or the end of the body.
package struct PartialPage {
    /// The page's length in bytes (uncompressed).
    package let count: Int
    private let stored: UnsafeRawBufferPointer
    private let compressed: Bool
    private let buffer: UnsafeMutableRawBufferPointer
    /// How many bytes at the start of `buffer` hold the page's bytes.
    private var decoded = 0
    private let path: String
    private let offset: UInt64

    fileprivate init(count: Int, stored: UnsafeRawBufferPointer, compressed: Bool, buffer: UnsafeMutableRawBufferPointer,
                     path: String, offset: UInt64) {
        self.count = count
        self.stored = stored
        self.compressed = compressed
        self.buffer = buffer
        self.path = path
        self.offset = offset
    }

    /// The first `length` bytes of the page (`length` ≤ `count`). A compressed page is
    /// decompressed from its start up to `length` bytes (LZ4 cannot resume a block, so a longer
    /// prefix than any asked before decompresses the start again; a shorter one costs nothing).
    /// - Throws: `PageLogError.corruption` when `length` exceeds the page or the stored bytes do
    ///   not decompress (neither happens to a frame whose checksum matched, unless the writer
    ///   stored wrong bytes).
    package mutating func prefix(_ length: Int) throws -> UnsafeRawBufferPointer {
        guard length >= 0, length <= count else {
            throw PageLogError.corrupt(path, offset, FormatError("\(length) bytes asked of a \(count)-byte page"))
        }
        guard compressed else { return UnsafeRawBufferPointer(rebasing: stored[0..<length]) }
        if length > decoded {
            do { try LZ4Codec.decompressPrefix(stored, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length])) } catch let error as FormatError {
                throw PageLogError.corrupt(path, offset, error)
            }
            decoded = length
        }
        return UnsafeRawBufferPointer(rebasing: buffer[0..<length])
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
            let compressed = header.codec == .lz4
            try log.partialPageScratch.with(byteCount: compressed ? Int(header.rawLength) : 0) { buffer in
                var page = PartialPage(count: Int(header.rawLength), stored: stored, compressed: compressed, buffer: buffer,
                                       path: path, offset: offset)
                try body(&page)
            }
        }
    }
}
