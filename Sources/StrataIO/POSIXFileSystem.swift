#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The real file system, through thin wrappers over POSIX calls. This file and
/// `MemoryFileSystem.swift` are the only places in Strata that touch files; only this
/// one makes system calls.
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
        let flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0)
        let fd = Glibc.open(path, flags, 0o644)  // open(2)
        guard fd >= 0 else { throw posixError("open", path) }
        return POSIXFile(fd: fd, path: path, memoryMapping: memoryMapping)
    }

    package func openForReading(_ path: String) throws -> any StorageFile {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)  // open(2)
        guard fd >= 0 else { throw posixError("open", path) }
        return POSIXFile(fd: fd, path: path, memoryMapping: memoryMapping, readOnly: true)
    }

    package func createDirectory(_ path: String) throws {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o755) != 0 && errno != EEXIST {  // mkdir(2)
                throw posixError("mkdir", partial)
            }
        }
    }

    package func contentsOfDirectory(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw posixError("opendir", path) }  // opendir(3)
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {  // readdir(3)
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    package func fileExists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0  // stat(2)
    }

    package func removeFile(_ path: String) throws {
        if unlink(path) != 0 { throw posixError("unlink", path) }  // unlink(2)
    }

    package func rename(_ source: String, to destination: String) throws {
        if Glibc.rename(source, destination) != 0 { throw posixError("rename", source) }  // rename(2)
    }

    package func syncDirectory(_ path: String) throws {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("open", path) }
        defer { Glibc.close(fd) }
        if fsync(fd) != 0 { throw posixError("fsync", path) }  // fsync(2) of the directory
    }

    package func lock(_ path: String, exclusive: Bool) throws -> any FileLock {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw posixError("open", path) }
        // flock(2) locks belong to the open file description, so a second open of the same
        // store inside this process is refused too, not only another process.
        if flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
            let error = posixError("flock", path)
            Glibc.close(fd)
            if error.code == EWOULDBLOCK { throw IOError(.locked, operation: "flock", path: path, code: error.code) }
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
        /// followers map only bytes before a checkpoint, Architecture.md invariant 25.)
        var knownSize: UInt64 = 0
    }

    private let maps = Mutex(Maps())

    init(fd: Int32, path: String, memoryMapping: Bool = true, readOnly: Bool = false) {
        self.fd = fd
        self.path = path
        self.memoryMapping = memoryMapping
        self.readOnly = readOnly
    }

    private func checkWritable(_ operation: String, offset: UInt64? = nil) throws {
        if readOnly { throw IOError(.other(EBADF), operation: operation, path: path, offset: offset, code: EBADF) }
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
        maps.withLock { maps in
            for map in maps.retired + (maps.current.map { [$0] } ?? []) {
                munmap(UnsafeMutableRawPointer(mutating: map.baseAddress), map.count)  // munmap(2)
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
                guard let base = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), base != MAP_FAILED else { return nil }  // mmap(2)
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
            throw IOError(.other(EINVAL), operation: "pread", path: path, offset: offset, code: EINVAL)
        }
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))  // pread(2)
            if n < 0 {
                if errno == EINTR { continue }
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
            throw IOError(.other(EINVAL), operation: "pwrite", path: path, offset: offset, code: EINVAL)
        }
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))  // pwrite(2)
            if n < 0 {
                if errno == EINTR { continue }
                throw posixError("pwrite", path, offset: offset + UInt64(done))
            }
            done += n
        }
        let end = offset + UInt64(bytes.count)
        maps.withLock { $0.knownSize = max($0.knownSize, end) }
    }

    func sync() throws {
        // fdatasync(2). A failure is reported, never retried: after a failed sync the kernel may
        // have dropped the dirty pages, so the caller must stop writing (the page log does).
        try checkWritable("fdatasync")
        if fdatasync(fd) != 0 { throw posixError("fdatasync", path) }
    }

    func size() throws -> UInt64 {
        var info = stat()
        if fstat(fd, &info) != 0 { throw posixError("fstat", path) }  // fstat(2)
        return UInt64(info.st_size)
    }

    func status() throws -> FileStatus {
        var info = stat()
        if fstat(fd, &info) != 0 { throw posixError("fstat", path) }  // fstat(2)
        return FileStatus(size: UInt64(info.st_size), isLinked: info.st_nlink > 0)
    }

    func truncate(to size: UInt64) throws {
        try checkWritable("ftruncate")
        // The known size shrinks before the file does: no mapped read starts past the new end.
        maps.withLock { $0.knownSize = min($0.knownSize, size) }
        if ftruncate(fd, off_t(size)) != 0 { throw posixError("ftruncate", path) }  // ftruncate(2)
    }

    func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }
}

final class POSIXLock: FileLock, @unchecked Sendable {
    // Guarded by being released once; unlock() is called by the owner only.
    private var fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit { unlock() }
    func unlock() {
        if fd >= 0 { flock(fd, LOCK_UN); Glibc.close(fd); fd = -1 }
    }
}

private func posixError(_ operation: String, _ path: String, offset: UInt64? = nil) -> IOError {
    IOError(errno: errno, operation: operation, path: path, offset: offset)
}
