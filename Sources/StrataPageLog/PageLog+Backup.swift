import StrataFormat
import StrataIO

/// Online backup (Docs/Architecture.md, "Backup", invariant 34). A store's files are a
/// superblock, rewritten in place, and segments that only grow by appends (invariant 2) or
/// disappear whole (compaction, invariant 10). So a committed state is pinned by the bytes of
/// the superblock and, per segment, a handle of its own and a length: the bytes before those
/// lengths never change, and a removed file stays readable through a handle opened before
/// (POSIX, and `MemoryFileSystem`). Copying them is then done without any lock, while the
/// writer keeps committing, checkpointing and compacting; the copy is the image a power cut at
/// the pinned instant with every write kept would leave, which recovery opens at that commit.
///
/// - A writer pins under its writer lock — between two transactions, for as long as opening
///   the segment files takes — so the image ends exactly after the last commit frame.
/// - A follower (its writer elsewhere, in this process or another) cannot stop its writer: it
///   reads the superblock first, then lists and opens the segments and takes their sizes. Any
///   slot it read names a checkpoint whose bytes are in the segments opened after it; a
///   transaction the writer is appending at that instant is a torn tail, which recovery of
///   the copy skips. A race its checks cannot rule out (a segment compacted away between the
///   superblock read and the listing, a slot torn by a write in progress, a migration's
///   rollback cutting the log) makes the copy fail its verification; the caller tries again.
package struct LogImage: Sendable {
    /// One segment of the image: its id, a handle of the image's own, and the bytes to copy.
    package struct Segment: Sendable {
        package var id: UInt64
        package var file: any StorageFile
        package var length: UInt64
    }

    /// The superblock file's bytes (both slots) at the pinned instant.
    package let superblock: [UInt8]
    /// The segments, ascending by id.
    package let segments: [Segment]
    /// The LSN of the last commit in the image when the writer pinned it; nil when a follower
    /// did (known once the copy is opened).
    package let lsn: UInt64?

    /// Bytes of the image: the superblock and every segment's length.
    package var byteCount: UInt64 { segments.reduce(UInt64(superblock.count)) { $0 + $1.length } }

    /// Files of the image (the superblock and the segments).
    package var fileCount: Int { segments.count + 1 }

    /// Closes the image's handles.
    package func close() {
        for segment in segments { segment.file.close() }
    }
}

extension PageLog {
    /// The bytes one read and one write of `copyImage` move at most: the copy's memory, whatever
    /// the store's size.
    package static let backupBufferSize = 1 << 20

    /// Pins the latest committed state for copying (see `LogImage`). A writer holds its writer
    /// lock only while it opens the segment files; a follower takes no lock its writer waits on.
    /// Close the image when done.
    /// - Throws: `PageLogError.closed`; `.poisoned` (a writer whose write failed: its files may
    ///   be behind what it holds in memory); `.io`.
    package func pinImage() throws -> LogImage {
        if follower != nil { return try pinFollowerImage() }
        return try writerLock.withLock { _ in
            if shared.withLock({ $0.closed }) { throw PageLogError.closed }
            try checkWritableIgnoringClose()
            // Between transactions every committed frame was handed to the file (`commit`
            // flushes), so the active segment's image ends at its flushed offset.
            let superblock = try PageLog.translatingIOErrors { try writer.superblockFile.read(count: Superblock.fileSize, at: 0) }
            let ids = shared.withLock { $0.segments.keys.sorted() }
            var segments: [LogImage.Segment] = []
            do {
                for id in ids {
                    let file = try PageLog.translatingIOErrors { try fileSystem.openForReading(path(StoreFileNames.segment(id))) }
                    var length = writer.flushedOffset
                    if id != writer.activeSegment { length = try PageLog.translatingIOErrors { try file.size() } }
                    segments.append(LogImage.Segment(id: id, file: file, length: length))
                }
            } catch {
                for segment in segments { segment.file.close() }
                throw error
            }
            return LogImage(superblock: superblock, segments: segments, lsn: writer.lastLSN)
        }
    }

    /// A follower's `pinImage`: the superblock, then the segments listed after it.
    private func pinFollowerImage() throws -> LogImage {
        if shared.withLock({ $0.closed }) { throw PageLogError.closed }
        let superblock = try PageLog.translatingIOErrors {
            let file = try fileSystem.openForReading(path(StoreFileNames.superblock))
            defer { file.close() }
            return try file.read(count: Superblock.fileSize, at: 0)
        }
        var segments: [LogImage.Segment] = []
        do {
            for id in try PageLog.listSegments(directory: directory, fileSystem: fileSystem) {
                let file: any StorageFile
                do {
                    file = try fileSystem.openForReading(path(StoreFileNames.segment(id)))
                } catch let error as IOError where error.kind == .notFound {
                    continue  // compacted away since the listing: the superblock read first needs it no more
                }
                segments.append(LogImage.Segment(id: id, file: file, length: 0))
            }
            // Sizes after every segment is open: each at least what the superblock's slots name.
            for index in segments.indices {
                segments[index].length = try PageLog.translatingIOErrors { try segments[index].file.size() }
            }
        } catch let error as IOError {
            for segment in segments { segment.file.close() }
            throw PageLogError.io(error)
        } catch {
            for segment in segments { segment.file.close() }
            throw error
        }
        return LogImage(superblock: superblock, segments: segments, lsn: nil)
    }

    /// Writes `image` as a store folder at `directory` (created; it must hold no file the copy
    /// writes): the superblock and each segment's first `length` bytes, through a buffer of
    /// `bufferSize` bytes, each file synced, then the folder. `progress` is called with the
    /// bytes written so far, after each piece, ending at `image.byteCount`.
    /// - Throws: `PageLogError.io` (a read of the source or a write of the copy failed);
    ///   `.corruption` when a source segment is shorter than the image says; what `progress`
    ///   throws (to stop).
    package static func copyImage(_ image: LogImage, to directory: String, fileSystem: any FileSystem,
                                  bufferSize: Int = backupBufferSize, progress: (UInt64) throws -> Void) throws {
        try translatingIOErrors {
            try fileSystem.createDirectory(directory)
            var done: UInt64 = 0
            let superblock = try fileSystem.openFile(joinPath(directory, StoreFileNames.superblock), create: true)
            defer { superblock.close() }
            try superblock.truncate(to: 0)
            try superblock.write(image.superblock, at: 0)
            try superblock.sync()
            done += UInt64(image.superblock.count)
            try progress(done)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bufferSize, 1), alignment: 4096)
            defer { buffer.deallocate() }
            for segment in image.segments {
                let copy = try fileSystem.openFile(joinPath(directory, StoreFileNames.segment(segment.id)), create: true)
                defer { copy.close() }
                try copy.truncate(to: 0)
                var offset: UInt64 = 0
                while offset < segment.length {
                    let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(min(UInt64(buffer.count), segment.length - offset))])
                    let read = try segment.file.read(into: piece, at: offset)
                    guard read > 0 else {
                        throw PageLogError.corruption(file: segment.file.path, offset: offset,
                                                      reason: "the segment ends at \(offset), before the \(segment.length) bytes being backed up")
                    }
                    try copy.write(UnsafeRawBufferPointer(rebasing: piece[0..<read]), at: offset)
                    offset += UInt64(read)
                    done += UInt64(read)
                    try progress(done)
                }
                try copy.sync()
            }
            try fileSystem.syncDirectory(directory)
        }
    }
}

/// Where a backup is (`PageLog.backUp`'s progress).
package struct BackupStep: Sendable, Equatable {
    /// Bytes of the image copied so far.
    package var done: UInt64
    /// Bytes of the image.
    package var total: UInt64
    /// Whether the copy is complete and being verified.
    package var verifying: Bool
}

extension PageLog {
    /// Backs the store up into a new store folder at `destination`, while the writer keeps
    /// committing: pins an image (`pinImage`), copies it into the sibling folder
    /// `destination + ".tmp"` (`copyImage`), calls `verify` on that folder, then renames it to
    /// `destination` and syncs the parent folder. Never a half-written destination: on any
    /// failure the temporary folder is removed and `destination` does not exist. A follower's
    /// image that fails verification with corruption — a race with its writer, see `LogImage` —
    /// is copied again, up to `followerLoadAttempts` times.
    ///
    /// Returns the image's bytes and files.
    /// - Throws: `PageLogError.destinationExists` when something is at `destination` (before or
    ///   after the copy); what `pinImage`, `copyImage` and `verify` throw (`verify` throws
    ///   `PageLogError.corruption` for a copy that is not sound).
    package func backUp(to destination: String, progress: (BackupStep) throws -> Void,
                        verify: (_ directory: String, _ fileSystem: any FileSystem) throws -> Void) throws -> (bytes: UInt64, files: Int) {
        let destination = Self.trimmingSlashes(destination)
        let temporary = destination + StoreFileNames.temporarySuffix
        var attempt = 1
        while true {
            var renamed = false
            if fileSystem.fileExists(destination) { throw PageLogError.destinationExists(path: destination) }
            try Self.removeStaleBackup(temporary, fileSystem: fileSystem)
            do {
                let image = try pinImage()
                defer { image.close() }
                let total = image.byteCount
                try Self.copyImage(image, to: temporary, fileSystem: fileSystem) { done in
                    try progress(BackupStep(done: done, total: total, verifying: false))
                }
                try progress(BackupStep(done: total, total: total, verifying: true))
                try verify(temporary, fileSystem)
                if fileSystem.fileExists(destination) { throw PageLogError.destinationExists(path: destination) }
                try Self.translatingIOErrors {
                    try fileSystem.rename(temporary, to: destination)
                    renamed = true
                    try fileSystem.syncDirectory(Self.parentDirectory(of: destination))
                }
                return (total, image.fileCount)
            } catch {
                // In place but its name perhaps not durable (the parent's sync failed): taken back.
                try? Self.removeStaleBackup(renamed ? destination : temporary, fileSystem: fileSystem)
                if attempt < Self.followerLoadAttempts, isFollower, (error as? PageLogError)?.mayComeFromAConcurrentWriter == true {
                    attempt += 1
                    continue
                }
                throw error
            }
        }
    }

    /// Removes the folder of an earlier backup that did not finish (its store files, then the
    /// folder); nothing when there is none.
    /// - Throws: `PageLogError.io` when it holds files a backup does not write (it is not one).
    static func removeStaleBackup(_ directory: String, fileSystem: any FileSystem) throws {
        guard fileSystem.fileExists(directory) else { return }
        try translatingIOErrors {
            for name in try fileSystem.contentsOfDirectory(directory)
            where name == StoreFileNames.superblock || StoreFileNames.segmentID(name) != nil {
                try fileSystem.removeFile(joinPath(directory, name))
            }
            try fileSystem.removeDirectory(directory)
            try fileSystem.syncDirectory(parentDirectory(of: directory))
        }
    }

    /// `path` without trailing slashes ("/" stays).
    static func trimmingSlashes(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// The folder holding `path` ("." for a bare name).
    static func parentDirectory(of path: String) -> String {
        let path = trimmingSlashes(path)
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
