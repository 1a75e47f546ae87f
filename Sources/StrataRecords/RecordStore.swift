import Synchronization
import StrataFormat
import StrataIO
import StrataPageLog
import StrataSchema

/// The record layer's engine: one record tree per entity and the schema catalog's bytes,
/// in one page log, changed together atomically. The public store API sits on it.
/// Thread-safe: writes serialize on the page log's writer; reads use snapshots.
package final class RecordStore: Sendable {
    package let log: PageLog
    package let cache: NodeCache
    package let treeOptions: RecordTreeOptions
    /// The nodes the latest commits wrote, which the next write transactions change without
    /// reading them back (small commits, one after another, change the same leaves).
    package let writtenNodes = WrittenNodes()
    /// The last decoded store root and the LSN of the page image it came from: a snapshot
    /// whose page 0 has that LSN reuses it instead of reading and decoding page 0 again.
    private let decodedRoot = Lock<(lsn: UInt64, root: StoreRoot)?>(nil)
    /// Counts this instance's commits and holds the tasks waiting for the next one.
    private let commits = Lock(CommitWaiters())
    /// Whether a deferred compression pass was started in the background; the lock a pass
    /// holds while it runs, around where the next one goes on from (an entity and the id its
    /// next batch starts at) (DeferredCompression.swift).
    let compressionPassRunning = Atomic<Bool>(false)
    let compressionPass = Lock<(entityID: UInt32, next: UInt64)?>(nil)

    private struct CommitWaiters {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    /// A record store on `log`. When its root holds a migration marker (a migration was
    /// interrupted), checkpoints are held at once, so nothing — not even closing — writes
    /// before the rollback point is used (invariant 26).
    package init(log: PageLog, cache: NodeCache = NodeCache(), treeOptions: RecordTreeOptions = RecordTreeOptions()) {
        self.log = log
        self.cache = cache
        self.treeOptions = treeOptions
        if let snapshot = try? log.snapshot(), let page = try? snapshot.read(StoreRoot.pageID),
           (try? StoreRoot.decode(page.bytes))?.migration != nil {
            log.checkpointsHeld.store(true, ordering: .releasing)
        }
    }

    /// A consistent view of every entity as of the latest commit.
    package func snapshot() throws -> RecordSnapshot {
        let snapshot = try log.snapshot()
        let lsn = try snapshot.location(of: StoreRoot.pageID).lsn
        if let cached = decodedRoot.withLock({ $0 }), cached.lsn == lsn {
            return RecordSnapshot(snapshot: snapshot, root: cached.root, cache: cache)
        }
        // Read with pread: each commit writes the root anew at the log's end, and a fault on
        // the map there would also map the recently written pages around it (fault-around).
        let root = try Self.root(snapshot.read(StoreRoot.pageID, mapped: false), pageID: StoreRoot.pageID)
        decodedRoot.withLock { $0 = (lsn, root) }
        return RecordSnapshot(snapshot: snapshot, root: root, cache: cache)
    }

    /// Runs `body` as one atomic transaction over any number of entities.
    package func write<T>(durability: Durability = .durable, _ body: (RecordTransaction) throws -> T) throws -> T {
        let (result, written) = try log.write(durability: durability) { try run(body, in: $0, reusingWritten: true) }
        keep(written)
        didCommit()
        return result
    }

    /// `write`, committed without waiting for durability (`PageLog.writeDeferringSync`):
    /// returns where the commit ends, for `log.sync(upTo:exactly: true)` later.
    package func writeDeferringSync<T>(_ body: (RecordTransaction) throws -> T) throws -> (result: T, commitEnd: LogPosition?) {
        let ((result, written), commitEnd) = try log.writeDeferringSync { try run(body, in: $0, reusingWritten: true) }
        keep(written)
        didCommit()
        return (result, commitEnd)
    }

    /// What a write transaction wrote that the next ones may reuse once it committed: its
    /// LSN, the store root when it wrote one, and the last nodes its trees wrote.
    struct Written {
        var lsn: UInt64
        var root: StoreRoot?
        var nodes: [(pageID: UInt64, image: WrittenNodes.Image)]
    }

    /// After a commit: its root becomes the decoded root (of its LSN), its nodes join
    /// `writtenNodes`.
    private func keep(_ written: Written?) {
        guard let written else { return }
        if let root = written.root { decodedRoot.withLock { $0 = (written.lsn, root) } }
        writtenNodes.keep(written.nodes, lsn: written.lsn)
    }

    /// `body` on a record transaction over `transaction`, whose root it writes when done. With
    /// `reusingWritten`, the root is the decoded one when its LSN is the root page's (no read),
    /// the transaction's trees start from `writtenNodes`, and what it wrote is returned
    /// (`written`) for `keep` once it committed.
    func run<T>(_ body: (RecordTransaction) throws -> T, in transaction: PageLogTransaction,
                reusingWritten: Bool = false) throws -> (result: T, written: Written?) {
        let root: StoreRoot
        if reusingWritten, let lsn = try transaction.currentLSN(of: StoreRoot.pageID),
           let decoded = decodedRoot.withLock({ $0 }), decoded.lsn == lsn {
            root = decoded.root
        } else {
            root = try Self.root(transaction.read(StoreRoot.pageID, mapped: false), pageID: StoreRoot.pageID)
        }
        let records = RecordTransaction(transaction: transaction, root: root, options: treeOptions,
                                        writtenNodes: reusingWritten ? writtenNodes : nil)
        do {
            let result = try body(records)
            try records.finish()
            guard reusingWritten else { return (result, nil) }
            let lsn = transaction.lsn
            let root = try transaction.currentLSN(of: StoreRoot.pageID) == lsn ? records.root : nil
            return (result, Written(lsn: lsn, root: root, nodes: records.writtenImages))
        } catch PageLogError.invalidPageID(let pageID) where pageID != PageLog.maximumPageID {
            // Every page a record transaction writes or frees was allocated by it or read from
            // the store's structures (a tree's children, an overflowed record's chunks, a retired
            // tree): a page id never allocated came from damaged bytes, below the id space's end
            // or beyond it. (At the end, allocating throws `invalidPageID` with exactly the
            // maximum: left as it is.)
            throw RecordTreeError.corruptNode(pageID: pageID, reason: "the store refers to page \(pageID), which was never allocated")
        }
    }

    /// How many write transactions this instance committed (or found committed by another
    /// process, once published); observers compare it before and after waiting.
    package var commitGeneration: UInt64 { commits.withLock { $0.generation } }

    /// Wakes every task waiting in `waitForCommit` (after a commit was published).
    package func didCommit() {
        let waiters = commits.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters.values { waiter.resume() }
    }

    /// Returns once `commitGeneration` is past `generation`, or when the calling task is
    /// cancelled.
    package func waitForCommit(after generation: UInt64) async {
        let id = commits.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = commits.withLock { state -> Bool in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            commits.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    static func root(_ page: Page?, pageID: UInt64) throws -> StoreRoot {
        guard let page else { return StoreRoot() }
        do { return try StoreRoot.decode(page.bytes) } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: "store root: \(error.reason)")
        }
    }
}

/// A consistent view of all entities' records. Thread-safe.
package struct RecordSnapshot: Sendable {
    package let snapshot: Snapshot
    package let root: StoreRoot
    let cache: NodeCache

    /// The records of one entity.
    package func reader(for entityID: UInt32) -> RecordTreeReader {
        RecordTreeReader(snapshot: snapshot, root: root.entities[entityID]?.tree ?? .empty, cache: cache)
    }

    /// The stored schema catalog's bytes, or nil when none was stored.
    package func catalogBytes() throws -> [UInt8]? {
        guard root.catalogPageID != 0 else { return nil }
        return try snapshot.read(root.catalogPageID)?.bytes
    }
}

/// One write transaction of a `RecordStore`. Not thread-safe; use inside the body only.
package final class RecordTransaction {
    let transaction: PageLogTransaction

    /// Every page this transaction writes goes through the page log's frame pipeline
    /// (`PageLogTransaction.pipelinesEveryPage`): for one that will write many (a migration's
    /// batch). Call before anything is written.
    package func pipelinesEveryPage() { transaction.pipelinesEveryPage() }

    let options: RecordTreeOptions
    // Unchecked: the transaction's thread only, and changed for every record id handed out
    // (`allocateRowID`), where the dynamic checks were 40 % of the call.
    @exclusivity(unchecked) var root: StoreRoot
    // Unchecked: the transaction's thread only, and read on every change (`tree(for:)`).
    @exclusivity(unchecked) var trees: [UInt32: RecordTreeWriter] = [:]
    /// The tree `tree(for:)` returned last: changes to one entity find it without hashing.
    @exclusivity(unchecked) private var lastTree: RecordTreeWriter?
    /// Whether the record trees this transaction opens read their nodes through the memory map
    /// (`RecordTreeWriter.mappedReads`); false for a migration closure's flushes, which read a
    /// whole store once and should not leave it mapped into the process.
    package var mappedReads = true
    /// Page images a reader kept, which this transaction's reads take instead of reading their
    /// frames again (`PageLogTransaction.pageImages`): a migration closure's flush rewrites
    /// the leaves its enumeration just read.
    package var pageImages: PageImages? {
        get { transaction.pageImages }
        set { transaction.pageImages = newValue }
    }
    /// Whether the record trees this transaction opens store the leaves they write
    /// uncompressed, their entities flagged for the background pass that compresses them
    /// (invariant 29) — as a migration's shadow trees do, when the store defers a migration's
    /// compression: set for a migration closure's commits.
    package var defersLeafCompression = false
    /// Shadow trees of the running migration stage, by entity id.
    private var shadowTrees: [UInt32: RecordTreeWriter] = [:]
    private var indexWriters: [StoreRoot.IndexID: IndexTreeWriter] = [:]
    var rootChanged = false
    /// The journal of this transaction's record changes, once `journal(…)` started it.
    package internal(set) var history: HistoryRecorder?
    /// The journal's tree, once this transaction changes it.
    var historyTree: RecordTreeWriter?
    /// How much history may be kept (applied when this transaction journals).
    package var historyLimits = HistoryLimits()

    /// Nodes earlier transactions wrote, for the record trees and the journal's tree this
    /// transaction opens (nil: none).
    let writtenNodes: WrittenNodes?

    init(transaction: PageLogTransaction, root: StoreRoot, options: RecordTreeOptions, writtenNodes: WrittenNodes? = nil) {
        self.transaction = transaction
        self.root = root
        self.options = options
        self.writtenNodes = writtenNodes
    }

    /// The nodes this transaction's record trees and journal wrote, in order (the last ones of
    /// each), for `writtenNodes` once it committed.
    var writtenImages: [(pageID: UInt64, image: WrittenNodes.Image)] {
        var images: [(pageID: UInt64, image: WrittenNodes.Image)] = []
        for (_, tree) in trees.sorted(by: { $0.key < $1.key }) { images += tree.written }
        if let historyTree { images += historyTree.written }
        return images
    }

    /// The record tree of an entity, for reading and changing its records; pages written
    /// carry `schemaVersion` in their header.
    package func tree(for entityID: UInt32, schemaVersion: UInt32) -> RecordTreeWriter {
        if let lastTree, lastTree.entityID == entityID { return lastTree }
        if let tree = trees[entityID] {
            lastTree = tree
            return tree
        }
        var treeOptions = options
        if defersLeafCompression && defersShadowCompression, let entity = root.entities[entityID] {
            // Stored uncompressed, the entity flagged for the background pass (invariant 29).
            treeOptions.compressLeaves = false
            if !entity.hasUncompressedLeaves {
                root.entities[entityID]?.hasUncompressedLeaves = true
                rootChanged = true
            }
        }
        let tree = RecordTreeWriter(transaction: transaction, root: root.entities[entityID]?.tree ?? .empty, entityID: entityID,
                                    schemaVersion: schemaVersion, options: treeOptions)
        tree.mappedReads = mappedReads
        tree.writtenNodes = writtenNodes
        trees[entityID] = tree
        lastTree = tree
        tree.journal = history
        attachIndexes(of: entityID)
        return tree
    }

    /// The writer of an existing index.
    func indexWriter(_ id: StoreRoot.IndexID, schemaVersion: UInt32) -> IndexTreeWriter {
        if let writer = indexWriters[id] { return writer }
        let writer = IndexTreeWriter(transaction: transaction, root: root.indexes[id]?.tree ?? .empty, entityID: id.entityID,
                                     schemaVersion: schemaVersion, options: options)
        indexWriters[id] = writer
        return writer
    }

    func addIndex(_ id: StoreRoot.IndexID, _ index: StoreRoot.Index) {
        root.indexes[id] = index
        rootChanged = true
    }

    func forgetIndex(_ id: StoreRoot.IndexID) {
        root.indexes[id] = nil
        indexWriters[id] = nil
        rootChanged = true
    }

    /// Gives the entity's record tree (if open) its current indexes.
    func attachIndexes(of entityID: UInt32) {
        guard let tree = trees[entityID] else { return }
        let members = root.indexes(of: entityID).map { attributeID, index in
            EntityIndexes.Member(attributeID: attributeID, index: index,
                                 writer: indexWriter(StoreRoot.IndexID(entityID: entityID, attributeID: attributeID),
                                                     schemaVersion: tree.schemaVersion))
        }
        tree.indexes = members.isEmpty ? nil : EntityIndexes(entityID: entityID, members: members)
    }

    /// Hands out the next record id of an entity. The id of a committed record, even a deleted
    /// one, is never handed out again; ids handed out by a transaction that throws may be.
    package func allocateRowID(for entityID: UInt32) -> UInt64 {
        rootChanged = true
        // Changed in place: one lookup of the entity, not a read and a write.
        return Self.takeNextRowID(&root.entities[entityID, default: StoreRoot.EntityTree()])
    }

    private static func takeNextRowID(_ entity: inout StoreRoot.EntityTree) -> UInt64 {
        defer { entity.nextRowID += 1 }
        return entity.nextRowID
    }

    /// Records that `rowID` of an entity is in use (handed out outside this transaction, e.g.
    /// by a context), so it is never handed out again.
    package func reserve(_ rowID: UInt64, for entityID: UInt32) {
        var entity = root.entities[entityID] ?? StoreRoot.EntityTree()
        guard rowID >= entity.nextRowID else { return }
        entity.nextRowID = rowID + 1
        root.entities[entityID] = entity
        rootChanged = true
    }

    /// Keeps an entry for an entity's record tree even while the tree holds no record, its
    /// counter at least `nextRowID` (an import recreating an exported empty tree: a sub-entity
    /// whose records were all deleted keeps its entry, its counter at 1).
    package func keepEntityTree(_ entityID: UInt32, nextRowID: UInt64) {
        var entity = root.entities[entityID] ?? StoreRoot.EntityTree()
        entity.nextRowID = max(entity.nextRowID, nextRowID)
        root.entities[entityID] = entity
        rootChanged = true
    }

    /// Replaces the stored schema catalog.
    package func setCatalog(_ bytes: [UInt8]) throws {
        if root.catalogPageID == 0 {
            root.catalogPageID = try transaction.allocatePageID()
            rootChanged = true
        }
        try transaction.write(root.catalogPageID, bytes: bytes)
    }

    /// The stored schema catalog's bytes as this transaction sees them.
    package func catalogBytes() throws -> [UInt8]? {
        guard root.catalogPageID != 0 else { return nil }
        return try transaction.read(root.catalogPageID)?.bytes
    }

    func finish() throws {
        // The dirty nodes written below, and the root: on this thread (a migration closure's
        // flush, whose leaves are stored uncompressed, keeps the pipeline for the rest).
        if !defersLeafCompression { try transaction.buildsRemainingFramesHere() }
        var recordsChanged = false
        for (entityID, tree) in trees.sorted(by: { $0.key < $1.key }) {
            let treeRoot = try tree.finish()
            var entity = root.entities[entityID] ?? StoreRoot.EntityTree()
            if entity.tree != treeRoot {
                entity.tree = treeRoot
                root.entities[entityID] = entity
                rootChanged = true
            }
            recordsChanged = recordsChanged || tree.changed
        }
        try finishHistory(recordsChanged: recordsChanged)
        for (id, writer) in indexWriters.sorted(by: { $0.key < $1.key }) {
            let treeRoot = try writer.finish()
            guard var index = root.indexes[id] else { continue }
            if index.tree != treeRoot {
                index.tree = treeRoot
                root.indexes[id] = index
                rootChanged = true
            }
        }
        for (entityID, writer) in shadowTrees.sorted(by: { $0.key < $1.key }) {
            let treeRoot = try writer.finish()
            if root.migration?.shadows[entityID]?.tree != treeRoot {
                root.migration?.shadows[entityID]?.tree = treeRoot
                rootChanged = true
            }
        }
        // Invariant 22, checked before anything commits: one entry per record.
        for (id, index) in root.indexes {
            let records = root.entities[id.entityID]?.tree.count ?? 0
            guard index.tree.count == records else {
                throw RecordTreeError.corruptNode(pageID: index.tree.rootPageID, reason:
                    "index (\(id.entityID), \(id.attributeID)) would hold \(index.tree.count) entries for \(records) records")
            }
        }
        if rootChanged { try transaction.write(StoreRoot.pageID, bytes: root.encoded()) }
        // A migration marker holds checkpoints from the commit that writes it (invariant 26).
        transaction.holdCheckpoints(root.migration != nil)
    }

    /// The migration in progress, as this transaction sees it.
    package var migration: MigrationMarker? { root.migration }

    /// Starts a migration: writes its marker, whose rollback point is where the log ended
    /// before this transaction. From this commit on, checkpoints are held until a commit
    /// clears the marker (Architecture.md, invariant 26).
    @discardableResult
    package func beginMigration(fromCatalogVersion: UInt32, stage: UInt32, targetChecksum: [UInt8]) -> MigrationMarker {
        let start = transaction.startPosition
        let marker = MigrationMarker(rollbackSegment: start.segment, rollbackOffset: start.offset,
                                     fromCatalogVersion: fromCatalogVersion, stage: stage, targetChecksum: targetChecksum)
        root.migration = marker
        rootChanged = true
        return marker
    }

    /// Changes the store root (tests).
    func updateRoot(_ change: (inout StoreRoot) -> Void) {
        change(&root)
        rootChanged = true
    }

    /// Changes the marker of the migration in progress (its phase, stage or pending catalog).
    package func updateMigration(_ change: (inout MigrationMarker) throws -> Void) rethrows {
        guard var marker = root.migration else { return }
        try change(&marker)
        root.migration = marker
        rootChanged = true
    }

    /// Ends the migration in progress: its changes become the store's for good.
    package func endMigration() {
        guard root.migration != nil else { return }
        root.migration = nil
        rootChanged = true
    }

    /// Writes `bytes` as the catalog a migration stage goes to (not the store's yet) and
    /// records its page in the marker.
    package func setPendingCatalog(_ bytes: [UInt8]) throws {
        guard var marker = root.migration else { return }
        if marker.pendingCatalogPage == 0 { marker.pendingCatalogPage = try transaction.allocatePageID() }
        try transaction.write(marker.pendingCatalogPage, bytes: bytes)
        root.migration = marker
        rootChanged = true
    }

    /// The pending catalog's bytes, if the running stage wrote one.
    package func pendingCatalogBytes() throws -> [UInt8]? {
        guard let page = root.migration?.pendingCatalogPage, page != 0 else { return nil }
        return try transaction.read(page)?.bytes
    }

    /// Whether shadow trees store their leaves uncompressed for the background pass to
    /// compress (invariant 29): when the option asks for it and the store compresses at all.
    private var defersShadowCompression: Bool {
        options.defersShadowCompression && options.compressLeaves && transaction.compressesPages
    }

    /// The shadow record tree of an entity in the running stage (created empty, its ids
    /// handed out above `nextRowID`, on first use): records written there carry
    /// `schemaVersion` and stay invisible until `switchToShadows`.
    package func shadowTree(for entityID: UInt32, schemaVersion: UInt32) -> RecordTreeWriter {
        if let tree = shadowTrees[entityID] { return tree }
        if root.migration?.shadows[entityID] == nil {
            // Built first: an optional-chained assignment starts its access to `root` before
            // evaluating its right-hand side.
            let shadow = MigrationMarker.Shadow(nextRowID: root.entities[entityID]?.nextRowID ?? 1)
            root.migration?.shadows[entityID] = shadow
            rootChanged = true
        }
        var shadowOptions = options
        if defersShadowCompression { shadowOptions.compressLeaves = false }
        let tree = RecordTreeWriter(transaction: transaction, root: root.migration?.shadows[entityID]?.tree ?? .empty,
                                    entityID: entityID, schemaVersion: schemaVersion, options: shadowOptions)
        tree.mappedReads = false  // a migration's pages should not stay mapped into the process
        shadowTrees[entityID] = tree
        return tree
    }

    /// Makes the running stage's work the store's: each shadow tree replaces its entity's
    /// tree (whose pages, and those of the entity's indexes, are freed), the pending catalog
    /// becomes the store's catalog (the old catalog page is freed), and the indexes of
    /// `version` (the pending catalog's newest version) are built or dropped.
    package func switchToShadows(version: CatalogVersion) throws {
        guard var marker = root.migration else { return }
        for (entityID, writer) in shadowTrees.sorted(by: { $0.key < $1.key }) {
            marker.shadows[entityID]?.tree = try writer.finish()
        }
        shadowTrees.removeAll()
        for (entityID, shadow) in marker.shadows.sorted(by: { $0.key < $1.key }) {
            for (attributeID, _) in root.indexes(of: entityID) {
                try dropIndex(StoreRoot.IndexID(entityID: entityID, attributeID: attributeID))
            }
            // The old tree's pages are freed after the switch, in batches (RetiredTree.swift).
            trees[entityID] = nil
            if lastTree?.entityID == entityID { lastTree = nil }
            var entity = root.entities[entityID] ?? StoreRoot.EntityTree()
            if let retired = try retire(entity.tree) { marker.retired.append(retired) }
            entity.tree = shadow.tree
            entity.hasUncompressedLeaves = defersShadowCompression && shadow.tree.rootPageID != 0
            entity.nextRowID = max(entity.nextRowID, shadow.nextRowID)
            root.entities[entityID] = entity
        }
        marker.shadows = [:]
        if marker.pendingCatalogPage != 0 {
            if root.catalogPageID != 0 { try transaction.free(root.catalogPageID) }
            root.catalogPageID = marker.pendingCatalogPage
            marker.pendingCatalogPage = 0
        }
        root.migration = marker
        rootChanged = true
        try reconcileIndexes(with: version)
    }
}
