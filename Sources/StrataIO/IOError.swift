#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error reported by the I/O layer: which operation failed, on which path, at which
/// offset, and why. Every failing system call becomes one of these; nothing in the I/O
/// layer traps on a failing call.
package struct IOError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why an operation failed, reduced to the cases the layers above act on.
    package enum Kind: Sendable, Equatable {
        /// `ENOSPC` / `EDQUOT`: the device or quota is full.
        case noSpace
        /// `EIO` and other device errors.
        case ioError
        /// `ENOENT`.
        case notFound
        /// `EEXIST`.
        case alreadyExists
        /// `EACCES` / `EPERM` / `EROFS`.
        case permissionDenied
        /// An advisory lock is held by another process or another open instance.
        case locked
        /// A simulated power loss happened (in-memory file system only): the process is
        /// considered dead and every later call fails.
        case crashed
        /// Any other `errno`.
        case other(Int32)
    }

    /// What went wrong.
    package var kind: Kind
    /// The operation that failed, e.g. `"pwrite"`, `"fdatasync"`.
    package var operation: String
    /// The file or directory the operation was applied to.
    package var path: String
    /// The file offset of a read or write, when there is one.
    package var offset: UInt64?
    /// The raw `errno` value, or 0 for simulated errors.
    package var code: Int32

    package init(_ kind: Kind, operation: String, path: String, offset: UInt64? = nil, code: Int32 = 0) {
        self.kind = kind
        self.operation = operation
        self.path = path
        self.offset = offset
        self.code = code
    }

    /// The error of a call that failed with `errno` `code`, its kind derived from the code.
    package init(errno code: Int32, operation: String, path: String, offset: UInt64? = nil) {
        let kind: Kind
        switch code {
        case ENOSPC, EDQUOT: kind = .noSpace
        case EIO: kind = .ioError
        case ENOENT: kind = .notFound
        case EEXIST: kind = .alreadyExists
        case EACCES, EPERM, EROFS: kind = .permissionDenied
        default: kind = .other(code)
        }
        self.init(kind, operation: operation, path: path, offset: offset, code: code)
    }

    package var description: String {
        var text = "\(operation) failed on \(path)"
        if let offset { text += " at offset \(offset)" }
        switch kind {
        case .noSpace: text += ": no space left on device"
        case .ioError: text += ": input/output error"
        case .notFound: text += ": no such file or directory"
        case .alreadyExists: text += ": file exists"
        case .permissionDenied: text += ": permission denied"
        case .locked: text += ": the store is locked by another writer"
        case .crashed: text += ": simulated power loss"
        case .other(let value): text += ": errno \(value)"
        }
        return text
    }
}
