import StrataFormat
import StrataPageLog

/// A record tree a migration's switch replaced (Architecture.md, invariant 27), whose pages are
/// freed in bounded batches after the switch — leaves in key order, then the interior nodes —
/// so no transaction of a migration grows with the store. Kept in the migration marker, so a
/// crash resumes the freeing where it stopped.
package struct RetiredTree: Equatable, Sendable {
    /// The tree's root page, and how many interior levels are above its leaves (0: the root
    /// is a leaf).
    package var rootPageID: UInt64
    package var height: UInt32
    /// Every leaf whose key range starts below this was freed (0: none yet).
    package var freedBelow: UInt64

    package init(rootPageID: UInt64, height: UInt32, freedBelow: UInt64 = 0) {
        self.rootPageID = rootPageID
        self.height = height
        self.freedBelow = freedBelow
    }
}

extension RecordTransaction {
    /// The committed tree of an entity, as this transaction started with it (tests).
    package func snapshotRoot(of entityID: UInt32) -> RecordTreeRoot { root.entities[entityID]?.tree ?? .empty }

    /// Drops an entity's tree from the store root without freeing its pages (tests: the pages
    /// are a retired tree's).
    package func forgetEntity(_ entityID: UInt32) {
        updateRoot { $0.entities[entityID] = nil }
    }

    /// Retires the tree at `root` (still whole): its height is measured down its first path.
    package func retire(_ root: RecordTreeRoot) throws -> RetiredTree? {
        guard root.rootPageID != 0 else { return nil }
        var height: UInt32 = 0
        var pageID = root.rootPageID
        while true {
            let bytes = try page(pageID)
            guard bytes.first == NodeKind.interior.rawValue else { break }
            let node = try interior(bytes, pageID: pageID)
            guard let first = node.children.first, height < 64 else {
                throw RecordTreeError.corruptNode(pageID: pageID, reason: "an interior node without children, or a tree deeper than 64 levels")
            }
            pageID = first
            height += 1
        }
        return RetiredTree(rootPageID: root.rootPageID, height: height)
    }

    /// Frees up to `maximumLeaves` more leaves (and their overflow chunks) of the first retired
    /// tree of the running migration, in key order; once its leaves are all freed, frees its
    /// interior nodes and forgets it. Returns whether no retired tree is left.
    ///
    /// A leaf is read to free the overflow chunks its records refer to — unless the tree's root
    /// is in `withoutOverflow`: trees the caller read whole and found no overflowed record in
    /// (a streaming stage's source, scanned from its first record in this process), whose
    /// leaves are then freed unread.
    package func freeRetiredTrees(maximumLeaves: Int, withoutOverflow: Set<UInt64> = []) throws -> Bool {
        guard var retired = migration?.retired.first else { return true }
        let unread = withoutOverflow.contains(retired.rootPageID)
        let maximumLeaves = max(1, maximumLeaves)
        var freed = 0
        var next: UInt64?  // the range start of the first leaf left, once the batch is full
        // Leaves in key order, skipping those below `freedBelow` without reading them.
        func visit(_ pageID: UInt64, level: UInt32, start: UInt64, end: UInt64?) throws {
            if next != nil { return }
            if level == retired.height {
                guard start >= retired.freedBelow else { return }  // freed by an earlier batch
                if freed == maximumLeaves { next = start; return }
                if unread {
                    try transaction.free(pageID)
                    freed += 1
                    return
                }
                let bytes = try page(pageID)
                let leaf: LeafNode
                do { leaf = try LeafNode.decode(bytes) } catch let error as FormatError {
                    throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
                }
                for index in 0..<leaf.count where leaf.isOverflow(index) {
                    let reference = try Array(leaf.bytes(index)).withUnsafeBytes { try OverflowReference.decode($0) }
                    for chunk in reference.chunks { try transaction.free(chunk) }
                }
                try transaction.free(pageID)
                freed += 1
                return
            }
            let node = try interior(try page(pageID), pageID: pageID)
            for index in node.children.indices {
                let childStart = index == 0 ? start : node.firstIDs[index]
                let childEnd = index + 1 < node.count ? node.firstIDs[index + 1] : end
                if let childEnd, childEnd <= retired.freedBelow, retired.freedBelow > 0 { continue }  // freed already
                try visit(node.children[index], level: level + 1, start: childStart, end: childEnd)
                if next != nil { return }
            }
        }
        try visit(retired.rootPageID, level: 0, start: 0, end: nil)
        if let next {
            retired.freedBelow = next
            updateMigration { $0.retired[0] = retired }
            return false
        }
        // Every leaf is freed: now the interior nodes (never their freed children).
        func freeInterior(_ pageID: UInt64, level: UInt32) throws {
            guard level < retired.height else { return }
            let node = try interior(try page(pageID), pageID: pageID)
            for child in node.children { try freeInterior(child, level: level + 1) }
            try transaction.free(pageID)
        }
        try freeInterior(retired.rootPageID, level: 0)
        updateMigration { $0.retired.removeFirst() }
        return migration?.retired.isEmpty ?? true
    }

    /// A page's bytes, read with `pread` (a one-pass walk), or `missingPage`.
    private func page(_ pageID: UInt64) throws -> [UInt8] {
        guard let page = try transaction.read(pageID, mapped: false) else { throw RecordTreeError.missingPage(pageID: pageID) }
        return page.bytes
    }

    private func interior(_ bytes: [UInt8], pageID: UInt64) throws -> InteriorNode {
        do { return try InteriorNode.decode(bytes) } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
        }
    }
}
