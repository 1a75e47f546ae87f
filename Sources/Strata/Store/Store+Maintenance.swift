import StrataPageLog
import StrataRecords

extension Store {
    /// Writes a checkpoint now (the changed page table chunks, a checkpoint root, the other
    /// superblock slot), as commits do every ``StorageOptions/checkpointInterval`` bytes of log
    /// and `close()` does, so the next open replays less. Does nothing while a migration holds
    /// checkpoints (Architecture.md, invariant 26).
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

    /// Compacts now, in the calling thread: first compresses the records a migration left
    /// uncompressed (``StorageOptions/defersMigrationCompression``) when its background pass
    /// has not finished, then moves the live pages out of the emptiest sealed segments until
    /// the log is at most 1.5 times the live data, checkpoints twice and deletes the emptied
    /// segments no open snapshot still reads (Docs/Architecture.md, "Compaction"). Automatic
    /// compaction (``StorageOptions/automaticCompaction``) does the same in the background
    /// after commits; an app that turns it off calls this when it suits it (in the background,
    /// at a quiet moment). Readers keep reading meanwhile; writers wait.
    /// - Throws: ``StrataError/readOnly``, `.poisoned`, `.closed`, `.corruption`, `.io`.
    public func compact() throws {
        try checkWritable()
        try translatingErrors {
            try records.compressUncompressedLeaves()
            _ = try records.log.compact()
        }
    }

    /// ``compact()`` on a thread of its own while the calling task is suspended.
    /// - Throws: as ``compact()``.
    public func compact() async throws {
        try await runOffTheCooperativePool { try self.compact() }
    }
}

extension Store {
    /// The entities whose record trees may still hold leaves a migration stored uncompressed
    /// (``StorageOptions/defersMigrationCompression``), by name, ascending: empty once the
    /// background pass (or ``compact()``) is done. For tests and diagnostics.
    package func entitiesAwaitingCompression() throws -> [String] {
        let snapshot = try snapshot()
        return snapshot.root.entitiesWithUncompressedLeaves.map(entityName).sorted()
    }

    /// How many leaves each entity's record tree has and how many are stored uncompressed, by
    /// entity name (a walk of every tree under the writer's lock). For tests and diagnostics.
    package func leafStorage() throws -> [String: (leaves: Int, uncompressed: Int)] {
        try checkWritable()
        let storage = try translatingErrors { try records.leafStorage() }
        return Dictionary(uniqueKeysWithValues: storage.map { (entityName($0.key), $0.value) })
    }

    /// Runs the deferred compression pass to its end on the calling thread (as the background
    /// pass does), `leavesPerCommit` leaves a commit. For tests.
    package func compressDeferredLeaves(leavesPerCommit: Int = RecordStore.leavesCompressedPerCommit) throws {
        try checkWritable()
        try translatingErrors { try records.compressUncompressedLeaves(maximumLeavesPerCommit: leavesPerCommit) }
    }

    /// An entity's name in the bound version, else in the newest version that has it (as the
    /// history journal names entities).
    private func entityName(_ entityID: UInt32) -> String {
        (binding.version.entity(id: entityID) ?? binding.catalog.versions.last { $0.entity(id: entityID) != nil }?.entity(id: entityID))?.name
            ?? "#\(entityID)"
    }
}
