import StrataFormat
import StrataIO

extension PageLog {
    /// Opens the store in `directory`, creating it when the folder holds no store, and
    /// recovers: newest valid superblock → checkpoint root → page table chunks → replay of
    /// the log after the checkpoint up to the first invalid frame (Docs/Architecture.md,
    /// "Recovery").
    ///
    /// `readOnly`: opens the store as a *follower* of the process that writes it (invariant 32,
    /// `PageLog+Follow.swift`): no lock is taken, nothing is created, written, removed or
    /// synced, and a torn tail is where that writer is appending; `refresh()` then applies what
    /// it commits. Every write, checkpoint and compaction throws `PageLogError.readOnly`.
    ///
    /// - Throws: `PageLogError.locked` when another writer has the store open (never for a
    ///   follower); `.corruption` naming file, offset and reason when committed data is damaged;
    ///   `.unsupportedFormatVersion` for a store written by a newer format; `.io` (for a
    ///   follower, `.notFound` on the superblock when there is no store).
    package static func open(directory: String, fileSystem: any FileSystem = POSIXFileSystem(),
                             options: PageLogOptions = PageLogOptions(), readOnly: Bool = false) throws -> PageLog {
        if readOnly { return try openFollower(directory: directory, fileSystem: fileSystem, options: options) }
        func io<T>(_ body: () throws -> T) throws -> T {
            do { return try body() } catch let error as IOError { throw PageLogError.io(error) }
        }
        try io { try fileSystem.createDirectory(directory) }
        let lock: any FileLock
        do {
            lock = try fileSystem.lock(joinPath(directory, StoreFileNames.lock), exclusive: true)
        } catch let error as IOError where error.kind == .locked {
            throw PageLogError.locked(path: directory)
        } catch let error as IOError {
            throw PageLogError.io(error)
        }
        var names = try io { try fileSystem.contentsOfDirectory(directory) }
        // Temporary files are leftovers of an interrupted segment or store creation; they never
        // hold committed data (a file is renamed into place only once complete and synced).
        let leftovers = names.filter { $0.hasSuffix(StoreFileNames.temporarySuffix) }
        if !leftovers.isEmpty {
            try io {
                for name in leftovers { try fileSystem.removeFile(joinPath(directory, name)) }
                try fileSystem.syncDirectory(directory)
            }
            names.removeAll { $0.hasSuffix(StoreFileNames.temporarySuffix) }
        }
        var segmentIDs = names.compactMap(StoreFileNames.segmentID).sorted()
        var created = false
        if !names.contains(StoreFileNames.superblock) {
            try checkNoStore(directory: directory, fileSystem: fileSystem, segmentIDs: segmentIDs)
            if !segmentIDs.isEmpty { try io { try fileSystem.removeFile(joinPath(directory, StoreFileNames.segment(1))) } }
            try createStore(directory: directory, fileSystem: fileSystem)
            segmentIDs = [1]
            created = true
        }
        return try recover(directory: directory, fileSystem: fileSystem, options: options, segmentIDs: segmentIDs, created: created,
                           readOnly: false) { recovery, superblockFile in
            try recovery.finish(superblockFile: superblockFile, lock: lock)
        }
    }

    /// Whether `directory` holds a store, without opening it: true when it holds a superblock
    /// file; false when the folder is missing, or holds no superblock and no segment file
    /// beyond what a creation interrupted before its superblock leaves (that is no store yet).
    /// Writes nothing.
    /// - Throws: `PageLogError.io` when the folder cannot be listed (permission denied, a file
    ///   where the folder should be); `.corruption` when the superblock file is missing while
    ///   segment files remain (a lost superblock is not an absent store).
    package static func holdsStore(directory: String, fileSystem: any FileSystem) throws -> Bool {
        let names: [String]
        do {
            names = try fileSystem.contentsOfDirectory(directory)
        } catch let error as IOError where error.kind == .notFound {
            return false
        } catch let error as IOError {
            throw PageLogError.io(error)
        }
        if names.contains(StoreFileNames.superblock) { return true }
        try checkNoStore(directory: directory, fileSystem: fileSystem, segmentIDs: names.compactMap(StoreFileNames.segmentID).sorted())
        return false
    }

    /// Checks that a folder without a superblock holds no store: no segment file (`segmentIDs`),
    /// or only segment 1 no longer than a new store's — creation writes segment 1 (header and
    /// empty checkpoint) before the superblock, and a crash in between leaves exactly that.
    /// - Throws: `PageLogError.corruption` for anything more: the superblock was lost.
    static func checkNoStore(directory: String, fileSystem: any FileSystem, segmentIDs: [UInt64]) throws {
        guard !segmentIDs.isEmpty else { return }
        let size = try translatingIOErrors {
            let first = try fileSystem.openForReading(joinPath(directory, StoreFileNames.segment(1)))
            defer { first.close() }
            return try first.size()
        }
        guard segmentIDs == [1], size <= UInt64(creationSegmentSize) else {
            throw PageLogError.corruption(file: joinPath(directory, StoreFileNames.superblock), offset: 0,
                                          reason: "the superblock file is missing but the folder holds \(segmentIDs.count) segment file(s)")
        }
    }

    /// Size of segment 1 right after creation: header + the empty checkpoint root.
    static var creationSegmentSize: Int {
        SegmentHeader.size + FrameHeader.alignedLength(FrameHeader.size + initialRoot.encoded().count)
    }

    static let initialLSN: UInt64 = 1

    static var initialRoot: CheckpointRoot {
        CheckpointRoot(lsn: initialLSN, nextPageID: firstAllocatablePageID, chunkEntries: UInt32(PageTable.chunkEntries), chunks: [],
                       segments: [.init(segmentID: 1, totalBytes: UInt64(SegmentHeader.size), liveBytes: 0)])
    }

    /// Writes a new, empty store: segment 1 with an empty checkpoint, then the superblock
    /// (under a temporary name, synced, renamed, directory synced).
    private static func createStore(directory: String, fileSystem: any FileSystem) throws {
        do {
            let storeID = StoreID.random()
            var bytes = SegmentHeader(storeID: storeID, segmentID: 1, previousSegmentID: 0, previousSegmentEnd: 0).encoded()
            let length = initialRoot.encoded().withUnsafeBytes {
                FrameCodec.append(kind: .checkpoint, pageID: 0, lsn: initialLSN, payload: $0, compress: false, to: &bytes)
            }
            try fileSystem.createFileDurably(named: StoreFileNames.segment(1), in: directory, contents: bytes).close()

            let superblock = Superblock(storeID: storeID, epoch: 1, checkpointLSN: initialLSN,
                                        root: FrameAddress(segment: 1, offset: UInt64(SegmentHeader.size), length: UInt32(length)))
            var file = [UInt8](repeating: 0, count: Superblock.fileSize)
            file.replaceSubrange(superblock.slot * Superblock.slotStride..<(superblock.slot * Superblock.slotStride + Superblock.encodedSize),
                                 with: superblock.encoded())
            try fileSystem.createFileDurably(named: StoreFileNames.superblock, in: directory, contents: file).close()
        } catch let error as IOError {
            throw PageLogError.io(error)
        }
    }
}
