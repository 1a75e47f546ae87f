import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataHistory
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema

/// What a migration needs from the store that runs it beyond its records, and the one thing
/// this layer cannot do itself: run a custom stage's `willMigrate` and `didMigrate`, whose
/// closures take the facade's `Context`. The facade implements it (Store+Migration.swift), so
/// the closures reach the store through this protocol and the migration layer never sees
/// the public API above it.
package protocol MigrationHost {
    /// A session on `records` bound to `schema` in which a stage's closure runs, every commit
    /// durable. Called outside the closure's failure category: a session that cannot be made
    /// is a storage failure.
    func stageSession(records: RecordStore, schema: Schema) throws -> any MigrationStageSession
    /// Hands out a read-only view of the stage's old version while it streams, when the app
    /// asked for one (`Store.Configuration.migrationOldVersion`); returns what retires the
    /// view (its reads then fail), or nil when none was handed out.
    func handOutOldVersion(records: RecordStore, schema: Schema) throws -> (() -> Void)?
    /// For a dry run: the time per record of what a `didMigrate` loop does with a context
    /// (`enumerate`, decode as `type`, `update`, `save()`) on each of `runs`, copied into a
    /// scratch store bound to `target` (`binding` decodes the runs' bytes).
    func backfillTimes(of type: any PersistentRecord.Type, runs: [[(id: UInt64, bytes: [UInt8])]], binding: SchemaBinding,
                       target: Schema) throws -> [Duration]
}

/// Where a custom stage's closure runs (`MigrationHost.stageSession`).
package protocol MigrationStageSession {
    /// Runs the plan's stage `stageIndex`'s closure for `phase`, when it has one, then saves
    /// what it left unsaved together with `finishing`'s changes in one commit. A closure that
    /// throws has its flushed changes' commit finished before this throws (the undo follows).
    func run(_ phase: StageClosurePhase, ofStage stageIndex: Int, finishing: @escaping (RecordTransaction) throws -> Void) throws
}

/// Which closure of a custom stage.
package enum StageClosurePhase: Sendable {
    /// Before the schema change, on the old version.
    case willMigrate
    /// After it, on the new version.
    case didMigrate
}

/// The settings a migration runs with: the part of the store's configuration it reads.
package struct MigrationSettings: Sendable {
    /// The store is opened read-only (no migration runs; a newer lightweight store is read).
    package var isReadOnly: Bool
    /// This process may migrate the store.
    package var isMigrationOwner: Bool
    /// Called with the migration's progress on the opening thread.
    package var progress: (@Sendable (MigrationProgress) -> Void)?
    /// How the page log is opened again after an undo.
    package var pageLogOptions: PageLogOptions
    /// The record trees' options.
    package var recordTreeOptions: RecordTreeOptions
    /// The cache budget of a reopened record store.
    package var cacheBytes: Int
    /// How the migration's transactions are journaled.
    package var journaling: HistoryJournaling

    /// Settings from each value.
    package init(isReadOnly: Bool, isMigrationOwner: Bool, progress: (@Sendable (MigrationProgress) -> Void)?, pageLogOptions: PageLogOptions,
                 recordTreeOptions: RecordTreeOptions, cacheBytes: Int, journaling: HistoryJournaling) {
        self.isReadOnly = isReadOnly
        self.isMigrationOwner = isMigrationOwner
        self.progress = progress
        self.pageLogOptions = pageLogOptions
        self.recordTreeOptions = recordTreeOptions
        self.cacheBytes = cacheBytes
        self.journaling = journaling
    }
}
