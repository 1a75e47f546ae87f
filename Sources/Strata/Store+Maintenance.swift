import StrataPageLog

extension Store {
    /// Writes a checkpoint now (the changed page table chunks, a checkpoint root, the other
    /// superblock slot), as commits do every ``StorageOptions/checkpointInterval`` bytes of log
    /// and `close()` does, so the next open replays less. Does nothing while a migration holds
    /// checkpoints (Architecture.md, invariant 22).
    /// - Throws: ``StrataError/readOnly``, `.poisoned`, `.closed`, `.io`.
    public func checkpoint() throws {
        try checkWritable()
        try translatingErrors { try records.log.checkpoint() }
    }

    /// ``checkpoint()`` on a thread of its own while the calling task is suspended.
    /// - Throws: as ``checkpoint()``.
    public func checkpoint() async throws {
        try await runOffTheCooperativePool { try self.checkpoint() }
    }

    /// Compacts now, in the calling thread: moves the live pages out of the emptiest sealed
    /// segments until the log is at most 1.5 times the live data, checkpoints twice and
    /// deletes the emptied segments no open snapshot still reads (Docs/Architecture.md,
    /// "Compaction"). Automatic compaction (``StorageOptions/automaticCompaction``) does the
    /// same in the background after commits; an app that turns it off calls this when it
    /// suits it (in the background, at a quiet moment). Readers keep reading meanwhile;
    /// writers wait.
    /// - Throws: ``StrataError/readOnly``, `.poisoned`, `.closed`, `.corruption`, `.io`.
    public func compact() throws {
        try checkWritable()
        try translatingErrors { _ = try records.log.compact() }
    }

    /// ``compact()`` on a thread of its own while the calling task is suspended.
    /// - Throws: as ``compact()``.
    public func compact() async throws {
        try await runOffTheCooperativePool { try self.compact() }
    }
}
