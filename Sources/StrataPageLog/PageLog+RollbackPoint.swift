import StrataIO

/// Rollback points (Architecture.md, invariant 26): a layer above can make a long series of
/// commits — each durable, so a crash keeps them — and still undo all of them, leaving every
/// file of the store as it was, byte for byte. It takes the log's end before the first of them
/// (`PageLogTransaction.startPosition`), keeps it durably in data of its own, and holds
/// checkpoints (`checkpointsHeld`) until it is done, so the superblock, the page table chunks
/// and every byte before that end stay untouched; only appends happen. Undoing is then
/// cutting the log back: `rollBack(directory:fileSystem:to:)` on the closed store.
extension PageLog {
    /// Cuts the log of the closed store in `directory` back to `position`: segments after
    /// `position.segment` are deleted (newest first), that segment is truncated to
    /// `position.offset` and synced, then the folder is synced. Opening the store afterwards
    /// recovers the state it had at `position`.
    ///
    /// Safe to repeat after a crash part-way (each step only removes appended bytes). The
    /// caller must hold the store's lock or know no instance has it open.
    ///
    /// - Throws: `PageLogError.corruption` when the segment `position` names is missing or
    ///   shorter than `position.offset` (the rollback point is not one of this log);
    ///   `PageLogError.io`.
    package static func rollBack(directory: String, fileSystem: any FileSystem, to position: LogPosition) throws {
        do {
            let names = try fileSystem.contentsOfDirectory(directory)
            let later = names.compactMap(StoreFileNames.segmentID).filter { $0 > position.segment }.sorted(by: >)
            for id in later { try fileSystem.removeFile(joinPath(directory, StoreFileNames.segment(id))) }
            let name = StoreFileNames.segment(position.segment)
            guard names.contains(name) else {
                throw PageLogError.corruption(file: name, offset: position.offset, reason: "the rollback point's segment is missing")
            }
            let file = try fileSystem.openFile(joinPath(directory, name), create: false)
            defer { file.close() }
            let size = try file.size()
            guard size >= position.offset else {
                throw PageLogError.corruption(file: name, offset: size,
                                              reason: "the segment ends before the rollback point at offset \(position.offset)")
            }
            if size > position.offset {
                try file.truncate(to: position.offset)
                try file.sync()
            }
            try fileSystem.syncDirectory(directory)
        } catch let error as IOError {
            throw PageLogError.io(error)
        }
    }
}
