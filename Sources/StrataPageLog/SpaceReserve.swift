import StrataIO

/// The space reserve (Docs/Architecture.md, invariant 33 and "Space reserve"): a file of
/// zeros, `reserve`, in the store's folder, whose blocks the store gives back the moment a
/// write finds the device full — so that the app can still open the store, delete records and
/// compact it, the only ways a log-structured store frees space.
///
/// - *Full* (`capacity` bytes): the normal state.
/// - *Released* (empty): a write of this store failed with `ENOSPC` / `EDQUOT` and the reserve
///   was truncated, handing its blocks back to the device. The page log is *low on space*:
///   compaction moves one segment at a time, fewest live bytes first, deleting each before the
///   next. Only space the store frees itself (segments compaction deletes) refills it, never
///   an open: the room it gave back is what the app needs to delete and compact.
/// - *Partly filled*: refilled by less than the whole (deleted segments freed less), or cut
///   short by a crash while filling; still low on space. A writable open fills the rest when
///   the device has room.
/// - *Missing* (a new store, or one last written by a library without a reserve): a writable
///   open creates it full, under a temporary name renamed into place once filled and synced,
///   so a crash never leaves one that reads as released (only none, or a `.tmp`). Without room for it, the store opens
///   without one (low on space) and the next open tries again.
///
/// Nothing the store holds is in this file: losing, shortening or deleting it loses nothing.
///
/// Thread-safe: the state is behind a mutex. `release` runs on whatever thread met the error;
/// `refill` runs under the writer lock.
final class SpaceReserve: Sendable {
    static let fileName = "reserve"

    let fileSystem: any FileSystem
    let directory: String
    /// Bytes of a full reserve.
    let capacity: UInt64
    private let state: Lock<(file: (any StorageFile)?, size: UInt64)>

    private init(fileSystem: any FileSystem, directory: String, capacity: UInt64, file: (any StorageFile)?, size: UInt64) {
        self.fileSystem = fileSystem
        self.directory = directory
        self.capacity = capacity
        state = Lock((file, size))
    }

    private var path: String { joinPath(directory, Self.fileName) }

    /// The reserve of the store in `directory`, for its writer (invariant 33): created full when
    /// missing, filled when partly filled, left as it is when released (empty). Nil when
    /// `capacity` is 0 (a reserve left by an earlier configuration is removed). Never throws:
    /// a reserve that cannot be made is a store low on space, not a store that cannot open.
    static func open(directory: String, fileSystem: any FileSystem, capacity: Int) -> SpaceReserve? {
        let path = joinPath(directory, fileName)
        guard capacity > 0 else {
            if fileSystem.fileExists(path) { try? fileSystem.removeFile(path) }
            return nil
        }
        let capacity = UInt64(capacity)
        if let file = try? fileSystem.openFile(path, create: false) {
            var size = (try? file.size()) ?? 0
            if size > capacity, (try? file.truncate(to: capacity)) != nil { size = capacity }
            let reserve = SpaceReserve(fileSystem: fileSystem, directory: directory, capacity: capacity, file: file, size: size)
            if size > 0 && size < capacity { reserve.refill(upTo: capacity) }
            return reserve
        }
        let temporary = path + StoreFileNames.temporarySuffix
        do {
            let file = try fileSystem.openFile(temporary, create: true)
            defer { file.close() }
            try file.truncate(to: 0)
            try file.allocate(upTo: capacity)
            try file.sync()
            // Renamed only once whole and synced; the folder is not synced for it: a rename a
            // crash loses leaves no reserve (made again at the next open) or a `.tmp` (deleted).
            try fileSystem.rename(temporary, to: path)
            return SpaceReserve(fileSystem: fileSystem, directory: directory, capacity: capacity,
                                file: try fileSystem.openFile(path, create: false), size: capacity)
        } catch {
            try? fileSystem.removeFile(temporary)  // what was written of it goes back to the device
            return SpaceReserve(fileSystem: fileSystem, directory: directory, capacity: capacity, file: nil, size: 0)
        }
    }

    /// Bytes the reserve holds now.
    var size: UInt64 { state.withLock { $0.size } }

    /// Whether the reserve holds less than its capacity: the store met a full device and has
    /// not freed enough since (compaction then frees as it goes).
    var isLow: Bool { size < capacity }

    /// Gives the reserve's blocks back to the device (truncated to empty, synced): called when
    /// a write of the store failed for lack of space. Errors are ignored (the reserve only
    /// helps; the write's error is the one reported).
    func release() {
        state.withLock { state in
            guard state.size > 0, let file = state.file else { return }
            try? file.truncate(to: 0)
            try? file.sync()
            state.size = 0
        }
    }

    /// Grows the reserve by at most `bytes` toward its capacity: after segments were deleted,
    /// by the space they held, so refilling never takes more than the store just gave back.
    /// A device without room for it leaves the reserve as it was.
    func refill(upTo bytes: UInt64) {
        state.withLock { state in
            guard state.size < capacity, bytes > 0 else { return }
            let target = min(capacity, state.size + bytes)
            do {
                if state.file == nil { state.file = try fileSystem.openFile(path, create: true) }
                guard let file = state.file else { return }
                do {
                    try file.allocate(upTo: target)
                    try file.sync()
                    state.size = target
                } catch {
                    try? file.truncate(to: state.size)  // give back what was taken
                }
            } catch {
                return  // no file could be made: stays as it is
            }
        }
    }
}
