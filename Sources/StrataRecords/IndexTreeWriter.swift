import StrataFormat
import StrataPageLog

/// Changes one index tree — a B+tree of byte-string entries (value key ‖ record id, see
/// `IndexKey`), no payload — inside a page log write transaction, copy-on-write like
/// `RecordTreeWriter`: modified nodes stay in memory until `finish()` or until they pass
/// `dirtyBudget`, when they are written early. Pages carry the entity id and schema version
/// given. Deletes do not rebalance: emptied nodes are removed, a root with one child is
/// replaced by it. The root's `count` is the number of entries.
///
/// Not thread-safe; use inside one `PageLog.write` body.
package final class IndexTreeWriter {
    private final class Box {
        var node: IndexNode
        init(_ node: IndexNode) { self.node = node }
    }

    let transaction: PageLogTransaction
    let entityID: UInt32
    let schemaVersion: UInt32
    let options: RecordTreeOptions
    /// The tree's root page and entry count as changed so far.
    package private(set) var root: RecordTreeRoot
    private var nodes: TreeNodes<Box>

    package init(transaction: PageLogTransaction, root: RecordTreeRoot, entityID: UInt32, schemaVersion: UInt32,
                 options: RecordTreeOptions = RecordTreeOptions()) {
        self.transaction = transaction
        self.root = root
        self.entityID = entityID
        self.schemaVersion = schemaVersion
        self.options = options
        nodes = TreeNodes(budget: options.dirtyBudget, nodeSize: min(options.maximumNodeSize, IndexNode.maximumKeyBytes / 2))
    }

    /// Nodes are split past this size (the tree options' node size, kept within u16 key ends).
    private var maximumNodeSize: Int { nodes.nodeSize }

    /// Adds an entry; returns false (changing nothing) when it is already there.
    /// - Throws: `RecordTreeError.invalidIndexEntry` for an entry outside 9…520 bytes; storage errors.
    @discardableResult
    package func insert(_ key: [UInt8]) throws -> Bool {
        guard (9...IndexNode.maximumKeyLength).contains(key.count) else {
            throw RecordTreeError.invalidIndexEntry(length: key.count)
        }
        guard root.rootPageID != 0 else {
            let pageID = try transaction.allocatePageID()
            markDirty(pageID, Box(IndexNode(kind: .leaf, keys: [key])))
            root = RecordTreeRoot(rootPageID: pageID, count: 1)
            return true
        }
        let (path, leafID, leaf) = try descend(to: key)
        let (found, index) = leaf.node.search(key)
        guard !found else { return false }
        leaf.node.insert(key, at: index)
        root.count += 1
        markDirty(leafID, leaf)
        if leaf.node.encodedSize > maximumNodeSize && leaf.node.count > 1 {
            // An entry appended at the end (ascending keys) moves alone, so leaves fill up.
            let right = index == leaf.node.count - 1 ? leaf.node.splitOff(at: index) : leaf.node.splitOffHalf()
            let rightID = try transaction.allocatePageID()
            markDirty(rightID, Box(right))
            try insertSeparator(right.keys[0], right: rightID, left: leafID, path: path)
        }
        if nodes.isOverBudget { try writeDirtyNodes() }
        return true
    }

    /// Removes an entry; returns false when it is not there.
    @discardableResult
    package func delete(_ key: [UInt8]) throws -> Bool {
        guard root.rootPageID != 0 else { return false }
        var (path, leafID, leaf) = try descend(to: key)
        let (found, index) = leaf.node.search(key)
        guard found else { return false }
        leaf.node.remove(at: index)
        root.count -= 1
        if leaf.node.count > 0 {
            markDirty(leafID, leaf)
            return true
        }
        try discard(leafID)
        var removed = leafID
        while let (parentID, childIndex) = path.popLast() {
            let parent = try load(parentID)
            guard !parent.node.isLeaf, parent.node.children[childIndex] == removed else {
                throw RecordTreeError.corruptNode(pageID: parentID, reason: "index child \(childIndex) is not page \(removed)")
            }
            parent.node.remove(at: childIndex)
            if parent.node.count == 0 {
                try discard(parentID)
                removed = parentID
                continue
            }
            parent.node.clearFirstKey()
            markDirty(parentID, parent)
            // A root left with one child is replaced by it.
            while true {
                let top = try load(root.rootPageID)
                guard !top.node.isLeaf, top.node.count == 1 else { break }
                let only = top.node.children[0]
                try discard(root.rootPageID)
                root.rootPageID = only
            }
            return true
        }
        root.rootPageID = 0
        return true
    }

    /// Whether the entry is in the tree.
    package func contains(_ key: [UInt8]) throws -> Bool {
        guard root.rootPageID != 0 else { return false }
        return try descend(to: key).leaf.node.search(key).found
    }

    /// Calls `body` with every entry ≥ `lower`, in order, until it returns false. `body` must
    /// not change this tree.
    package func scan(from lower: [UInt8], _ body: ([UInt8]) throws -> Bool) throws {
        try IndexTreeReader.scan(rootPageID: root.rootPageID, from: lower, load: { try self.load($0).node }, body)
    }

    /// Frees every page of the tree and leaves it empty (dropping an index).
    package func destroy() throws {
        var pending = root.rootPageID == 0 ? [] : [root.rootPageID]
        while let pageID = pending.popLast() {
            let box = try load(pageID)
            if !box.node.isLeaf { pending += box.node.children }
            try discard(pageID)
        }
        root = .empty
    }

    /// Writes every modified node and returns the tree's new root.
    package func finish() throws -> RecordTreeRoot {
        try writeDirtyNodes()
        return root
    }

    // MARK: Nodes

    private func insertSeparator(_ separator: [UInt8], right: UInt64, left: UInt64, path: [(UInt64, Int)]) throws {
        var separator = separator, right = right, left = left, path = path
        while true {
            guard let (parentID, childIndex) = path.popLast() else {
                let rootID = try transaction.allocatePageID()
                markDirty(rootID, Box(IndexNode(kind: .interior, keys: [[], separator], children: [left, right])))
                root.rootPageID = rootID
                return
            }
            let parent = try load(parentID)
            parent.node.insert(separator, child: right, at: childIndex + 1)
            markDirty(parentID, parent)
            guard parent.node.encodedSize > maximumNodeSize, parent.node.count > 3 else { return }
            let appended = childIndex + 1 == parent.node.count - 1
            var upper = appended ? parent.node.splitOff(at: childIndex + 1) : parent.node.splitOffHalf()
            separator = upper.keys[0]
            upper.clearFirstKey()
            right = try transaction.allocatePageID()
            markDirty(right, Box(upper))
            left = parentID
        }
    }

    /// The interior path to the leaf that holds (or would hold) `key`, and that leaf.
    private func descend(to key: [UInt8]) throws -> (path: [(UInt64, Int)], leafID: UInt64, leaf: Box) {
        var path: [(UInt64, Int)] = []
        var pageID = root.rootPageID
        while true {
            let box = try load(pageID)
            if box.node.isLeaf { return (path, pageID, box) }
            let index = box.node.childIndex(for: key)
            path.append((pageID, index))
            pageID = box.node.children[index]
            guard path.count < 64 else { throw RecordTreeError.corruptNode(pageID: pageID, reason: "index tree deeper than 64 levels") }
        }
    }

    private func load(_ pageID: UInt64) throws -> Box {
        if let box = nodes.node(pageID) { return box }
        guard let page = try transaction.read(pageID) else { throw RecordTreeError.missingPage(pageID: pageID) }
        let box: Box
        do { box = Box(try IndexNode.decode(page.bytes)) } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
        }
        nodes.remember(pageID, box, bytes: page.bytes.count)
        return box
    }

    private func markDirty(_ pageID: UInt64, _ box: Box) {
        nodes.markDirty(pageID, box)
    }

    private func discard(_ pageID: UInt64) throws {
        nodes.forget(pageID)
        try transaction.free(pageID)
    }

    private func writeDirtyNodes() throws {
        try nodes.writeDirty { pageID, box in
            let bytes = box.node.encoded()
            try transaction.write(pageID, entityID: entityID, schemaVersion: schemaVersion, bytes: bytes)
            return bytes
        }
    }
}
