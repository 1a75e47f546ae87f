import Synchronization

/// An in-memory file system that can lose power. Tests use it to crash Strata at any
/// instant and to inject I/O errors.
///
/// Model (the pessimistic reading of POSIX on a journaling file system):
/// - Each file keeps its durable bytes and the list of writes and truncations made since
///   its last `sync()`.
/// - Directory operations (create, rename, remove) are pending until `syncDirectory`;
///   at a crash a prefix of them survives (journaled metadata is ordered).
/// - `simulateCrash` decides, per pending write, whether it is dropped, kept or torn (a
///   random subset of its 512-byte sectors kept), using the caller's seeded generator.
///
/// Faults: `setFaultInjector` installs a closure consulted before every mutating operation
/// (write, truncate, sync, directory sync, create, rename, remove). It can make the
/// operation fail with an `IOError` (nothing is applied) or cut the power: the operation
/// and every later one fail with `.crashed` until `simulateCrash` is called.
///
/// Capacity: `setCapacity` makes the device hold at most so many bytes of file contents: a
/// write that does not fit writes what fits and fails with `ENOSPC`, as a short write on a full
/// device does; removing or shortening files frees space.
///
/// Permissions: `setAccessRule` installs a closure consulted whenever a path is opened,
/// listed, looked up, created, renamed, removed or locked. It can refuse with an `errno`, as
/// file permissions (`EACCES`, which tests running as root cannot get from the real file
/// system) or a read-only mount (`EROFS`) would.
///
/// Thread-safe: all state is behind one mutex.
package final class MemoryFileSystem: FileSystem, Sendable {
    /// What happens to each unsynced write at a simulated crash.
    package enum CrashMode: Sendable, CaseIterable, CustomStringConvertible {
        /// Every unsynced write and directory operation is lost.
        case dropAll
        /// Every unsynced write and directory operation survives (as if the OS flushed them).
        case keepAll
        /// Each unsynced write is independently dropped, kept, or torn; a random prefix of the
        /// pending directory operations survives.
        case tear

        package var description: String {
            switch self {
            case .dropAll: "drop"
            case .keepAll: "keep"
            case .tear: "tear"
            }
        }
    }

    /// A mutating operation about to happen, as shown to a fault injector.
    package struct Operation: Sendable, CustomStringConvertible {
        /// The kind of operation (`allocate`: a file extended with zeros, `StorageFile.allocate`).
        package enum Kind: Sendable, Equatable { case write, allocate, truncate, sync, syncDirectory, create, rename, remove }
        /// The kind of operation.
        package var kind: Kind
        /// The path it applies to.
        package var path: String
        /// The number of mutating operations before this one since the file system was made (0-based).
        package var index: Int
        /// The number of syncs (file or directory) before this one, counted for `sync` and `syncDirectory`.
        package var syncIndex: Int
        package var description: String { "\(kind) #\(index) on \(path)" }
    }

    /// What a fault injector asks for.
    package enum Fault: Sendable {
        /// Fail this operation with the given error kind; nothing is applied.
        case fail(IOError.Kind)
        /// Power is lost before this operation takes effect.
        case crash
    }

    /// How a call uses a path, as shown to an access rule.
    package enum Access: Sendable, Equatable {
        /// Reading: opening a file read-only, listing a folder, looking a path up.
        case read
        /// Changing: opening a file for reading and writing, creating, renaming or removing
        /// a file or folder, taking a lock.
        case readWrite
    }

    enum DirectoryOperation {
        case link(name: String, inode: Inode)
        case unlink(name: String)
    }

    struct State {
        var durableEntries: [String: Inode] = [:]
        var entries: [String: Inode] = [:]
        var directories: Set<String> = ["/"]
        var pendingDirectoryOperations: [DirectoryOperation] = []
        var locks: Set<String> = []
        var operationCount = 0
        var syncCount = 0
        var bytesRead = 0
        var crashed = false
        var generation = 0
        var injector: (@Sendable (Operation) -> Fault?)?
        var accessRule: (@Sendable (String, Access) -> Int32?)?
        var capacity: Int?
    }

    let state = Lock(State())

    package init() {}

    /// A file system holding exactly these files (path → bytes), all durable. Their parent
    /// directories are created.
    package convenience init(files: [String: [UInt8]]) {
        self.init()
        state.withLock { state in
            for (path, bytes) in files {
                let inode = Inode()
                inode.durable = bytes
                inode.current = bytes
                state.entries[path] = inode
                state.durableEntries[path] = inode
                var partial = ""
                for component in path.split(separator: "/").dropLast() {
                    partial += "/" + component
                    state.directories.insert(partial)
                }
            }
        }
    }

    /// The current bytes of every file, by path (for tests that copy or corrupt stores).
    package func allFiles() -> [String: [UInt8]] {
        state.withLock { $0.entries.mapValues(\.current) }
    }

    // MARK: FileSystem

    package func openFile(_ path: String, create: Bool) throws -> any StorageFile {
        try state.withLock { state in
            try Self.checkAlive(&state, "open", path)
            try Self.checkAccess(state, path, .readWrite, "open")
            if state.entries[path] == nil {
                guard create else { throw IOError(.notFound, operation: "open", path: path) }
                try Self.checkParent(state, path, "open")
                try Self.admit(&state, .create, path)
                let inode = Inode()
                state.entries[path] = inode
                state.pendingDirectoryOperations.append(.link(name: path, inode: inode))
            }
            guard let inode = state.entries[path] else { throw IOError(.notFound, operation: "open", path: path) }
            return MemoryFile(fileSystem: self, path: path, inode: inode, generation: state.generation)
        }
    }

    package func openForReading(_ path: String) throws -> any StorageFile {
        try state.withLock { state in
            try Self.checkAlive(&state, "open", path)
            try Self.checkAccess(state, path, .read, "open")
            guard let inode = state.entries[path] else { throw IOError(.notFound, operation: "open", path: path) }
            return MemoryFile(fileSystem: self, path: path, inode: inode, generation: state.generation, readOnly: true)
        }
    }

    package func createDirectory(_ path: String) throws {
        // Directories themselves are durable at once: a store folder is made before any file in it.
        try state.withLock { state in
            var partial = ""
            for component in path.split(separator: "/") {
                partial += "/" + component
                if !state.directories.contains(partial) { try Self.checkAccess(state, partial, .readWrite, "mkdir") }
                state.directories.insert(partial)
            }
        }
    }

    package func contentsOfDirectory(_ path: String) throws -> [String] {
        try state.withLock { state in
            let directory = Self.normalize(path)
            try Self.checkAccess(state, path, .read, "opendir")
            guard state.directories.contains(directory) else {
                throw IOError(.notFound, operation: "opendir", path: path)
            }
            let prefix = directory == "/" ? "/" : directory + "/"
            var names: [String] = []
            for name in state.entries.keys where name.hasPrefix(prefix) {
                let rest = name.dropFirst(prefix.count)
                if !rest.contains("/") { names.append(String(rest)) }
            }
            for name in state.directories where name.hasPrefix(prefix) && name != directory {
                let rest = name.dropFirst(prefix.count)
                if !rest.contains("/") { names.append(String(rest)) }
            }
            return names
        }
    }

    package func fileExists(_ path: String) -> Bool {
        state.withLock { state in
            guard state.accessRule?(path, .read) == nil else { return false }
            return state.entries[path] != nil || state.directories.contains(Self.normalize(path))
        }
    }

    package func removeFile(_ path: String) throws {
        try state.withLock { state in
            try Self.checkAlive(&state, "unlink", path)
            try Self.checkAccess(state, path, .readWrite, "unlink")
            guard state.entries[path] != nil else { throw IOError(.notFound, operation: "unlink", path: path) }
            try Self.admit(&state, .remove, path)
            state.entries[path] = nil
            state.pendingDirectoryOperations.append(.unlink(name: path))
        }
    }

    package func removeDirectory(_ path: String) throws {
        try state.withLock { state in
            try Self.checkAlive(&state, "rmdir", path)
            try Self.checkAccess(state, path, .readWrite, "rmdir")
            let directory = Self.normalize(path)
            guard state.directories.contains(directory) else { throw IOError(.notFound, operation: "rmdir", path: path) }
            guard Self.isEmptyDirectory(state, directory) else { throw IOError(errnoCode: Platform.notEmpty, operation: "rmdir", path: path) }
            try Self.admit(&state, .remove, path)
            // Directories are durable at once in this model (see `createDirectory`).
            state.directories.remove(directory)
        }
    }

    package func rename(_ source: String, to destination: String) throws {
        try state.withLock { state in
            try Self.checkAlive(&state, "rename", source)
            try Self.checkAccess(state, source, .readWrite, "rename")
            try Self.checkAccess(state, destination, .readWrite, "rename")
            if state.entries[source] == nil, state.directories.contains(Self.normalize(source)) {
                return try Self.renameDirectory(&state, Self.normalize(source), to: Self.normalize(destination))
            }
            guard let inode = state.entries[source] else { throw IOError(.notFound, operation: "rename", path: source) }
            try Self.admit(&state, .rename, source)
            state.entries[source] = nil
            state.entries[destination] = inode
            state.pendingDirectoryOperations.append(.link(name: destination, inode: inode))
            state.pendingDirectoryOperations.append(.unlink(name: source))
        }
    }

    package func syncDirectory(_ path: String) throws {
        try state.withLock { state in
            try Self.checkAlive(&state, "fsync", path)
            try Self.checkAccess(state, path, .read, "open")
            try Self.admit(&state, .syncDirectory, path)
            state.syncCount += 1
            // Directory operations are kept whole for simplicity of the model: all of them
            // become durable, including those in other directories (a journal commit does that).
            for operation in state.pendingDirectoryOperations {
                switch operation {
                case .link(let name, let inode): state.durableEntries[name] = inode
                case .unlink(let name): state.durableEntries[name] = nil
                }
            }
            state.pendingDirectoryOperations = []
        }
    }

    package func lock(_ path: String, exclusive: Bool) throws -> any FileLock {
        try state.withLock { state in
            try Self.checkAlive(&state, "flock", path)
            try Self.checkAccess(state, path, .readWrite, "open")
            guard !state.locks.contains(path) else { throw IOError(.locked, operation: "flock", path: path) }
            state.locks.insert(path)
            return MemoryLock(fileSystem: self, path: path, generation: state.generation)
        }
    }

    // MARK: File operations (called by MemoryFile)

    func read(_ path: String, _ file: Inode, generation: Int, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try state.withLock { state in
            let inode = try Self.inode(&state, file, path, generation, "pread")
            let start = Int(clamping: offset)
            guard start < inode.current.count else { return 0 }
            let count = min(buffer.count, inode.current.count - start)
            guard count > 0, let destination = buffer.baseAddress else { return 0 }
            state.bytesRead += count
            inode.current.withUnsafeBytes { source in
                if let base = source.baseAddress { destination.copyMemory(from: base + start, byteCount: count) }
            }
            return count
        }
    }

    func write(_ path: String, _ file: Inode, generation: Int, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try state.withLock { state in
            let inode = try Self.inode(&state, file, path, generation, "pwrite")
            try Self.admit(&state, .write, path, offset: offset)
            var data = [UInt8](bytes)
            // A full device takes what fits (a short write) and refuses the rest.
            let growth = max(0, Int(offset) + data.count - inode.current.count)
            let refused = growth - Self.room(state, growing: inode, to: Int(offset) + data.count)
            if refused > 0 { data.removeLast(min(refused, data.count)) }
            if !data.isEmpty {
                Self.apply(&inode.current, offset: Int(offset), data: data[...])
                inode.pending.append(.write(offset: Int(offset), bytes: data))
            }
            if refused > 0 {
                throw IOError(errnoCode: 28, operation: "pwrite", path: path, offset: offset + UInt64(data.count))  // ENOSPC
            }
        }
    }

    func truncate(_ path: String, _ file: Inode, generation: Int, to size: UInt64) throws {
        try state.withLock { state in
            let inode = try Self.inode(&state, file, path, generation, "ftruncate")
            try Self.admit(&state, .truncate, path)
            Self.resize(&inode.current, to: Int(size))
            inode.pending.append(.truncate(size: Int(size)))
        }
    }

    func allocate(_ path: String, _ file: Inode, generation: Int, upTo size: UInt64) throws {
        try state.withLock { state in
            let inode = try Self.inode(&state, file, path, generation, "fallocate")
            guard Int(size) > inode.current.count else { return }
            try Self.admit(&state, .allocate, path, offset: UInt64(inode.current.count))
            guard Self.room(state, growing: inode, to: Int(size)) == Int(size) - inode.current.count else {
                throw IOError(errnoCode: 28, operation: "fallocate", path: path)  // ENOSPC; nothing taken
            }
            // As a write of zeros at the end: pending until synced.
            let start = inode.current.count
            Self.resize(&inode.current, to: Int(size))
            inode.pending.append(.write(offset: start, bytes: [UInt8](repeating: 0, count: Int(size) - start)))
        }
    }

    func sync(_ path: String, _ file: Inode, generation: Int) throws {
        try state.withLock { state in
            let inode = try Self.inode(&state, file, path, generation, "fdatasync")
            try Self.admit(&state, .sync, path)
            state.syncCount += 1
            inode.durable = inode.current
            inode.pending = []
        }
    }

    func size(_ path: String, _ file: Inode, generation: Int) throws -> UInt64 {
        try state.withLock { state in
            UInt64(try Self.inode(&state, file, path, generation, "fstat").current.count)
        }
    }

    func status(_ path: String, _ file: Inode, generation: Int) throws -> FileStatus {
        try state.withLock { state in
            let inode = try Self.inode(&state, file, path, generation, "fstat")
            // Linked while some name refers to this inode (a removed or renamed-over file is not).
            return FileStatus(size: UInt64(inode.current.count), isLinked: state.entries.values.contains { $0 === inode })
        }
    }

    func unlock(_ path: String, generation: Int) {
        state.withLock { state in
            if state.generation == generation { state.locks.remove(path) }
        }
    }

    // MARK: Helpers

    /// Whether nothing (no file, no directory) is inside `directory` (normalized).
    private static func isEmptyDirectory(_ state: State, _ directory: String) -> Bool {
        let prefix = directory == "/" ? "/" : directory + "/"
        return !state.entries.keys.contains { $0.hasPrefix(prefix) } && !state.directories.contains { $0.hasPrefix(prefix) }
    }

    /// `rename` of a directory, as rename(2) does it: `destination` must not exist or be an
    /// empty directory. The files inside move under their new names as a file's rename does
    /// (durable at the next `syncDirectory`); the directories themselves at once.
    private static func renameDirectory(_ state: inout State, _ source: String, to destination: String) throws {
        if state.entries[destination] != nil { throw IOError(errnoCode: Platform.notADirectory, operation: "rename", path: destination) }
        if state.directories.contains(destination), !isEmptyDirectory(state, destination) {
            throw IOError(errnoCode: Platform.notEmpty, operation: "rename", path: destination)
        }
        guard !destination.hasPrefix(source + "/") else { throw IOError(errnoCode: Platform.invalidArgument, operation: "rename", path: destination) }
        try admit(&state, .rename, source)
        let prefix = source + "/"
        for (name, inode) in state.entries where name.hasPrefix(prefix) {
            let moved = destination + "/" + name.dropFirst(prefix.count)
            state.entries[name] = nil
            state.entries[moved] = inode
            state.pendingDirectoryOperations.append(.link(name: moved, inode: inode))
            state.pendingDirectoryOperations.append(.unlink(name: name))
        }
        for directory in state.directories where directory == source || directory.hasPrefix(prefix) {
            state.directories.remove(directory)
            state.directories.insert(destination + directory.dropFirst(source.count))
        }
    }

    private static func checkAlive(_ state: inout State, _ operation: String, _ path: String) throws {
        if state.crashed { throw IOError(.crashed, operation: operation, path: path) }
    }

    /// Bytes of file contents held: every file reachable by a name, once.
    static func usedBytes(_ state: State) -> Int {
        var seen = Set<ObjectIdentifier>()
        var total = 0
        for inode in state.entries.values where seen.insert(ObjectIdentifier(inode)).inserted { total += inode.current.count }
        return total
    }

    /// How many of the bytes `inode` would gain by growing to `end` the device has room for
    /// (all of them without a capacity).
    private static func room(_ state: State, growing inode: Inode, to end: Int) -> Int {
        let growth = max(0, end - inode.current.count)
        guard let capacity = state.capacity, growth > 0 else { return growth }
        return max(0, min(growth, capacity - usedBytes(state)))
    }

    /// Throws the error the access rule gives `path` for `access`, if any.
    private static func checkAccess(_ state: State, _ path: String, _ access: Access, _ operation: String) throws {
        if let code = state.accessRule?(path, access) { throw IOError(errnoCode: code, operation: operation, path: path) }
    }

    private static func checkParent(_ state: State, _ path: String, _ operation: String) throws {
        let parent = normalize(String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]))
        guard state.directories.contains(parent) else { throw IOError(.notFound, operation: operation, path: path) }
    }

    private static func inode(_ state: inout State, _ inode: Inode, _ path: String, _ generation: Int, _ operation: String) throws -> Inode {
        try checkAlive(&state, operation, path)
        guard generation == state.generation else {
            throw IOError(.ioError, operation: operation, path: path)  // opened before a crash
        }
        return inode
    }

    /// Counts an operation and consults the fault injector.
    private static func admit(_ state: inout State, _ kind: Operation.Kind, _ path: String, offset: UInt64? = nil) throws {
        let operation = Operation(kind: kind, path: path, index: state.operationCount, syncIndex: state.syncCount)
        state.operationCount += 1
        guard let injector = state.injector, let fault = injector(operation) else { return }
        let name: String
        switch kind {
        case .write: name = "pwrite"
        case .allocate: name = "fallocate"
        case .truncate: name = "ftruncate"
        case .sync: name = "fdatasync"
        case .syncDirectory: name = "fsync"
        case .create: name = "open"
        case .rename: name = "rename"
        case .remove: name = "unlink"
        }
        switch fault {
        case .fail(let errorKind):
            let code: Int32
            switch errorKind {
            case .noSpace: code = 28  // ENOSPC
            case .ioError: code = 5  // EIO
            case .other(let value): code = value
            default: code = 0
            }
            throw IOError(errorKind, operation: name, path: path, offset: offset, code: code)
        case .crash:
            state.crashed = true
            throw IOError(.crashed, operation: name, path: path, offset: offset)
        }
    }

    static func apply(_ bytes: inout [UInt8], offset: Int, data: ArraySlice<UInt8>) {
        let end = offset + data.count
        if bytes.count < end { bytes.append(contentsOf: repeatElement(0, count: end - bytes.count)) }
        bytes.replaceSubrange(offset..<end, with: data)
    }

    static func resize(_ bytes: inout [UInt8], to size: Int) {
        if bytes.count > size { bytes.removeLast(bytes.count - size) } else if bytes.count < size {
            // An array of zeros, appended with one copy: a `repeatElement` collection is appended
            // element by element in a debug build (seconds for a log's preallocated megabytes).
            bytes.append(contentsOf: [UInt8](repeating: 0, count: size - bytes.count))
        }
    }

    private static func normalize(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path.isEmpty ? "/" : path
    }
}
