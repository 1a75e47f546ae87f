import StrataPageLog

extension RecordStore {
    /// A record snapshot on `snapshot` — a follower's newest table (Architecture.md, "Reader
    /// processes") — with its store root read (`pread`) and decoded. Unlike `snapshot()`, it
    /// leaves the decoded-root cache alone: a reader may decline this root (a migration's), and
    /// a cut-back log can give a later root the same LSN.
    /// - Throws: `RecordTreeError.corruptNode` for a store root that does not decode; storage errors.
    package func snapshot(on snapshot: Snapshot) throws -> RecordSnapshot {
        let root = try Self.root(snapshot.read(StoreRoot.pageID, mapped: false), pageID: StoreRoot.pageID)
        return RecordSnapshot(snapshot: snapshot, root: root, cache: cache)
    }
}
