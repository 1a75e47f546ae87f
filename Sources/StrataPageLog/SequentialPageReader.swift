import StrataFormat
import StrataIO

/// Reads many pages of one snapshot for a scan, cheaply: each frame's bytes are read in place
/// (`StorageFile.withBytes`: from a memory map on the real file system), verified as
/// `Snapshot.read` verifies them, and decompressed into one buffer the reader reuses — no
/// allocation per page. A page comes out verified or not at all.
///
/// Not thread-safe; one per scan. The bytes passed to `withPage` are valid during the call only.
package final class SequentialPageReader {
    package let snapshot: Snapshot
    /// Whether frames are read through the file's memory map (a scan that may run again) or
    /// with `pread` (one pass over much data — a migration — whose pages should not stay
    /// mapped into the process).
    package let mapped: Bool
    /// The buffer pages are decompressed into, grown as needed, never cleared (a decompression
    /// writes every byte the page's body reads).
    private var payload = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    /// Frames read ahead, when not mapped.
    private let window: ReadWindow?
    /// Where the images of the pages read are kept, for a write transaction that reads them
    /// again soon after (nil: none kept).
    package let images: PageImages?

    /// A reader of `snapshot`'s pages, keeping their images in `images` when given.
    package init(_ snapshot: Snapshot, mapped: Bool = true, keepingImagesIn images: PageImages? = nil) {
        self.snapshot = snapshot
        self.mapped = mapped
        self.images = images
        window = mapped ? nil : ReadWindow()
    }

    deinit { payload.deallocate() }

    /// Calls `body` with the page's bytes and returns what it returns; nil when the snapshot has
    /// no such page.
    /// - Throws: `PageLogError.corruption` when the frame fails verification; I/O errors.
    package func withPage(_ pageID: UInt64, _ body: (UnsafeRawBufferPointer) throws -> Bool) throws -> Bool? {
        // Not generic: called from another module, a generic one looked up `Optional<T>`'s
        // metadata twice a page (2 % of a filtered scan).
        var result: Bool?
        let present = try snapshot.withVerifiedFrame(pageID, mapped: mapped, window: window) { header, stored, path, location in
            switch header.codec {
            case .none:
                images?.keep(stored, id: pageID, header: header, at: location)
                result = try body(stored)
            case .lz4, .lz4Halves, .lz4Blocks:
                let rawLength = Int(header.rawLength)
                if payload.count < rawLength {
                    payload.deallocate()
                    payload = .allocate(byteCount: max(rawLength, 16 << 10), alignment: 8)
                }
                let destination = UnsafeMutableRawBufferPointer(rebasing: payload[0..<rawLength])
                do { try FrameCodec.decompress(header, stored: stored, into: destination) } catch let error as FormatError {
                    throw PageLogError.corrupt(path, UInt64(location.offset), error)
                }
                images?.keep(UnsafeRawBufferPointer(destination), id: pageID, header: header, at: location)
                result = try body(UnsafeRawBufferPointer(destination))
            }
        }
        return present ? result : nil
    }
}

/// Log bytes read ahead for a scan that reads with `pread` (a migration's pass over a whole
/// tree): a tree written in key order has its leaves one after another in a segment, so one
/// read of `size` bytes brings the next frames too, instead of one system call per frame. A
/// frame that does not start shortly after the previous one is read alone, so a scattered
/// tree reads no more than before.
///
/// Only bytes of frames a snapshot names are ever served, and those were written whole before
/// the snapshot was taken, so nothing read ahead can be stale. Not thread-safe; one per reader.
final class ReadWindow {
    /// Bytes read at once.
    static let size = 128 << 10
    /// How far past the previous frame's end a frame may start and still be read ahead.
    static let reach: UInt64 = 64 << 10

    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ReadWindow.size, alignment: 16)
    /// The segment, file offset and length of the bytes in `buffer` (none: `segment` is nil).
    private var segment: UInt64?
    private var start: UInt64 = 0
    private var count = 0
    /// Where the previous frame asked for ended.
    private var previousEnd: (segment: UInt64, offset: UInt64)?

    deinit { buffer.deallocate() }

    /// Calls `body` with the `count` bytes at `offset` of `file` (segment `segment`) — from
    /// the bytes read ahead when they hold them, else read (ahead, when they follow the
    /// previous ones) — and returns what it returns; nil when the file ends first.
    func withBytes<T>(_ file: any StorageFile, segment: UInt64, offset: UInt64, count length: Int,
                      _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        defer { previousEnd = (segment, offset + UInt64(length)) }
        if self.segment != segment || offset < start || offset + UInt64(length) > start + UInt64(count) {
            let sequential = previousEnd.map { $0.segment == segment && offset >= $0.offset && offset - $0.offset <= Self.reach } ?? false
            guard sequential, length <= buffer.count else { return try file.withBytesRead(at: offset, count: length, body) }
            self.segment = nil
            count = try file.read(into: buffer, at: offset)
            self.segment = segment
            start = offset
            guard count >= length else { return nil }
        }
        let from = Int(offset - start)
        return try body(UnsafeRawBufferPointer(rebasing: buffer[from..<(from + length)]))
    }
}
