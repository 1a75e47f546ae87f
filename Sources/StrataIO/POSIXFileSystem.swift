#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real file system, through thin wrappers over POSIX calls. This file and
/// `MemoryFileSystem.swift` are the only places in Strata that touch files; only this
/// one makes system calls.
package struct POSIXFileSystem: FileSystem {
    package init() {}

    package func openFile(_ path: String, create: Bool) throws -> any StorageFile {
        let flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0)
        let fd = Glibc.open(path, flags, 0o644)  // open(2)
        guard fd >= 0 else { throw posixError("open", path) }
        return POSIXFile(fd: fd, path: path)
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

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

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
    }

    func sync() throws {
        // fdatasync(2). A failure is reported, never retried: after a failed sync the kernel may
        // have dropped the dirty pages, so the caller must stop writing (the page log does).
        if fdatasync(fd) != 0 { throw posixError("fdatasync", path) }
    }

    func size() throws -> UInt64 {
        var info = stat()
        if fstat(fd, &info) != 0 { throw posixError("fstat", path) }  // fstat(2)
        return UInt64(info.st_size)
    }

    func truncate(to size: UInt64) throws {
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
    let code = errno
    let kind: IOError.Kind
    switch code {
    case ENOSPC, EDQUOT: kind = .noSpace
    case EIO: kind = .ioError
    case ENOENT: kind = .notFound
    case EEXIST: kind = .alreadyExists
    case EACCES, EPERM, EROFS: kind = .permissionDenied
    default: kind = .other(code)
    }
    return IOError(kind, operation: operation, path: path, offset: offset, code: code)
}
