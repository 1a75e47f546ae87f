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
    package init(errnoCode code: Int32, operation: String, path: String, offset: UInt64? = nil) {
        self.init(Platform.kind(ofError: code), operation: operation, path: path, offset: offset, code: code)
    }

    /// `operation failed on path at offset N: meaning (SYMBOL)`, e.g. `open failed on
    /// /data/store/LOCK: read-only file system (EROFS)`.
    package var description: String {
        var text = "\(operation) failed on \(path)"
        if let offset { text += " at offset \(offset)" }
        switch kind {
        case .locked: return text + ": the store is locked by another writer"
        case .crashed: return text + ": simulated power loss"
        default: break
        }
        let code = errnoCode
        guard let (symbol, meaning) = Self.name(ofErrno: code) else { return text + ": errno \(code)" }
        return text + ": \(meaning) (\(symbol))"
    }

    /// The `errno` the call failed with: `code`, or for a simulated error without one, the
    /// code its kind stands for.
    package var errnoCode: Int32 {
        if code != 0 { return code }
        return Platform.code(standingFor: kind)
    }

    /// The symbolic name (`"EROFS"`) and meaning (`"read-only file system"`) of an `errno`
    /// value of this platform; nil for a code without one here.
    package static func name(ofErrno code: Int32) -> (symbol: String, meaning: String)? {
        Platform.name(ofErrno: code)
    }
}
