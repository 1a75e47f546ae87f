import StrataFormat
import StrataIO

/// Errors of the page log. Every failure carries enough context for a person to act:
/// the file, the byte offset and the reason for corruption; the failed system call for I/O.
package enum PageLogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed. The store instance refuses further writes after a failed write
    /// or sync (see `poisoned`); reopening the store recovers the last durable state.
    case io(IOError)
    /// Bytes that should hold committed data are not valid. Nothing is skipped or repaired.
    case corruption(file: String, offset: UInt64, reason: String)
    /// An earlier write or sync failed, so this instance no longer writes (the kernel may have
    /// dropped unsynced data; carrying on could lose commits silently). Reopen the store.
    case poisoned(cause: String)
    /// Another process or instance holds the store's writer lock.
    case locked(path: String)
    /// The store was written by a newer version of the file format.
    case unsupportedFormatVersion(file: String, found: UInt16, supported: UInt16)
    /// A page is larger than the page log accepts.
    case pageTooLarge(bytes: Int, maximum: Int)
    /// A page id that was never allocated (and is not one of the fixed ids).
    case invalidPageID(UInt64)
    /// The store was closed.
    case closed
    /// The page log at `path` was opened read-only, as a follower of the process that writes
    /// it (`PageLog.open(…, readOnly: true)`): it never writes, checkpoints or compacts.
    case readOnly(path: String)
    /// A backup's destination already exists (`PageLog.backUp`): nothing was written there.
    case destinationExists(path: String)

    package var description: String {
        switch self {
        case .io(let error): "I/O error: \(error)"
        case .corruption(let file, let offset, let reason): "corruption in \(file) at offset \(offset): \(reason)"
        case .poisoned(let cause): "the store refuses writes after an earlier I/O failure (\(cause)); reopen it to recover the last durable state"
        case .locked(let path): "the store at \(path) is open for writing by another process or instance"
        case .unsupportedFormatVersion(let file, let found, let supported):
            "\(file) has format version \(found); this library reads versions up to \(supported)"
        case .pageTooLarge(let bytes, let maximum): "a page of \(bytes) bytes exceeds the maximum of \(maximum)"
        case .invalidPageID(let id): "page id \(id) was never allocated"
        case .closed: "the store is closed"
        case .readOnly(let path): "the store at \(path) was opened read-only: nothing can be written"
        case .destinationExists(let path): "\(path) already exists: a backup is written only to a new path"
        }
    }

    static func corrupt(_ file: String, _ base: UInt64, _ error: FormatError) -> PageLogError {
        .corruption(file: file, offset: base + UInt64(error.offset), reason: error.reason)
    }
}
