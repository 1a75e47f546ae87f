import Synchronization
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataHistory

extension Store {
    /// Brings a read-only store (`Configuration.isReadOnly`) up to the latest commit of the
    /// process that writes it — the app, while this store is opened by its widget, extension or
    /// helper. Reads and fetches do this themselves when they start (`Store.read`, every
    /// `Context` read), so each sees the latest commit made before it began, as an SQLite reader
    /// does; call it to learn whether anything changed: it returns whether the store shows
    /// commits it did not show at the previous call (brought in by this call or by a read
    /// meanwhile). It costs two system calls when nothing changed.
    ///
    /// Existing read transactions keep the moment they started with. While the writer runs a
    /// migration, the store keeps showing the state from before it (a migration's commits may
    /// still be undone); when the migration finishes — or the writer registers any new schema
    /// version — the store's catalog no longer matches this store's binding, and this (and every
    /// read) throws `StrataError.schemaChanged`: close the store and open it again.
    ///
    /// A store that is not read-only sees its own commits at once: this returns false.
    /// - Throws: `StrataError.schemaChanged`; `.corruption`, `.io`, `.closed`.
    @discardableResult
    public func refresh() throws -> Bool {
        guard let follower else { return false }
        return try follower.refresh(records)
    }
}

/// A read-only store's view of its writer's commits (Architecture.md, "Reader processes"): the
/// page log follows the writer (`PageLog.refresh`), and this adopts each newly published table
/// unless its store root carries a migration marker (kept back: a migration's commits can be
/// rolled back) or names another schema catalog than the one the store bound (an error, from
/// then on).
///
/// Record snapshots are built here, not by `RecordStore.snapshot()`, so a declined root never
/// enters the record store's decoded-root cache; the node cache (keyed by page id and LSN)
/// only ever holds pages of adopted states, which no rollback removes (invariant 26).
final class StoreFollower: Sendable {
    private struct State: Sendable {
        /// The snapshot reads get.
        var current: RecordSnapshot
        /// The page log publication last looked at (adopted or declined).
        var publication: UInt64
        /// The catalog the store bound: its page, the LSN of that page's image, its bytes.
        var catalogPageID: UInt64
        var catalogLSN: UInt64
        var catalogBytes: [UInt8]?
        /// Set once the catalog changed: every later read throws it.
        var failure: StrataError?
        /// Snapshots adopted since the store opened, and how many `Store.refresh()` reported.
        var adopted: UInt64 = 0
        var reported: UInt64 = 0
    }

    private let state: Lock<State>

    /// Follows from the page log's current table, the one the store just bound its schema on.
    init(records: RecordStore) throws {
        let current = try translatingErrors { try records.snapshot(on: try records.log.snapshot()) }
        let catalogPageID = current.root.catalogPageID
        state = Lock(State(current: current, publication: current.snapshot.publication, catalogPageID: catalogPageID,
                            catalogLSN: catalogPageID == 0 ? 0 : try translatingErrors { try current.snapshot.location(of: catalogPageID).lsn },
                            catalogBytes: try translatingErrors { try current.catalogBytes() }))
    }

    /// `Store.refresh()`: whether an adopted snapshot was not reported yet.
    func refresh(_ records: RecordStore) throws -> Bool {
        try state.withLock { state in
            _ = try Self.latest(records, &state)
            defer { state.reported = state.adopted }
            return state.adopted != state.reported
        }
    }

    /// The snapshot a read starts from, after a refresh.
    func snapshot(_ records: RecordStore) throws -> RecordSnapshot {
        try state.withLock { try Self.latest(records, &$0) }
    }

    /// Refreshes the page log and returns the snapshot reads should use. Under the state's lock:
    /// two threads never adopt out of order.
    private static func latest(_ records: RecordStore, _ state: inout State) throws -> RecordSnapshot {
        if let failure = state.failure { throw failure }
        return try translatingErrors {
            try records.log.refresh()
            guard records.log.publication != state.publication else { return state.current }
            let snapshot = try records.log.snapshot()
            state.publication = snapshot.publication
            let candidate = try records.snapshot(on: snapshot)
            // A migration in progress: its commits may be rolled back; keep the state before it.
            if candidate.root.migration != nil { return state.current }
            let catalogPageID = candidate.root.catalogPageID
            let catalogLSN = catalogPageID == 0 ? 0 : try translatingErrors { try snapshot.location(of: catalogPageID).lsn }
            if catalogPageID != state.catalogPageID || catalogLSN != state.catalogLSN {
                // Compaction moves the catalog page without changing it: compare its bytes.
                let bytes = try candidate.catalogBytes()
                guard bytes == state.catalogBytes else {
                    let version = bytes.flatMap { try? SchemaCatalog.decode($0) }?.latest?.schemaVersion
                    let failure = StrataError.schemaChanged(stored: version)
                    state.failure = failure
                    throw failure
                }
                state.catalogPageID = catalogPageID
                state.catalogLSN = catalogLSN
            }
            state.current = candidate
            state.adopted += 1
            return candidate
        }
    }
}
