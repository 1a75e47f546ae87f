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
    private var payload: [UInt8] = []

    /// A reader of `snapshot`'s pages.
    package init(_ snapshot: Snapshot, mapped: Bool = true) {
        self.snapshot = snapshot
        self.mapped = mapped
    }

    /// Calls `body` with the page's bytes and returns what it returns; nil when the snapshot has
    /// no such page.
    /// - Throws: `PageLogError.corruption` when the frame fails verification; I/O errors.
    package func withPage<T>(_ pageID: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        var result: T?
        let present = try snapshot.withVerifiedFrame(pageID, mapped: mapped) { header, stored, path, offset in
            switch header.codec {
            case .none:
                result = try body(stored)
            case .lz4:
                let rawLength = Int(header.rawLength)
                if payload.count < rawLength { payload = [UInt8](repeating: 0, count: rawLength) }
                result = try payload.withUnsafeMutableBytes { buffer in
                    let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<rawLength])
                    do { try LZ4Codec.decompress(stored, into: destination) } catch let error as FormatError {
                        throw PageLogError.corrupt(path, offset, error)
                    }
                    return try body(UnsafeRawBufferPointer(destination))
                }
            }
        }
        return present ? result : nil
    }
}
