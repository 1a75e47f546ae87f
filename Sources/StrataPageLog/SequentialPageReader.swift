import StrataFormat
import StrataIO

/// Reads many pages of one snapshot for a scan, cheaply: frames are read from their segment
/// in windows of `windowSize` bytes (pages written together lie together in the log, so one
/// read serves many of them), and each page is verified and decompressed into a buffer the
/// reader reuses. The same checks as `Snapshot.read`: a page comes out verified or not at all.
///
/// Not thread-safe; one per scan. The bytes passed to `withPage` are valid during the call only.
package final class SequentialPageReader {
    package let snapshot: Snapshot
    private let windowSize: Int
    private var window: [UInt8]
    private var windowSegment: UInt64 = .max
    private var windowStart: UInt64 = 0
    private var windowCount = 0
    private var payload: [UInt8] = []

    /// A reader of `snapshot`'s pages.
    package init(_ snapshot: Snapshot, windowSize: Int = 256 << 10) {
        self.snapshot = snapshot
        self.windowSize = windowSize
        window = [UInt8](repeating: 0, count: windowSize)
    }

    /// Calls `body` with the page's bytes and returns what it returns; nil when the snapshot has
    /// no such page.
    /// - Throws: `PageLogError.corruption` when the frame fails verification; I/O errors.
    package func withPage<T>(_ pageID: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        let location = snapshot.location(of: pageID)
        guard !location.isNone else { return nil }
        let segment = UInt64(location.segment)
        guard let file = snapshot.segments[segment] else {
            throw PageLogError.corruption(file: StoreFileNames.segment(segment), offset: UInt64(location.offset),
                                          reason: "segment \(location.segment), which holds page \(pageID), is missing")
        }
        let offset = UInt64(location.offset), length = Int(location.length)
        try PageLog.checkFrameLength(location.length, path: file.path, offset: offset)
        guard length <= windowSize else {  // a large page: read on its own
            guard let page = try snapshot.read(pageID) else { return nil }
            return try page.bytes.withUnsafeBytes(body)
        }
        if segment != windowSegment || offset < windowStart || offset + UInt64(length) > windowStart + UInt64(windowCount) {
            windowSegment = .max
            let got: Int
            do { got = try window.withUnsafeMutableBytes { try file.read(into: $0, at: offset) } } catch let error as IOError {
                throw PageLogError.io(error)
            }
            guard got >= length else {
                throw PageLogError.corruption(file: file.path, offset: offset,
                                              reason: "frame of \(length) bytes cut short at end of file (\(got) bytes)")
            }
            (windowSegment, windowStart, windowCount) = (segment, offset, got)
        }
        let start = Int(offset - windowStart)
        return try window.withUnsafeBytes { raw in
            let (header, stored) = try PageLog.verifiedFrame(UnsafeRawBufferPointer(rebasing: raw[start..<(start + length)]),
                                                             path: file.path, offset: offset)
            try PageLog.checkPageFrame(header, pageID: pageID, location: location, path: file.path)
            switch header.codec {
            case .none:
                return try body(stored)
            case .lz4:
                let rawLength = Int(header.rawLength)
                if payload.count < rawLength { payload = [UInt8](repeating: 0, count: rawLength) }
                return try payload.withUnsafeMutableBytes { buffer in
                    let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<rawLength])
                    do { try LZ4Codec.decompress(stored, into: destination) } catch let error as FormatError {
                        throw PageLogError.corrupt(file.path, offset, error)
                    }
                    return try body(UnsafeRawBufferPointer(destination))
                }
            }
        }
    }
}
