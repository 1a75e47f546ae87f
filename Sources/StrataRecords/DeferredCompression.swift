import Synchronization
import Dispatch
import StrataFormat
import StrataPageLog

// Deferred compression (Docs/Architecture.md, invariant 29). A migration's shadow trees store
// their leaves uncompressed (`RecordTreeOptions.defersShadowCompression`): LZ4 is about a
// quarter of a custom stage's CPU, and the stage runs while the app launches. The switch flags
// each new tree (`StoreRoot.EntityTree.hasUncompressedLeaves`, store root version 5); once the
// store is open, a background pass rewrites every leaf still stored uncompressed, compressed,
// a bounded batch per relaxed commit, and the commit that finishes a tree clears its flag.
//
// Rewriting a page with the bytes it holds changes nothing a reader can see, so the pass needs
// no coordination with the app's transactions beyond the writer's lock each batch takes: a
// leaf the app changed meanwhile is compressed already (only shadow trees defer), one it split
// or merged is found again by its id range. After a crash or a close the pass starts over at
// the next open and skips the leaves stored compressed.

extension RecordTransaction {
    /// One batch of the pass over `entityID`'s tree: the leaves whose id ranges reach
    /// `cursor` or beyond, in id order, at most `maximumLeaves` of them, each written again
    /// compressed when it is stored uncompressed. Returns the cursor the next batch starts
    /// from, or nil when the tree's last leaf was passed: the entity's flag is then cleared.
    package func compressUncompressedLeaves(of entityID: UInt32, from cursor: UInt64, maximumLeaves: Int) throws -> UInt64? {
        guard var entity = root.entities[entityID], entity.hasUncompressedLeaves else { return nil }
        var path = try LeafPath(transaction: transaction, root: entity.tree.rootPageID, cursor: cursor)
        var passed = 0
        while passed < max(1, maximumLeaves), let leaf = path.leaf {
            if let page = try transaction.uncompressedImage(of: leaf) {
                let directoryLength: Int
                do {
                    directoryLength = try page.bytes.withUnsafeBytes { raw in
                        LeafNode.headerSize + (try LeafView.validateHeader(raw)) * LeafNode.entrySize
                    }
                } catch let error as FormatError {
                    throw RecordTreeError.corruptNode(pageID: leaf, reason: error.reason)
                }
                guard directoryLength <= page.bytes.count else {
                    throw RecordTreeError.corruptNode(pageID: leaf, reason: "leaf directory of \(directoryLength) bytes in a \(page.bytes.count)-byte page")
                }
                try transaction.write(leaf, entityID: page.entityID, schemaVersion: page.schemaVersion, bytes: page.bytes,
                                      directoryLength: directoryLength)
            }
            passed += 1
            try path.advance()
        }
        if let next = path.cursor { return next }
        entity.hasUncompressedLeaves = false
        root.entities[entityID] = entity
        rootChanged = true
        return nil
    }
}

/// The way down a record tree to one leaf and on to the next ones, in id order: the interior
/// nodes passed and, in each, the child taken.
private struct LeafPath {
    let transaction: PageLogTransaction
    /// Interior nodes from the root down, each with the index of the child taken.
    private var levels: [(node: InteriorNode, index: Int)] = []
    /// The current leaf's page, nil once past the last one.
    private(set) var leaf: UInt64?

    /// The path to the leaf whose id range holds `cursor` (the tree's only leaf when the root
    /// is one; none for an empty tree).
    init(transaction: PageLogTransaction, root: UInt64, cursor: UInt64) throws {
        self.transaction = transaction
        guard root != 0 else { return }
        var pageID = root
        while let node = try interior(pageID) {
            let index = node.childIndex(for: cursor)
            levels.append((node, index))
            pageID = node.children[index]
        }
        leaf = pageID
    }

    /// The lower end of the current leaf's id range (the cursor that finds it again), or nil
    /// once past the last leaf.
    var cursor: UInt64? {
        guard leaf != nil else { return nil }
        // A child's range starts at its first id, except the first child's, which starts where
        // its parent's does.
        return levels.last(where: { $0.index > 0 }).map { $0.node.firstIDs[$0.index] } ?? 0
    }

    /// Moves to the next leaf in id order (or past the last one).
    mutating func advance() throws {
        guard leaf != nil else { return }
        let height = levels.count
        while let last = levels.last, last.index + 1 >= last.node.count { levels.removeLast() }
        guard !levels.isEmpty else {
            leaf = nil
            return
        }
        levels[levels.count - 1].index += 1
        var pageID = levels[levels.count - 1].node.children[levels[levels.count - 1].index]
        while levels.count < height {
            guard let node = try interior(pageID) else {
                throw RecordTreeError.corruptNode(pageID: pageID, reason: "a leaf where the tree's other leaves have interior nodes above")
            }
            levels.append((node, 0))
            pageID = node.children[0]
        }
        leaf = pageID
    }

    /// The interior node in `pageID`, or nil when the page holds a leaf.
    private func interior(_ pageID: UInt64) throws -> InteriorNode? {
        guard let page = try transaction.read(pageID, mapped: false) else { throw RecordTreeError.missingPage(pageID: pageID) }
        guard page.bytes.first == NodeKind.interior.rawValue else { return nil }
        do { return try InteriorNode.decode(page.bytes) } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
        }
    }
}

extension RecordStore {
    /// Leaves the pass compresses per commit: about 1 MiB of pages, a few milliseconds of the
    /// writer's lock.
    package static let leavesCompressedPerCommit = 256

    /// Runs the deferred compression pass to its end on the calling thread: every flagged
    /// tree's uncompressed leaves compressed, the flags cleared. Relaxed commits (the pages'
    /// contents do not change; a crash loses only work the next pass does again).
    ///
    /// One pass runs at a time: a call made while another runs (`compact()` while the
    /// background pass works) waits for it, then finds what is left. A pass goes on from where
    /// the last one of this instance stopped (an entity and an id: every leaf below it is
    /// stored compressed); the cursor moves only after a batch committed.
    package func compressUncompressedLeaves(maximumLeavesPerCommit: Int = RecordStore.leavesCompressedPerCommit) throws {
        try compressionPass.withLock { cursor in
            // Automatic compaction would move the uncompressed leaves this pass is about to
            // write again: it waits for the pass's end, deleting only emptied segments meanwhile.
            try log.holdingAutomaticRelocations { try compressBatches(from: &cursor, maximumLeavesPerCommit: maximumLeavesPerCommit) }
        }
    }

    /// The pass's batches, one relaxed commit each, from `cursor` to the end.
    private func compressBatches(from cursor: inout (entityID: UInt32, next: UInt64)?, maximumLeavesPerCommit: Int) throws {
        while true {
            let start = cursor
            var next: (entityID: UInt32, next: UInt64)?
            // Not `write`: these commits change no record, so observers are not woken.
            let more = try log.write(durability: .relaxed) { pageTransaction in
                pageTransaction.pipelinesEveryPage()
                return try run({ transaction -> Bool in
                    let flagged = transaction.root.entitiesWithUncompressedLeaves
                    guard let entityID = start.flatMap({ flagged.contains($0.entityID) ? $0.entityID : nil }) ?? flagged.first else {
                        return false
                    }
                    let from = start.flatMap { $0.entityID == entityID ? $0.next : nil } ?? 0
                    next = try transaction.compressUncompressedLeaves(of: entityID, from: from, maximumLeaves: maximumLeavesPerCommit)
                        .map { (entityID, $0) }
                    return true
                }, in: pageTransaction).result
            }
            guard more else { return }
            cursor = next
        }
    }

    /// Starts `compressUncompressedLeaves` on a background thread (utility priority) when the
    /// store has flagged trees and no pass runs already. The pass ends early, silently, when the
    /// store closes; another error ends it too and is kept as the page log's background error.
    package func compressUncompressedLeavesInBackground() {
        guard let snapshot = try? snapshot(), !snapshot.root.entitiesWithUncompressedLeaves.isEmpty,
              !compressionPassRunning.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            defer { compressionPassRunning.store(false, ordering: .releasing) }
            do {
                try compressUncompressedLeaves()
            } catch PageLogError.closed {
                // Closed meanwhile: the next open starts over.
            } catch {
                log.backgroundError.withLock { $0 = "deferred compression: \(error)" }
            }
        }
    }
}

extension RecordStore {
    /// How many leaves each entity's record tree has and how many of them are stored
    /// uncompressed, by entity id (a walk of every tree under the writer's lock, writing
    /// nothing; for tests and diagnostics).
    package func leafStorage() throws -> [UInt32: (leaves: Int, uncompressed: Int)] {
        try log.write(durability: .relaxed) { transaction in
            let root = try Self.root(transaction.read(StoreRoot.pageID, mapped: false), pageID: StoreRoot.pageID)
            var storage: [UInt32: (leaves: Int, uncompressed: Int)] = [:]
            for (entityID, entity) in root.entities {
                var path = try LeafPath(transaction: transaction, root: entity.tree.rootPageID, cursor: 0)
                var counts = (leaves: 0, uncompressed: 0)
                while let leaf = path.leaf {
                    counts.leaves += 1
                    if try transaction.uncompressedImage(of: leaf) != nil { counts.uncompressed += 1 }
                    try path.advance()
                }
                storage[entityID] = counts
            }
            return storage
        }
    }
}
