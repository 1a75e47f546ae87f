import StrataPageLog

extension Store {
    /// Writes a checkpoint now (the changed page table chunks, a checkpoint root, the other
    /// superblock slot), as commits do every `StorageOptions.checkpointInterval` bytes of log
    /// and `close()` does. Does nothing while a migration holds checkpoints (invariant 22).
    /// Engine-level API (`@_spi(Engine) import Strata`), for tools and tests.
    /// - Throws: `StrataError.readOnly`, `.poisoned`, `.closed`, `.io`.
    @_spi(Engine) public func checkpoint() throws {
        try checkWritable()
        try translatingErrors { try records.log.checkpoint() }
    }

    /// Compacts now, in the calling thread: moves the live pages out of the emptiest sealed
    /// segments until the log is at most 1.5 times the live data, checkpoints twice and
    /// deletes the emptied segments no open snapshot still reads (Docs/Architecture.md,
    /// "Compaction"). Automatic compaction does the same in the background. Engine-level API
    /// (`@_spi(Engine) import Strata`), for tools and tests.
    /// - Throws: `StrataError.readOnly`, `.poisoned`, `.closed`, `.corruption`, `.io`.
    @_spi(Engine) public func compact() throws {
        try checkWritable()
        try translatingErrors { _ = try records.log.compact() }
    }
}
