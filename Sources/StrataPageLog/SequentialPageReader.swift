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
    private var payload: [UInt8] = []

    /// A reader of `snapshot`'s pages.
    package init(_ snapshot: Snapshot) {
        self.snapshot = snapshot
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
        let offset = UInt64(location.offset)
        try PageLog.checkFrameLength(location.length, path: file.path, offset: offset)
        let result = try PageLog.translatingIOErrors {
            try file.withBytes(at: offset, count: Int(location.length)) { raw -> T in
                let (header, stored) = try PageLog.verifiedFrame(raw, path: file.path, offset: offset)
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
        guard let result else {
            throw PageLogError.corruption(file: file.path, offset: offset, reason: "frame of \(location.length) bytes cut short at end of file")
        }
        return result
    }
}
