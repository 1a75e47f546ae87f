#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataMigration

/// A store folder read through the schema catalog it carries, without the app's record types:
/// what the `strata` tool (Docs/Tools.md) reports. Opened as a read-only store is — a follower
/// of whatever process writes the store (`PageLog.open(…, readOnly: true)`): no lock, nothing
/// created or written, never in the writer's way — and read from one snapshot taken at open,
/// so every figure describes the same commit.
///
/// Thread-safe (immutable after opening); `close()` once done.
package final class StoreInspection: Sendable {
    /// The store folder.
    package let path: String
    let fileSystem: any FileSystem
    let records: RecordStore
    let snapshot: RecordSnapshot

    /// Opens the store at `path` for reading.
    /// - Throws: `StrataError.storeNotFound` when the folder holds no store (nothing is
    ///   created); `.corruption`, `.unsupportedFormatVersion`, `.io` as a read-only open does.
    package init(at path: String, fileSystem: any FileSystem = POSIXFileSystem()) throws {
        guard try translatingErrors({ try PageLog.holdsStore(directory: path, fileSystem: fileSystem) }) else {
            throw StrataError.storeNotFound(path: path)
        }
        self.path = path
        self.fileSystem = fileSystem
        let records = try translatingErrors {
            RecordStore(log: try PageLog.open(directory: path, fileSystem: fileSystem, readOnly: true), cache: NodeCache(budget: 8 << 20))
        }
        do {
            snapshot = try translatingErrors { try records.snapshot() }
        } catch {
            try? records.log.close()
            throw error
        }
        self.records = records
    }

    /// Closes the files (a follower writes nothing at close).
    package func close() {
        try? records.log.close()
    }

    /// The format version of the store's files (its superblock's).
    package var formatVersion: Int { Int(records.log.formatVersion) }

    /// The files of the store folder and their sizes in bytes, by name.
    /// - Throws: `StrataError.io` when the folder cannot be listed.
    package func files() throws -> [(name: String, bytes: UInt64)] {
        let names = try translatingErrors {
            do { return try fileSystem.contentsOfDirectory(path) } catch let error as IOError { throw PageLogError.io(error) }
        }
        return names.sorted().map { name in
            // A file the writer removes meanwhile (a compacted segment) counts as empty.
            let file = try? fileSystem.openForReading(joinPath(path, name))
            defer { file?.close() }
            return (name, (try? file?.size()) ?? 0)
        }
    }

    /// The page log's space: bytes of segment files, bytes of the frames the store's state
    /// refers to (the rest is dead space compaction reclaims), segments, pages, the newest LSN
    /// and the checkpoint epoch.
    package var space: (logBytes: UInt64, liveBytes: UInt64, segments: Int, pages: Int, lastLSN: UInt64, checkpointEpoch: UInt64) {
        let statistics = records.log.statistics
        return (statistics.logBytes, statistics.liveBytes, statistics.segmentCount, statistics.pageCount, statistics.lastLSN,
                statistics.checkpointEpoch)
    }

    /// The stored schema catalog, or nil when the store has none yet.
    /// - Throws: `StrataError.corruption` when it does not decode.
    package func catalog() throws -> SchemaCatalog? {
        try MigrationRunner.catalog(in: snapshot)
    }

    /// One entity's record tree as the store root describes it.
    package struct EntityTree: Sendable, Equatable {
        /// The entity id (the catalog names it).
        package var entityID: UInt32
        /// Records in its tree.
        package var records: UInt64
        /// The next record id its counter hands out.
        package var nextID: UInt64
        /// Whether its tree may hold leaves a migration stored uncompressed (deferred compression pending).
        package var hasUncompressedLeaves: Bool
        /// Its indexes: the attribute id, whether unique, and the entries.
        package var indexes: [(attributeID: UInt32, isUnique: Bool, entries: UInt64)]

        package static func == (a: EntityTree, b: EntityTree) -> Bool {
            a.entityID == b.entityID && a.records == b.records && a.nextID == b.nextID && a.hasUncompressedLeaves == b.hasUncompressedLeaves
                && a.indexes.elementsEqual(b.indexes) { $0 == $1 }
        }
    }

    /// Every entity tree of the store root, by entity id ascending.
    package var entityTrees: [EntityTree] {
        let root = snapshot.root
        return root.entities.sorted { $0.key < $1.key }.map { id, entity in
            EntityTree(entityID: id, records: entity.tree.count, nextID: entity.nextRowID, hasUncompressedLeaves: entity.hasUncompressedLeaves,
                       indexes: root.indexes(of: id).map { ($0.attributeID, $0.index.isUnique, $0.index.tree.count) })
        }
    }

    /// The history journal's extent, or nil when the store has no journal.
    package struct Journal: Sendable, Equatable {
        /// The oldest token kept (`horizon + 1`), and the newest written (`nextToken - 1`);
        /// empty when the newest is below the oldest.
        package var oldestToken: UInt64
        package var newestToken: UInt64
        /// When the oldest kept and the newest entries were written (nil: none).
        package var oldestTimestamp: Date?
        package var newestTimestamp: Date?
        /// The bytes of the entries kept.
        package var bytes: UInt64
        /// Each registered consumer's last-seen token, by name.
        package var consumers: [String: UInt64]
    }

    /// The history journal's extent (nil: no journal).
    package var journal: Journal? {
        guard let history = snapshot.root.history else { return nil }
        func date(_ microseconds: Int64) -> Date? {
            microseconds == 0 ? nil : Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
        }
        return Journal(oldestToken: history.horizon + 1, newestToken: history.nextToken - 1, oldestTimestamp: date(history.firstTimestamp),
                       newestTimestamp: date(history.lastTimestamp), bytes: history.bytes, consumers: history.consumers)
    }

    /// An interrupted or running migration, as its marker in the store root says.
    package struct Migration: Sendable, Equatable {
        /// The plan step it is at (0 = the first).
        package var stage: Int
        /// `started`, `streaming` or `switched` (Docs/Migrations.md).
        package var phase: String
        /// The catalog version the migration started from.
        package var fromCatalogVersion: UInt32
        /// Whether a closure of the stage flushed changes (the migration is undone, not resumed).
        package var closureFlushed: Bool
    }

    /// The migration in progress, or nil.
    package var migration: Migration? {
        snapshot.root.migration.map { marker in
            let phase = switch marker.phase {
            case .started: "started"
            case .streaming: "streaming"
            case .switched: "switched"
            }
            return Migration(stage: Int(marker.stage), phase: phase, fromCatalogVersion: marker.fromCatalogVersion,
                             closureFlushed: marker.closureFlushed)
        }
    }

    /// How many records a migration's transforms quarantined (0: none), and their bytes.
    /// - Throws: `StrataError.corruption` when the quarantine's root or tree is damaged.
    package func quarantine() throws -> (records: UInt64, bytes: UInt64) {
        let entries = try translatingErrors { try snapshot.quarantineEntries() }
        return (UInt64(entries.count), entries.reduce(0) { $0 + UInt64($1.bytes.count) })
    }

    /// Backs the store up to a new store folder at `path` as `Store.backup(to:verification:progress:)` does
    /// from a read-only store: without blocking the process that writes it.
    /// - Throws: as `Store.backup(to:verification:progress:)`.
    package func backup(to path: String, verification: BackupVerification = .frames,
                        progress: ((BackupProgress) -> Void)? = nil) throws -> BackupReport {
        try StoreBackup.run(records.log, to: path, verification: verification, progress: progress)
    }

    /// Checks the store's superblock, log ends and page frames only (a backup's `.frames`).
    package func verifyFrames() -> VerificationReport {
        VerificationReport(checkingFramesOf: snapshot, of: records)
    }

    /// Checks the whole store as `Store.verify()` does; `progress` is called with the pages
    /// read so far (of `space.pages`) while frames are read.
    package func verify(progress: ((Int) -> Void)? = nil) -> VerificationReport {
        VerificationReport(checking: snapshot, of: records, progress: progress)
    }

    /// Calls `body` with every record of `entityID`'s tree in id order — its id and its stored
    /// values by property id — until it returns false. The tree is checked as it is read, as
    /// `verify` checks it: each leaf's ids within the range its parents give it, ids ascending,
    /// and — when the scan reaches the end — as many records as the store root counts
    /// (FileFormat.md, "Record trees"), so a dump or an export never writes a damaged tree's
    /// records as if they were whole.
    /// - Throws: `StrataError.corruption` for a record that does not decode (naming its entity
    ///   id and record id), a tree that breaks those rules or is damaged; what `body` throws.
    package func scan(entity entityID: UInt32, _ body: (UInt64, [UInt32: Value]) throws -> Bool) throws {
        let entity = snapshot.root.entities[entityID]
        let file = "record tree of entity \(entityID)"
        var outside: String?
        let ranges = { (pageID: UInt64, first: UInt64, last: UInt64, low: UInt64, high: UInt64?) in
            guard outside == nil, first < low || high.map({ last >= $0 }) ?? false else { return }
            outside = "leaf \(pageID) holds records \(first)–\(last), outside the range its parents give it "
                + "(\(low) up to \(high.map(String.init) ?? "the end"))"
        }
        var count: UInt64 = 0
        var previous: UInt64?
        var stopped = false
        try translatingErrors {
            try snapshot.reader(for: entityID).scanRuns(from: 0, mapped: true, leafRanges: ranges) { run in
                if let outside { throw StrataError.corruption(file: file, offset: 0, reason: outside) }
                for index in 0..<run.count {
                    let id = run.id(index)
                    if let previous, id <= previous {
                        throw StrataError.corruption(file: file, offset: 0, reason: "record \(id) follows record \(previous)")
                    }
                    previous = id
                    count += 1
                    let values: [UInt32: Value]
                    do { values = try RecordCodec.decode(run.bytes(index)) } catch let error as FormatError {
                        throw StrataError.corruption(file: file, offset: 0, reason: "record \(id) does not decode: \(error.reason)")
                    }
                    if try !body(id, values) {
                        stopped = true
                        return false
                    }
                }
                return true
            }
        }
        if let outside { throw StrataError.corruption(file: file, offset: 0, reason: outside) }
        guard !stopped, let entity else { return }
        if count != entity.tree.count {
            throw StrataError.corruption(file: file, offset: 0, reason: "the tree holds \(count) records, the store root says \(entity.tree.count)")
        }
    }
}

extension StoreInspection {
    /// Opens the store at `path` for writing — taking its lock, through the stored catalog, no
    /// schema bound — runs `body` on it and closes it (which checkpoints).
    /// - Throws: `StrataError.storeNotFound` (nothing is created); `.locked` when another
    ///   process or instance has the store open for writing;
    ///   `StoreInspectionError.migrationInProgress` when a migration was interrupted (only the
    ///   app that runs it may write the store until it is done); what opening and `body` throw.
    static func withWritableStore<T>(at path: String, fileSystem: any FileSystem, _ body: (RecordStore) throws -> T) throws -> T {
        guard try translatingErrors({ try PageLog.holdsStore(directory: path, fileSystem: fileSystem) }) else {
            throw StrataError.storeNotFound(path: path)
        }
        let records = try translatingErrors { RecordStore(log: try PageLog.open(directory: path, fileSystem: fileSystem)) }
        do {
            try refuseMigratingStore(records)
            let result = try body(records)
            try translatingErrors { try records.log.close() }
            return result
        } catch {
            try? records.log.close()
            throw error
        }
    }

    /// Throws `StoreInspectionError.migrationInProgress` when the store root holds a migration
    /// marker. The snapshot it reads is released on return: an open snapshot would keep
    /// compaction from deleting the segments it reads.
    private static func refuseMigratingStore(_ records: RecordStore) throws {
        let snapshot = try translatingErrors { try records.snapshot() }
        if let marker = snapshot.root.migration {
            let stored = try MigrationRunner.catalog(in: snapshot)?.version(id: marker.fromCatalogVersion)?.schemaVersion
            throw StoreInspectionError.migrationInProgress(from: stored)
        }
    }

    /// Writes a checkpoint of the store at `path` (as `Store.checkpoint()` does), with the
    /// store opened for writing only for the call.
    /// - Throws: as `withWritableStore`; `.io`.
    package static func checkpoint(at path: String, fileSystem: any FileSystem = POSIXFileSystem()) throws {
        try withWritableStore(at: path, fileSystem: fileSystem) { records in
            try translatingErrors { try records.log.checkpoint() }
        }
    }

    /// Compacts the store at `path` as `Store.compact()` does, with the store opened for
    /// writing only for the call. Returns the bytes of segment files before and after.
    /// `progress` is called with the fraction of the excess log bytes reclaimed so far.
    /// - Throws: as `withWritableStore`; `.corruption`, `.io`.
    package static func compact(at path: String, fileSystem: any FileSystem = POSIXFileSystem(),
                                progress: ((Double) -> Void)? = nil) throws -> (before: UInt64, after: UInt64) {
        try withWritableStore(at: path, fileSystem: fileSystem) { records in
            let before = records.log.statistics.logBytes
            try translatingErrors {
                try records.compressUncompressedLeaves()
                _ = try records.log.compact(progress: progress)
            }
            return (before, records.log.statistics.logBytes)
        }
    }
}

/// Why the `strata` tool's maintenance refuses a store it could open.
package enum StoreInspectionError: Error, Equatable, CustomStringConvertible {
    /// A migration from schema version `from` was interrupted: until the app that runs it
    /// finishes (or undoes) it, checkpoints are held (Architecture.md, invariant 26) and nothing
    /// else may write the store.
    case migrationInProgress(from: Schema.Version?)

    package var description: String {
        switch self {
        case .migrationInProgress(let from):
            "a migration\(from.map { " from schema version \($0)" } ?? "") is in progress; "
                + "open the store with the app that migrates it to finish it first"
        }
    }
}

extension VerificationReport.Problem {
    /// A problem found outside `Store.verify()` (the `strata` tool reports damage that stops a
    /// store opening as one).
    package static func found(file: String, offset: UInt64?, what: String) -> Self {
        Self(file: file, offset: offset, what: what)
    }
}
