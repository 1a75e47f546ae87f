import Synchronization

/// The real file system, through the thin wrappers over POSIX calls in `Platform.swift`. This
/// file and `MemoryFileSystem.swift` are the only places in Strata that touch files; only this
/// one makes system calls, all through `Platform`.
///
/// Files are read through read-only shared memory maps by default (`withBytes`), which spares
/// a system call and a copy per page read; `read(into:at:)` stays `pread`. The trade-off is
/// SQLite's with `mmap_size`: a disk error while reading a mapped page raises SIGBUS instead
/// of returning EIO. Pass `memoryMapping: false` to read with `pread` only.
package struct POSIXFileSystem: FileSystem {
    /// Whether files are read through memory maps.
    package let memoryMapping: Bool

    package init(memoryMapping: Bool = true) { self.memoryMapping = memoryMapping }

    package func openFile(_ path: String, create: Bool) throws -> any StorageFile {
        let fd = Platform.open(path, .readWrite(create: create))  // open(2)
        guard fd >= 0 else { throw posixError("open", path) }
        return POSIXFile(fd: fd, path: path, memoryMapping: memoryMapping)
    }

    package func openForReading(_ path: String) throws -> any StorageFile {
        let fd = Platform.open(path, .readOnly)  // open(2)
        guard fd >= 0 else { throw posixError("open", path) }
        return POSIXFile(fd: fd, path: path, memoryMapping: memoryMapping, readOnly: true)
    }

    package func createDirectory(_ path: String) throws {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/" + component
            if Platform.makeDirectory(partial) != 0 && Platform.errno != Platform.exists {  // mkdir(2)
                throw posixError("mkdir", partial)
            }
        }
    }

    package func contentsOfDirectory(_ path: String) throws -> [String] {
        guard let entries = Platform.directoryEntries(path) else { throw posixError("opendir", path) }  // opendir(3), readdir(3)
        return entries.filter { $0 != "." && $0 != ".." }
    }

    package func fileExists(_ path: String) -> Bool {
        Platform.exists(path)  // stat(2)
    }

    package func removeFile(_ path: String) throws {
        if Platform.unlink(path) != 0 { throw posixError("unlink", path) }  // unlink(2)
    }

    package func removeDirectory(_ path: String) throws {
        if Platform.removeDirectory(path) != 0 { throw posixError("rmdir", path) }  // rmdir(2)
    }

    package func rename(_ source: String, to destination: String) throws {
        if Platform.rename(source, destination) != 0 { throw posixError("rename", source) }  // rename(2)
    }

    package func syncDirectory(_ path: String) throws {
        let fd = Platform.open(path, .directory)
        guard fd >= 0 else { throw posixError("open", path) }
        defer { Platform.close(fd) }
        // fsync(2) of the directory (F_FULLFSYNC on Darwin: Platform.syncDirectory).
        if Platform.syncDirectory(fd) != 0 { throw posixError("fsync", path) }
    }

    package func lock(_ path: String, exclusive: Bool) throws -> any FileLock {
        let fd = Platform.open(path, .readWrite(create: true))
        guard fd >= 0 else { throw posixError("open", path) }
        // flock(2) locks belong to the open file description, so a second open of the same
        // store inside this process is refused too, not only another process.
        if Platform.lock(fd, exclusive: exclusive) != 0 {
            let error = posixError("flock", path)
            Platform.close(fd)
            if error.code == Platform.wouldBlock { throw IOError(.locked, operation: "flock", path: path, code: error.code) }
            throw error
        }
        return POSIXLock(fd: fd)
    }
}

/// An open file descriptor. Thread-safe: pread/pwrite carry their own offsets.
final class POSIXFile: StorageFile, @unchecked Sendable {
    let path: String
    // Written once in init and set to -1 only by close(); callers never use a file after closing it.
    private var fd: Int32

    private let memoryMapping: Bool
    /// Opened `O_RDONLY` (`openForReading`): writes, truncations and syncs fail with `EBADF`.
    private let readOnly: Bool

    /// Maps of the file, read-only. A map is never removed while the file object lives (a
    /// reader may be using it); a larger one replaces it for new reads when the file grows.
    private struct Maps {
        var current: UnsafeRawBufferPointer?
        var retired: [UnsafeRawBufferPointer] = []
        /// A size the file has at least: bytes below it may be read through a map. Kept by
        /// this object's writes and truncations (the store lock keeps other writers out),
        /// refreshed by fstat when a read reaches past it — so a mapped read never touches a
        /// page past the end of the file. (A handle opened for reading while another process
        /// writes the file must only map bytes that process never truncates: the page log's
        /// followers map only bytes before a checkpoint, Architecture.md invariant 32.)
        var knownSize: UInt64 = 0
    }

    private let maps = Lock(Maps())

    init(fd: Int32, path: String, memoryMapping: Bool = true, readOnly: Bool = false) {
        self.fd = fd
        self.path = path
        self.memoryMapping = memoryMapping
        self.readOnly = readOnly
    }

    private func checkWritable(_ operation: String, offset: UInt64? = nil) throws {
        if readOnly {
            throw IOError(.other(Platform.badDescriptor), operation: operation, path: path, offset: offset, code: Platform.badDescriptor)
        }
    }

    deinit {
        if fd >= 0 { Platform.close(fd) }
        maps.withLock { maps in
            for map in maps.retired + (maps.current.map { [$0] } ?? []) {
                if let base = map.baseAddress { Platform.unmap(base, length: map.count) }  // munmap(2)
            }
        }
    }

    func withBytes<T>(at offset: UInt64, count: Int, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        guard memoryMapping, count > 0, offset <= UInt64(Int.max) - UInt64(count) else {
            return try withBytesRead(at: offset, count: count, body)
        }
        let end = offset + UInt64(count)
        func mapped(_ maps: Maps) -> UnsafeRawBufferPointer? {
            guard end <= maps.knownSize, let map = maps.current, end <= UInt64(map.count) else { return nil }
            return UnsafeRawBufferPointer(rebasing: map[Int(offset)..<Int(end)])
        }
        if let bytes = maps.withLock({ mapped($0) }) { return try body(bytes) }
        // Past the known size or the map: learn the size, map the file anew.
        let size = try self.size()
        guard end <= size else { return nil }
        let bytes = maps.withLock { maps -> UnsafeRawBufferPointer? in
            maps.knownSize = max(maps.knownSize, size)
            if maps.current.map({ UInt64($0.count) < end }) ?? true {
                // Room to grow: twice the file, at least 64 MiB (a segment), in whole MiB.
                let length = Int((max(size * 2, 64 << 20) + (1 << 20) - 1) & ~((1 << 20) - 1))
                guard let base = Platform.mapReadOnly(fd, length: length) else { return nil }  // mmap(2)
                if let current = maps.current { maps.retired.append(current) }
                maps.current = UnsafeRawBufferPointer(start: base, count: length)
            }
            return mapped(maps)
        }
        guard let bytes else { return try withBytesRead(at: offset, count: count, body) }
        return try body(bytes)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        guard offset <= UInt64(Int64.max) - UInt64(buffer.count) else {
            throw IOError(.other(Platform.invalidArgument), operation: "pread", path: path, offset: offset, code: Platform.invalidArgument)
        }
        var done = 0
        while done < buffer.count {
            let n = Platform.pread(fd, buffer.baseAddress! + done, buffer.count - done, offset + UInt64(done))  // pread(2)
            if n < 0 {
                if Platform.errno == Platform.interrupted { continue }
                throw posixError("pread", path, offset: offset + UInt64(done))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try checkWritable("pwrite", offset: offset)
        guard offset <= UInt64(Int64.max) - UInt64(bytes.count) else {
            throw IOError(.other(Platform.invalidArgument), operation: "pwrite", path: path, offset: offset, code: Platform.invalidArgument)
        }
        var done = 0
        while done < bytes.count {
            let n = Platform.pwrite(fd, bytes.baseAddress! + done, bytes.count - done, offset + UInt64(done))  // pwrite(2)
            if n < 0 {
                if Platform.errno == Platform.interrupted { continue }
                throw posixError("pwrite", path, offset: offset + UInt64(done))
            }
            done += n
        }
        let end = offset + UInt64(bytes.count)
        maps.withLock { $0.knownSize = max($0.knownSize, end) }
    }

    func sync() throws {
        // fdatasync(2) (F_FULLFSYNC on Darwin: Platform.syncData). A failure is reported, never
        // retried: after a failed sync the kernel may have dropped the dirty pages, so the
        // caller must stop writing (the page log does).
        try checkWritable("fdatasync")
        if Platform.syncData(fd) != 0 { throw posixError("fdatasync", path) }
    }

    func size() throws -> UInt64 {
        guard let status = Platform.status(fd) else { throw posixError("fstat", path) }  // fstat(2)
        return status.size
    }

    func status() throws -> FileStatus {
        guard let status = Platform.status(fd) else { throw posixError("fstat", path) }  // fstat(2)
        return FileStatus(size: status.size, isLinked: status.isLinked)
    }

    func truncate(to size: UInt64) throws {
        try checkWritable("ftruncate")
        // The known size shrinks before the file does: no mapped read starts past the new end.
        maps.withLock { $0.knownSize = min($0.knownSize, size) }
        if Platform.truncate(fd, to: size) != 0 { throw posixError("ftruncate", path) }  // ftruncate(2)
    }

    func close() {
        if fd >= 0 { Platform.close(fd); fd = -1 }
    }
}

final class POSIXLock: FileLock, @unchecked Sendable {
    // Guarded by being released once; unlock() is called by the owner only.
    private var fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit { unlock() }
    func unlock() {
        if fd >= 0 { Platform.unlock(fd); Platform.close(fd); fd = -1 }
    }
}

private func posixError(_ operation: String, _ path: String, offset: UInt64? = nil) -> IOError {
    IOError(errnoCode: Platform.errno, operation: operation, path: path, offset: offset)
}
