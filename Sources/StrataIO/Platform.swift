#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#else
#error("Strata's I/O layer needs Glibc, Musl or Darwin")
#endif

/// Every call Strata makes into the C library, in one place: thin wrappers, one per C
/// function (named in each comment), that return what the function returns and leave the
/// error in `errno`. This is the only file that imports a platform module (Glibc, Musl or
/// Darwin); `Scripts/check-platform.sh` fails CI when another does, or calls the C library
/// directly. Where the platforms differ, the branch for each is here, with the reason:
///
/// - **Durable syncs.** On Linux `fdatasync(2)` (files) and `fsync(2)` (directories) reach
///   stable storage. On Darwin neither does: they hand the data to the drive, whose cache may
///   still lose it on power loss, so both are `fcntl(F_FULLFSYNC)`, which also flushes the
///   drive's cache — as SQLite (`PRAGMA fullfsync`) and LMDB do — falling back to `fsync(2)`
///   when the file system refuses it (some network and FUSE file systems), as SQLite does.
/// - **Locks.** `flock(2)` everywhere: its lock belongs to the open file description, so a
///   second open of the same store in one process is refused as another process's is. POSIX
///   `fcntl` record locks belong to the process (a second open would succeed, and closing any
///   descriptor of the file drops the lock); Linux's open-file-description locks
///   (`F_OFD_SETLK`) do not exist on Darwin.
///
/// Docs/Architecture.md, "Platforms", says more.
enum Platform {
    /// The calling thread's `errno`, as the last failed call left it.
    static var errno: Int32 { cErrno() }

    // MARK: errno values the I/O layer acts on

    /// `EINTR`: a call interrupted by a signal, to be retried.
    static let interrupted = EINTR
    /// `EEXIST`.
    static let exists = EEXIST
    /// `EWOULDBLOCK`: a non-blocking lock is held elsewhere.
    static let wouldBlock = EWOULDBLOCK
    /// `EINVAL`.
    static let invalidArgument = EINVAL
    /// `EBADF`: a descriptor not open for the operation.
    static let badDescriptor = EBADF
    /// `ENOTEMPTY`: a directory that still holds entries.
    static let notEmpty = ENOTEMPTY
    /// `ENOTDIR`.
    static let notADirectory = ENOTDIR

    /// The I/O layer's reading of an `errno` value.
    static func kind(ofError code: Int32) -> IOError.Kind {
        switch code {
        case ENOSPC, EDQUOT: return .noSpace
        case EIO: return .ioError
        case ENOENT: return .notFound
        case EEXIST: return .alreadyExists
        case EACCES, EPERM, EROFS: return .permissionDenied
        default: return .other(code)
        }
    }

    /// The `errno` a kind of error stands for (a simulated error without a code of its own).
    static func code(standingFor kind: IOError.Kind) -> Int32 {
        switch kind {
        case .noSpace: return ENOSPC
        case .ioError: return EIO
        case .notFound: return ENOENT
        case .alreadyExists: return EEXIST
        case .permissionDenied: return EACCES
        case .locked: return EWOULDBLOCK
        case .crashed: return EIO
        case .other(let value): return value
        }
    }

    /// The symbolic name (`"EROFS"`) and meaning (`"read-only file system"`) of an `errno`
    /// value of this platform; nil for a code without one here.
    static func name(ofErrno code: Int32) -> (symbol: String, meaning: String)? {
        switch code {
        case EPERM: ("EPERM", "operation not permitted")
        case ENOENT: ("ENOENT", "no such file or directory")
        case EINTR: ("EINTR", "interrupted system call")
        case EIO: ("EIO", "input/output error")
        case ENXIO: ("ENXIO", "no such device or address")
        case EBADF: ("EBADF", "bad file descriptor")
        case ENOMEM: ("ENOMEM", "out of memory")
        case EACCES: ("EACCES", "permission denied")
        case EBUSY: ("EBUSY", "device or resource busy")
        case EEXIST: ("EEXIST", "file exists")
        case EXDEV: ("EXDEV", "cross-device link")
        case ENODEV: ("ENODEV", "no such device")
        case ENOTDIR: ("ENOTDIR", "not a directory")
        case EISDIR: ("EISDIR", "is a directory")
        case EINVAL: ("EINVAL", "invalid argument")
        case ENFILE: ("ENFILE", "too many open files in the system")
        case EMFILE: ("EMFILE", "too many open files")
        case EFBIG: ("EFBIG", "file too large")
        case ENOSPC: ("ENOSPC", "no space left on device")
        case EROFS: ("EROFS", "read-only file system")
        case EMLINK: ("EMLINK", "too many links")
        case EAGAIN: ("EAGAIN", "resource temporarily unavailable")
        case ENAMETOOLONG: ("ENAMETOOLONG", "file name too long")
        case ENOLCK: ("ENOLCK", "no locks available")
        case ENOSYS: ("ENOSYS", "function not implemented")
        case ELOOP: ("ELOOP", "too many levels of symbolic links")
        case EOPNOTSUPP: ("EOPNOTSUPP", "operation not supported")
        case EDQUOT: ("EDQUOT", "disk quota exceeded")
        case ESTALE: ("ESTALE", "stale file handle")
        default: nil
        }
    }

    // MARK: paths

    /// How `open` opens a path. Every descriptor is close-on-exec.
    enum Access {
        /// Read and write (`O_RDWR`), created with mode 0644 when `create` is set.
        case readWrite(create: Bool)
        /// Read only (`O_RDONLY`).
        case readOnly
        /// A directory, to sync it (`O_RDONLY | O_DIRECTORY`).
        case directory
    }

    /// `open(2)`: a descriptor, or -1.
    static func open(_ path: String, _ access: Access) -> Int32 {
        switch access {
        case .readWrite(let create):
            return cOpen(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0))
        case .readOnly:
            return cOpen(path, O_RDONLY | O_CLOEXEC)
        case .directory:
            return cOpen(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
    }

    /// `close(2)`.
    @discardableResult
    static func close(_ descriptor: Int32) -> Int32 { cClose(descriptor) }

    /// `mkdir(2)` with mode 0755: 0, or -1.
    static func makeDirectory(_ path: String) -> Int32 { mkdir(path, 0o755) }

    /// `opendir(3)`, `readdir(3)`, `closedir(3)`: the names in a directory, "." and ".."
    /// included, or nil when it cannot be opened.
    static func directoryEntries(_ path: String) -> [String]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            // `d_name` is a fixed-size C array (256 bytes on Linux, 1024 on Darwin), NUL-terminated.
            names.append(withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
        }
        return names
    }

    /// `stat(2)`: whether something exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// `unlink(2)`: 0, or -1.
    static func unlink(_ path: String) -> Int32 { cUnlink(path) }

    /// `rename(2)`: 0, or -1.
    static func rename(_ source: String, _ destination: String) -> Int32 { cRename(source, destination) }

    /// `rmdir(2)`: 0, or -1 (the directory must be empty).
    static func removeDirectory(_ path: String) -> Int32 { rmdir(path) }

    /// `isatty(3)`: whether `descriptor` is a terminal.
    static func isTerminal(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }

    // MARK: descriptors

    /// `pread(2)`: bytes read, 0 at the end of the file, or -1.
    static func pread(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: UInt64) -> Int {
        cPread(descriptor, buffer, count, offset)
    }

    /// `pwrite(2)`: bytes written, or -1.
    /// `write(2)` at the descriptor's position (standard output and error).
    static func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        cWrite(descriptor, buffer, count)
    }

    /// `exit(3)`.
    static func exit(_ status: Int32) -> Never {
        cExit(status)
    }

    static func pwrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ offset: UInt64) -> Int {
        cPwrite(descriptor, buffer, count, offset)
    }

    /// `ftruncate(2)`: 0, or -1.
    static func truncate(_ descriptor: Int32, to size: UInt64) -> Int32 { ftruncate(descriptor, off_t(size)) }

    /// `fstat(2)`: the file's size and whether it still has a name (link count > 0), or nil.
    static func status(_ descriptor: Int32) -> (size: UInt64, isLinked: Bool)? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return (UInt64(info.st_size), info.st_nlink > 0)
    }

    /// Makes a file's written data durable, with the metadata needed to read it back: 0, or -1.
    /// Linux: `fdatasync(2)`. Darwin: `fcntl(F_FULLFSYNC)`, or `fsync(2)` where the file system
    /// does not support it (see the type's comment).
    static func syncData(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        fullSync(descriptor)
        #else
        fdatasync(descriptor)
        #endif
    }

    /// Makes a directory's entries (created, renamed, removed names) durable: 0, or -1.
    /// Linux: `fsync(2)` of the directory. Darwin: as `syncData`.
    static func syncDirectory(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        fullSync(descriptor)
        #else
        fsync(descriptor)
        #endif
    }

    #if canImport(Darwin)
    /// `fcntl(F_FULLFSYNC)`, then `fsync(2)` if it fails: SQLite's `full_fsync`. A failing
    /// F_FULLFSYNC means the file system cannot flush the drive's cache for this file (it
    /// reports ENOTSUP, EINVAL…); fsync is then the most it can do. A failing fsync is reported.
    private static func fullSync(_ descriptor: Int32) -> Int32 {
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return 0 }
        return fsync(descriptor)
    }
    #endif

    /// `flock(2)` without blocking, exclusive or shared: 0, or -1 (`wouldBlock` when held).
    static func lock(_ descriptor: Int32, exclusive: Bool) -> Int32 {
        flock(descriptor, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB)
    }

    /// `flock(2)` `LOCK_UN`.
    @discardableResult
    static func unlock(_ descriptor: Int32) -> Int32 { flock(descriptor, LOCK_UN) }

    /// `mmap(2)` of the first `length` bytes of a file, shared and read-only, or nil.
    static func mapReadOnly(_ descriptor: Int32, length: Int) -> UnsafeRawPointer? {
        guard let base = mmap(nil, length, PROT_READ, MAP_SHARED, descriptor, 0),
              base != UnsafeMutableRawPointer(bitPattern: -1) else { return nil }  // MAP_FAILED
        return UnsafeRawPointer(base)
    }

    /// `munmap(2)` of a map `mapReadOnly` returned.
    static func unmap(_ base: UnsafeRawPointer, length: Int) {
        munmap(UnsafeMutableRawPointer(mutating: base), length)
    }

    // MARK: threads

    /// How many processors this process may run on: on Linux the calling thread's CPU affinity
    /// (`sched_getaffinity(2)`: what `taskset` or a container's cpuset allows), elsewhere the
    /// processors online (`sysconf(_SC_NPROCESSORS_ONLN)`); at least 1.
    static func usableProcessorCount() -> Int {
        #if os(Linux)
        // The C library declares it only for GNU sources, which Swift's module does not define:
        // looked up by name (`dlsym(3)`, RTLD_DEFAULT), in glibc and musl alike.
        typealias GetAffinity = @convention(c) (Int32, Int, UnsafeMutableRawPointer) -> Int32
        if let symbol = dlsym(nil, "sched_getaffinity") {
            let getAffinity = unsafeBitCast(symbol, to: GetAffinity.self)
            var set = [UInt8](repeating: 0, count: 128)  // 1,024 CPUs, glibc's cpu_set_t
            let status = set.withUnsafeMutableBytes { bytes in bytes.baseAddress.map { getAffinity(0, bytes.count, $0) } ?? -1 }
            let allowed = set.reduce(0) { $0 + $1.nonzeroBitCount }
            if status == 0 && allowed > 0 { return allowed }
        }
        #endif
        return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    /// A `pthread_mutex_t`, for `TSanMutex` (`Lock` in ThreadSanitizer builds): a lock ThreadSanitizer
    /// intercepts. `pthread_mutex_init(3)`, `_lock`, `_unlock`, `_destroy`.
    final class ThreadMutex: @unchecked Sendable {
        private let mutex: UnsafeMutablePointer<pthread_mutex_t>

        init() {
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }

        func lock() { pthread_mutex_lock(mutex) }
        func unlock() { pthread_mutex_unlock(mutex) }
    }
}

// The C functions whose names `Platform` reuses, called from outside the type (inside it,
// `open` would name `Platform.open`). The same unqualified names on Glibc, Musl and Darwin.

private func cErrno() -> Int32 { errno }
private func cOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags, 0o644) }
private func cClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
private func cUnlink(_ path: String) -> Int32 { unlink(path) }
private func cRename(_ source: String, _ destination: String) -> Int32 { rename(source, destination) }
private func cPread(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: UInt64) -> Int {
    pread(descriptor, buffer, count, off_t(offset))
}
private func cPwrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ offset: UInt64) -> Int {
    pwrite(descriptor, buffer, count, off_t(offset))
}
private func cWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, buffer, count) }
private func cExit(_ status: Int32) -> Never { exit(status) }
