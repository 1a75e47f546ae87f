#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import StrataFormat
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataHistory
import StrataMigration

/// A store folder opened with a schema: the entry point of Strata's record API (SwiftData's
/// `ModelContainer`). Changes are made through a `Context`.
///
/// Opening binds the app's schema to the store's catalog. A schema the store has not seen is
/// registered as a new version when every difference is lightweight (an attribute added with
/// a default or as optional, removed, or renamed through `originalName`; an entity added,
/// removed or renamed; …) — which rewrites no record, whatever the store's size. Any other
/// difference throws `StrataError.schemaMismatch` listing each one, and the store is left as
/// it was.
///
/// Thread-safe: share one `Store` between threads; give each thread or task its own `Context`.
public final class Store: Sendable {
    /// How a store is opened.
    public struct Configuration: Sendable {
        /// When `Context.save()` returns: `.durable` (synced) by default, or `.relaxed`
        /// (crash-consistent, may lose the last saves on power loss).
        public var durability: Durability = .durable
        /// Storage tuning (segment size, checkpoint interval, compression, compaction).
        public var storage = StorageOptions()
        /// The memory budget of the shared cache of verified record pages (default 32 MiB).
        public var cacheBytes = 32 << 20
        /// The most threads a fetch that scans many records uses, the calling thread included
        /// (default: the processors this process may run on, at most 4; on Linux its CPU
        /// affinity, so on one CPU scans stay on the calling thread). A fetch with a predicate that reads a
        /// large tree whole lets them read, verify, decompress and pre-filter its pages in
        /// parallel; records still come out in id order and the predicate's final evaluation
        /// runs on the calling thread. 1 keeps every scan on the calling thread.
        public var scanThreads = min(4, Processors.usable)
        /// Whether this process migrates the store when the app's schema needs it (the
        /// default). Set it to false in widgets, extensions and helper processes: opening a store
        /// that needs a migration — or has one in progress — then throws
        /// `StrataError.migrationRequired` at once and changes nothing, leaving the migration to
        /// the app.
        public var isMigrationOwner = true
        /// Opens without writing anything: no migration, no schema registration, and every
        /// save or write throws `StrataError.readOnly`. It takes no lock either: the store opens
        /// while another process (or instance) writes it, and every read sees that writer's
        /// latest commit (`Store.refresh()`, Docs/Architecture.md "Reader processes"). A store
        /// written by a newer version of the app, whose changes since this app's version were all
        /// lightweight, opens through this app's version (its records read as this version's
        /// types) instead of throwing `storeIsNewer`. It creates no store: a folder holding none
        /// throws `StrataError.storeNotFound`; one this process may not read throws `.io`
        /// (permission denied), one whose superblock file was lost `.corruption`, as a
        /// writable open does.
        public var isReadOnly = false
        /// Called with the progress of a migration opening runs (see `MigrationProgress`), on
        /// the opening thread; keep it short. `Store.opening(…)` delivers the same as a stream.
        public var migrationProgress: (@Sendable (MigrationProgress) -> Void)?
        /// Called when a stage that rewrites records starts streaming, with a read-only store
        /// on the stage's old version — usable from any thread while the migration runs, so an
        /// app can stay partly usable (show the old data). It needs no closing. At the stage's
        /// switch it is retired: its reads then throw `StrataError.migrationRequired` (reads
        /// begun before go on). `Store.opening(…)` delivers it as `.oldVersionReadable`.
        public var migrationOldVersion: (@Sendable (Store) -> Void)?
        /// The history journal: on by default, keeping 30 days and at most 64 MiB.
        public var history = History()
        /// In a migration stage's `willMigrate` and `didMigrate`: the unsaved changes (records
        /// inserted, updated or deleted) and their encoded bytes past which the context flushes
        /// them into the store in a commit of the migration (Docs/Migrations.md, "Closures on
        /// large stores"), so a closure's memory stays bounded whatever the store's size.
        package var migrationFlushChanges = 10_000
        package var migrationFlushBytes = 8 << 20

        /// The defaults.
        public init() {}
    }

    /// The app's schema, as given when opening.
    public let schema: Schema
    /// How the store was opened.
    public let configuration: Configuration
    /// The records bound to the app's schema, with the engine's state (id counters, unique
    /// attributes, what the journal records): StrataRecords' `BoundRecords`.
    let engine: BoundRecords
    var records: RecordStore { engine.records }

    /// How many times a write transaction took a node an earlier commit wrote instead of
    /// reading its page back (`WrittenNodes`; tests).
    package var writtenNodesReused: Int { records.writtenNodes.hits }
    /// Whether this instance opened the page log (and closes it): false for the read-only view
    /// of the old version a migration hands out while it streams.
    let ownsLog: Bool
    /// Set when that view's version stops being the store's (the migration's switch): its
    /// reads then throw `migrationRequired`.
    let retired = Atomic<Bool>(false)
    /// A read-only store's view of its writer's commits (Store+Follow.swift); nil otherwise.
    let follower: StoreFollower?
    var binding: SchemaBinding { engine.binding }
    /// The bound entities' inheritance families and relationships.
    var model: EntityModel { engine.model }
    /// How many fetches read an index, and how many scanned (per entity tree read).
    let fetchPlans = FetchPlanCounts()

    /// Opens (creating when missing) the store in the folder at `path` for `schema`.
    /// - Throws: `StrataError.schemaMismatch` when the schema differs from the store's in a way
    ///   that needs a migration; `.invalidSchema`; `.locked` when another process or instance
    ///   writes the store; `.corruption`; `.unsupportedFormatVersion`; `.io`.
    public convenience init(at path: String, schema: Schema, configuration: Configuration = Configuration()) throws {
        try self.init(at: path, schema: schema, configuration: configuration, fileSystem: configuration.storage.fileSystem)
    }

    /// Opens the store through `fileSystem` (tests: the in-memory file system that simulates
    /// power loss).
    package convenience init(at path: String, schema: Schema, configuration: Configuration, fileSystem: any FileSystem) throws {
        try self.init(at: path, schema: schema, plan: nil, configuration: configuration, fileSystem: fileSystem)
    }

    /// Opens the store, migrating it along `plan` first (Store+Migration.swift).
    convenience init(at path: String, schema: Schema, plan: MigrationPlanCheck?, stages: [MigrationStage] = [], configuration: Configuration,
                     fileSystem: any FileSystem) throws {
        let records = try Self.openRecords(at: path, schema: schema, plan: plan, stages: stages, configuration: configuration,
                                           fileSystem: fileSystem)
        do {
            try self.init(records: records, schema: schema, configuration: configuration)
        } catch {
            try? records.log.close()
            throw error
        }
        // Leaves a migration stored uncompressed (now, or before a crash or close) are
        // compressed in the background (invariant 29).
        if !configuration.isReadOnly && configuration.storage.compressesDeferredLeavesInBackground {
            records.compressUncompressedLeavesInBackground()
        }
    }

    /// A store on `records` (already open) bound to `schema`; closing on failure is the
    /// caller's. Migration stages use it for the contexts of their closures.
    init(records: RecordStore, schema: Schema, configuration: Configuration, ownsLog: Bool = true) throws {
        self.schema = schema
        self.configuration = configuration
        self.ownsLog = ownsLog
        do {
            let binding = try configuration.isReadOnly ? Self.readOnlyBinding(records, schema: schema)
                                                       : translatingErrors { try records.bind(schema, journal: Self.journaling(configuration).migrationHook) }
            let snapshot = try translatingErrors { try records.snapshot() }
            engine = BoundRecords(records: records, binding: binding, schema: schema, snapshot: snapshot)
            follower = records.log.isFollower ? try StoreFollower(records: records) : nil
        }
    }

    /// Opens the store at `path` for record types, deriving each entity from its type.
    /// - Throws: as `init(at:schema:configuration:)`, and `.invalidSchema` when a type's entity
    ///   cannot be derived.
    public convenience init(at path: String, for types: [any PersistentRecord.Type], version: Schema.Version = Schema.Version(1, 0, 0),
                            configuration: Configuration = Configuration()) throws {
        let schema: Schema
        do { schema = try Schema(version: version, types: types) } catch { throw StrataError.invalidSchema(reason: "\(error)") }
        try self.init(at: path, schema: schema, configuration: configuration)
    }

    /// Frees the memory the store can do without — its cache of decompressed pages — and
    /// returns how many bytes that was. Call it when the system asks the app to use less
    /// memory (a memory warning, moving to the background); reads refill the cache as they
    /// need it. Nothing stored or unsaved is affected.
    @discardableResult
    public func releaseMemory() -> Int {
        records.cache.removeAll()
    }

    /// The bytes of decompressed pages the store caches now (at most about
    /// `Configuration.cacheBytes`).
    public var cachedBytes: Int { records.cache.cachedBytes }

    /// Whether the store was opened read-only (`Configuration.isReadOnly`).
    public var isReadOnly: Bool { configuration.isReadOnly }

    /// Throws `StrataError.readOnly` when the store was opened read-only.
    func checkWritable() throws {
        if configuration.isReadOnly { throw StrataError.readOnly }
    }

    /// The binding of a read-only store: the newest catalog version with the app's shape, used
    /// as it is (nothing registered). A store written by a newer app qualifies when every
    /// change since that version is lightweight.
    /// - Throws: `StrataError.migrationRequired` when no version of the store has the app's
    ///   shape and the store is older; `.storeIsNewer` when it is newer and a change since the
    ///   app's version is not lightweight (or the store never had the app's version).
    static func readOnlyBinding(_ records: RecordStore, schema: Schema) throws -> SchemaBinding {
        guard let catalog = try MigrationRunner.catalog(of: records), let latest = catalog.latest else {
            throw StrataError.migrationRequired(stored: nil, required: schema.version)
        }
        guard let version = catalog.versions.last(where: { $0.checksum == schema.checksum }) else {
            if latest.schemaVersion > schema.version { throw StrataError.storeIsNewer(stored: latest.schemaVersion, current: schema.version) }
            throw StrataError.migrationRequired(stored: latest.schemaVersion, required: schema.version)
        }
        if version.id != latest.id, latest.differences(from: version).contains(where: { !$0.isReadableByOlderVersion }) {
            throw StrataError.storeIsNewer(stored: latest.schemaVersion, current: schema.version)
        }
        return SchemaBinding(catalog: catalog, versionID: version.id, version: version)
    }

    /// Checkpoints and closes the store. Contexts with unsaved changes lose them.
    ///
    /// The read-only view of an old version a migration hands out
    /// (`Configuration.migrationOldVersion`) closes nothing: the migrating store does.
    public func close() throws {
        guard ownsLog else { return }
        // Observers waiting for a commit wake up, read, and end with `StrataError.closed`.
        defer { records.didCommit() }
        try translatingErrors { try records.log.close() }
    }

    /// The latest snapshot, for a read (a read-only store refreshes first: Store+Follow.swift).
    /// - Throws: `StrataError.migrationRequired` once this read-only view of an old version was
    ///   retired by its migration's switch; `.schemaChanged`; storage errors.
    func snapshot() throws -> RecordSnapshot {
        if retired.load(ordering: .acquiring) {
            throw StrataError.migrationRequired(stored: schema.version, required: schema.version)
        }
        if let follower { return try follower.snapshot(records) }
        return try translatingErrors { try records.snapshot() }
    }

    /// The entity id of a record type in the bound schema.
    /// - Throws: `StrataError.unknownEntity`.
    func entityID<Record: PersistentRecord>(of type: Record.Type) throws -> UInt32 {
        try entityID(of: type as any PersistentRecord.Type)
    }

    /// `entityID(of:)` for a type known only at run time.
    func entityID(of type: any PersistentRecord.Type) throws -> UInt32 {
        do { return try binding.entityID(for: type) } catch { throw StrataError.unknownEntity(type.entityName) }
    }

    /// A record from its stored bytes (written under any version of the schema).
    /// - Throws: `StrataError.recordCoding`.
    func decode<Record: PersistentRecord>(_ type: Record.Type, from bytes: UnsafeRawBufferPointer) throws -> Record {
        do { return try binding.decode(type, from: bytes) } catch { throw StrataError.recordCoding(reason: "\(error)") }
    }

    /// `decode(_:from:)` by a session on the entity's layout (`binding.layout(of:)`).
    func decode<Record: PersistentRecord>(_ type: Record.Type, from bytes: UnsafeRawBufferPointer,
                                          session: RecordDecodingSession) throws -> Record {
        do { return try binding.decode(type, from: bytes, session: session) } catch { throw StrataError.recordCoding(reason: "\(error)") }
    }

    /// A predicate compiled into a pre-filter on stored bytes.
    /// - Throws: `StrataError.unknownEntity`.
    func condition<Record: PersistentRecord>(for predicate: Predicate<Record>) throws -> RecordCondition {
        do { return try binding.condition(for: predicate) } catch { throw StrataError.unknownEntity(Record.entityName) }
    }

    /// Runs `body`, turning lower layers' errors into `StrataError`, with entity and attribute
    /// names in unique constraint violations.
    func translating<T>(_ body: () throws -> T) throws -> T {
        try translatingErrors {
            do { return try body() } catch let RecordTreeError.uniqueConstraintViolation(entityID, attributeID, _, existingID) {
                throw uniqueViolation(entityID: entityID, attributeID: attributeID, existing: "record \(existingID)")
            }
        }
    }

    func uniqueViolation(entityID: UInt32, attributeID: UInt32, existing: String) -> StrataError {
        engine.uniqueViolation(entityID: entityID, attributeID: attributeID, existing: existing)
    }
}

/// Counts of the plans fetches used, for tests and diagnostics.
final class FetchPlanCounts: Sendable {
    let indexed = Atomic<Int>(0)
    let scanned = Atomic<Int>(0)
    /// Of the scans, those that read on several threads (`Configuration.scanThreads`).
    let scannedInParallel = Atomic<Int>(0)
}

extension Store {
    /// How many entity trees fetches have read through an index and by a full scan since the
    /// store was opened (for tests and diagnostics).
    @_spi(Engine) public var fetchPlanCounts: (indexed: Int, scanned: Int) {
        (fetchPlans.indexed.load(ordering: .relaxed), fetchPlans.scanned.load(ordering: .relaxed))
    }

    /// How many of those full scans read on several threads (for tests and diagnostics).
    @_spi(Engine) public var parallelScanCount: Int { fetchPlans.scannedInParallel.load(ordering: .relaxed) }

    /// How this store's reads have read records stored in overflow pages since it was opened
    /// (for tests and diagnostics): `chunksRead`, the chunk pages read whole to assemble a
    /// record; `prefixesRead`, the records a filtered scan judged from their first bytes
    /// (read from their first chunk only, nothing assembled).
    @_spi(Engine) public var overflowReadCounts: (chunksRead: Int, prefixesRead: Int) {
        let counts = records.cache.overflowReads
        return (counts.chunksRead.load(ordering: .relaxed), counts.prefixesRead.load(ordering: .relaxed))
    }
}

/// Encodes records one at a time for a context or a write transaction, through an encoding
/// session on the layout of the type last encoded, which reuses its state, buffer and learned
/// field order from record to record: a loop inserting or updating one type allocates one
/// array per record (a new encoder per record made and freed its state and three buffers:
/// about 2,400 instructions of a `store.write` update's 9,200). Not thread-safe: one owner,
/// one thread.
struct RecordEncodings {
    private var last: (type: ObjectIdentifier, entityID: UInt32, session: RecordEncodingSession)?

    /// `record`'s entity id and stored bytes.
    /// - Throws: `StrataError.unknownEntity`, `.recordCoding`.
    mutating func encode<Record: PersistentRecord>(_ record: Record, in store: Store) throws -> (entityID: UInt32, bytes: [UInt8]) {
        let key = ObjectIdentifier(Record.self)
        let encoding: (entityID: UInt32, session: RecordEncodingSession)
        if let last, last.type == key {
            encoding = (last.entityID, last.session)
        } else {
            let entityID = try store.entityID(of: Record.self)
            encoding = (entityID, RecordEncodingSession(layout: store.binding.layout(of: entityID)))
            last = (key, encoding.entityID, encoding.session)
        }
        do {
            return (encoding.entityID, try encoding.session.encode(record))
        } catch {
            throw StrataError.recordCoding(reason: "\(error)")
        }
    }
}
