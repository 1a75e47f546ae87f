/// The I/O layer's contract. Everything Strata stores goes through these two protocols,
/// so the layers above can run on a real disk (`POSIXFileSystem`) or on a simulated one
/// that can lose power (`MemoryFileSystem`).
///
/// Durability contract (the same as POSIX on a journaling file system):
/// - `StorageFile.write` is durable only after a later `StorageFile.sync` on that file returns.
/// - Creating, renaming and removing a file is durable only after `syncDirectory` on its
///   parent directory returns.
/// - A write that was not synced may, after a crash, be absent, present, or torn
///   (some of its 512-byte sectors present).
///
/// All methods may be called from any thread; implementations are thread-safe.
package protocol FileSystem: Sendable {
    /// Opens a file for reading and writing, creating it (empty) when `create` is true and
    /// it does not exist. Throws `IOError` with kind `.notFound` when it does not exist and
    /// `create` is false.
    func openFile(_ path: String, create: Bool) throws -> any StorageFile
    /// Opens an existing file for reading only (`O_RDONLY`): writes, truncations and syncs
    /// through the returned handle fail with `EBADF`. Throws `IOError` with kind `.notFound`
    /// when the file does not exist. Readers of a store another process writes (page log
    /// followers) open every file this way.
    func openForReading(_ path: String) throws -> any StorageFile
    /// Creates a directory (and missing parents). Succeeds when it already exists.
    func createDirectory(_ path: String) throws
    /// The names (not paths) of the entries of a directory, in no particular order.
    func contentsOfDirectory(_ path: String) throws -> [String]
    /// Whether a file or directory exists at `path`.
    func fileExists(_ path: String) -> Bool
    /// Removes a file.
    func removeFile(_ path: String) throws
    /// Removes an empty directory. Throws `IOError` (`ENOTEMPTY`) when it holds anything,
    /// `.notFound` when it does not exist. Durable after `syncDirectory` on its parent.
    func removeDirectory(_ path: String) throws
    /// Atomically renames `source` to `destination`, replacing it if present. `source` may be
    /// a directory (a whole store folder: a backup is written beside its destination and
    /// renamed into place); `destination` must then not exist or be an empty directory.
    func rename(_ source: String, to destination: String) throws
    /// Makes the creations, renames and removals in a directory durable (fsync of the directory).
    func syncDirectory(_ path: String) throws
    /// Takes an advisory lock on the file at `path` (created when missing). Throws
    /// `IOError` with kind `.locked` immediately, without waiting, when another holder has it.
    /// The lock is released when the returned object is released or `unlock()` is called.
    func lock(_ path: String, exclusive: Bool) throws -> any FileLock
}

/// An open file. Offsets are absolute; there is no file position.
package protocol StorageFile: AnyObject, Sendable {
    /// The path the file was opened with.
    var path: String { get }
    /// Reads up to `buffer.count` bytes at `offset`; returns how many were read, fewer only at end of file.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int
    /// Calls `body` with the `count` bytes at `offset` and returns what it returns; nil when the
    /// file ends first. The bytes are valid during the call only. The default reads them into
    /// a temporary buffer; `POSIXFile` passes them straight from a read-only memory map.
    func withBytes<T>(at offset: UInt64, count: Int, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T?
    /// Writes all of `bytes` at `offset`, extending the file when needed.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws
    /// Makes every completed write to this file durable (fdatasync).
    func sync() throws
    /// The current size of the file in bytes.
    func size() throws -> UInt64
    /// The file's size and whether it still has a name in a directory, in one call (`fstat`:
    /// `st_size`, `st_nlink > 0`). A removed or replaced file stays readable through the
    /// handles opened before, as on POSIX: this tells a reader that its handle is stale.
    func status() throws -> FileStatus
    /// Sets the size of the file.
    func truncate(to size: UInt64) throws
    /// Extends the file with zeros to `size` bytes (nothing when it is that long already) so
    /// that the device holds blocks for all of them: unlike extending it with `truncate`, which
    /// leaves a hole on most file systems, this takes the space, and it is the file's until it
    /// is shortened or removed. Durable after `sync`. Throws `IOError` `.noSpace` when the
    /// device cannot hold them (some may have been written). The default writes the zeros.
    func allocate(upTo size: UInt64) throws
    /// Closes the file. Later calls fail.
    func close()
}

/// What `StorageFile.status()` reports.
package struct FileStatus: Sendable, Equatable {
    /// The file's size in bytes.
    package var size: UInt64
    /// Whether a directory entry still names the file (false once it was removed, or replaced
    /// by a rename, while this handle stayed open).
    package var isLinked: Bool

    package init(size: UInt64, isLinked: Bool) {
        self.size = size
        self.isLinked = isLinked
    }
}

/// A held advisory lock.
package protocol FileLock: AnyObject, Sendable {
    /// Releases the lock; idempotent.
    func unlock()
}

extension StorageFile {
    /// Reads the bytes into a temporary buffer (on the stack when small).
    package func withBytes<T>(at offset: UInt64, count: Int, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        try withBytesRead(at: offset, count: count, body)
    }

    /// `withBytes` through `read(into:at:)` and a temporary buffer (on the stack when small).
    package func withBytesRead<T>(at offset: UInt64, count: Int, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        try withUnsafeTemporaryAllocation(byteCount: max(count, 1), alignment: 8) { buffer in
            let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            guard try read(into: target, at: offset) == count else { return nil }
            return try body(UnsafeRawBufferPointer(target))
        }
    }

    /// Reads exactly `count` bytes at `offset`, or fewer when the file ends first.
    package func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        guard count > 0 else { return [] }
        // Uninitialized: the read fills what it reports, and only that is kept.
        return try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
        }
    }

    /// Writes all of `bytes` at `offset`.
    package func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }

    /// Writes zeros from the end of the file to `size`, in pieces of up to 256 KiB.
    package func allocate(upTo size: UInt64) throws {
        var offset = try self.size()
        guard offset < size else { return }
        let zeros = [UInt8](repeating: 0, count: Int(min(size - offset, 256 << 10)))
        try zeros.withUnsafeBytes { zeros in
            while offset < size {
                let count = Int(min(size - offset, UInt64(zeros.count)))
                try write(UnsafeRawBufferPointer(rebasing: zeros[0..<count]), at: offset)
                offset += UInt64(count)
            }
        }
    }
}

extension FileSystem {
    /// Creates the file `name` in `directory` with `contents`, so that it exists under its name
    /// only once complete and durable: written and synced under `name + ".tmp"`, renamed, the
    /// directory synced. Returns the file, open. A crash leaves either no file of that name or
    /// the whole file (and perhaps a `.tmp` leftover to delete).
    package func createFileDurably(named name: String, in directory: String, contents: [UInt8]) throws -> any StorageFile {
        let path = joinPath(directory, name)
        let temporary = path + ".tmp"
        let scratch = try openFile(temporary, create: true)
        try scratch.truncate(to: 0)
        try scratch.write(contents, at: 0)
        try scratch.sync()
        scratch.close()
        try rename(temporary, to: path)
        try syncDirectory(directory)
        return try openFile(path, create: false)
    }
}

/// Joins a directory and a file name.
package func joinPath(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
}
