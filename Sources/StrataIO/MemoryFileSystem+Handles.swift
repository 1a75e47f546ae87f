import Synchronization

// The in-memory file system's files and their handles (`MemoryFileSystem` makes them; every
// handle operation goes back to the file system, under its mutex).

/// A file's contents; handles refer to it directly, so a renamed or unlinked file stays
/// usable through handles opened before (POSIX semantics).
final class Inode: @unchecked Sendable {
    // Only touched with the file system's mutex held.
    var durable: [UInt8] = []
    var current: [UInt8] = []
    var pending: [PendingWrite] = []
}

enum PendingWrite {
    case write(offset: Int, bytes: [UInt8])
    case truncate(size: Int)
}

final class MemoryFile: StorageFile, @unchecked Sendable {
    let fileSystem: MemoryFileSystem
    let path: String
    let inode: Inode  // touched only through the file system, under its mutex
    let generation: Int
    /// Opened with `openForReading`: writes, truncations and syncs fail with EBADF, as
    /// through an `O_RDONLY` descriptor.
    let readOnly: Bool
    private let closed = Atomic<Bool>(false)

    init(fileSystem: MemoryFileSystem, path: String, inode: Inode, generation: Int, readOnly: Bool = false) {
        self.fileSystem = fileSystem
        self.path = path
        self.inode = inode
        self.generation = generation
        self.readOnly = readOnly
    }

    private func checkOpen(_ operation: String) throws {
        if closed.load(ordering: .relaxed) { throw IOError(.other(9), operation: operation, path: path) }  // EBADF
    }

    private func checkWritable(_ operation: String) throws {
        try checkOpen(operation)
        if readOnly { throw IOError(.other(9), operation: operation, path: path, code: 9) }  // EBADF
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try checkOpen("pread")
        return try fileSystem.read(path, inode, generation: generation, into: buffer, at: offset)
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try checkWritable("pwrite")
        try fileSystem.write(path, inode, generation: generation, bytes, at: offset)
    }

    func sync() throws {
        try checkWritable("fdatasync")
        try fileSystem.sync(path, inode, generation: generation)
    }

    func size() throws -> UInt64 {
        try checkOpen("fstat")
        return try fileSystem.size(path, inode, generation: generation)
    }

    func status() throws -> FileStatus {
        try checkOpen("fstat")
        return try fileSystem.status(path, inode, generation: generation)
    }

    func truncate(to size: UInt64) throws {
        try checkWritable("ftruncate")
        try fileSystem.truncate(path, inode, generation: generation, to: size)
    }

    func allocate(upTo size: UInt64) throws {
        try checkWritable("fallocate")
        try fileSystem.allocate(path, inode, generation: generation, upTo: size)
    }

    func close() { closed.store(true, ordering: .relaxed) }
}

final class MemoryLock: FileLock, Sendable {
    let fileSystem: MemoryFileSystem
    let path: String
    let generation: Int
    private let released = Atomic<Bool>(false)

    init(fileSystem: MemoryFileSystem, path: String, generation: Int) {
        self.fileSystem = fileSystem
        self.path = path
        self.generation = generation
    }

    deinit { unlock() }

    func unlock() {
        if !released.exchange(true, ordering: .relaxed) { fileSystem.unlock(path, generation: generation) }
    }
}
