import StrataFormat
import StrataPageLog

/// `RecordTreeWriter`'s nodes: finding the leaf of an id, loading nodes through the
/// transaction, keeping modified ones and writing them as pages.
extension RecordTreeWriter {
    /// The leaf that holds (or would hold) `id`, the interior path to it, and the first id
    /// past the leaf's range (nil for the last leaf of the tree).
    func findLeaf(_ id: UInt64) throws -> (path: [(UInt64, Int)], leafID: UInt64, leaf: Leaf, high: UInt64?) {
        let found = try findLeafRange(id)
        return (found.path, found.leafID, found.leaf, found.high)
    }

    /// A leaf found for an id: the interior path to it and the range of ids it covers.
    struct LeafRange {
        var path: [(UInt64, Int)]
        var leafID: UInt64
        var leaf: Leaf
        /// The first id of its range.
        var low: UInt64
        /// The first id past its range (nil for the last leaf of the tree).
        var high: UInt64?
    }

    /// `findLeaf` with the leaf's whole range.
    func findLeafRange(_ id: UInt64) throws -> LeafRange {
        if let hint, id >= hint.low, hint.high.map({ id < $0 }) ?? true {
            return LeafRange(path: hint.path, leafID: hint.leaf, leaf: hint.node, low: hint.low, high: hint.high)
        }
        let (path, leafID, low, high) = try descend(to: id)
        let leaf = try loadLeaf(leafID)
        hint = (leafID, leaf, path, low, high)
        return LeafRange(path: path, leafID: leafID, leaf: leaf, low: low, high: high)
    }

    /// `findLeaf` without the interior path, for a caller that needs it only when the leaf
    /// splits (`interiorPath(to:leaf:)`): a hit on the hint copies no array.
    @inline(__always)
    func findLeafNode(_ id: UInt64) throws -> (leafID: UInt64, leaf: Leaf, high: UInt64?) {
        if let hint, id >= hint.low, hint.high.map({ id < $0 }) ?? true { return (hint.leaf, hint.node, hint.high) }
        let (_, leafID, leaf, high) = try findLeaf(id)
        return (leafID, leaf, high)
    }

    /// The interior path to `leafID`, the leaf holding `id`: the hint's when it is still that
    /// leaf's, else walked again.
    func interiorPath(to id: UInt64, leaf leafID: UInt64) throws -> [(UInt64, Int)] {
        if let hint, hint.leaf == leafID { return hint.path }
        return try descend(to: id).path
    }

    /// The interior path to the leaf that holds (or would hold) `id`: (page id, child index)
    /// pairs, and the range of ids that leaf covers.
    func descend(to id: UInt64) throws -> (path: [(UInt64, Int)], leaf: UInt64, low: UInt64, high: UInt64?) {
        var path: [(UInt64, Int)] = []
        var pageID = root.rootPageID
        var low: UInt64 = 0
        var high: UInt64?
        while true {
            switch try load(pageID) {
            case .leaf:
                return (path, pageID, low, high)
            case .interior(let interior):
                let index = interior.node.childIndex(for: id)
                path.append((pageID, index))
                low = max(low, interior.node.firstIDs[index])
                if index + 1 < interior.node.count {
                    let upper = interior.node.firstIDs[index + 1]
                    high = high.map { min($0, upper) } ?? upper
                }
                pageID = interior.node.children[index]
                guard path.count < 64 else { throw RecordTreeError.corruptNode(pageID: pageID, reason: "tree deeper than 64 levels") }
            }
        }
    }

    func load(_ pageID: UInt64) throws -> Node {
        if let node = nodes.node(pageID) { return node }
        if let writtenNodes, let lsn = try transaction.currentLSN(of: pageID), let image = writtenNodes.image(of: pageID, lsn: lsn) {
            // The node an earlier transaction wrote there: the page's image, decoded.
            let node: Node
            let size: Int
            switch image {
            case .leaf(let leaf): node = .leaf(Leaf(leaf)); size = leaf.encodedSize
            case .interior(let interior): node = .interior(Interior(interior)); size = interior.encodedSize
            }
            remember(pageID, node, bytes: size)
            return node
        }
        guard let page = try transaction.read(pageID, mapped: mappedReads) else { throw RecordTreeError.missingPage(pageID: pageID) }
        let node = try Self.decodeNode(page.bytes, pageID: pageID)
        remember(pageID, node, bytes: page.bytes.count)
        return node
    }

    /// A node from its page's bytes.
    static func decodeNode(_ bytes: [UInt8], pageID: UInt64) throws -> Node {
        do {
            switch bytes.first.flatMap(NodeKind.init(rawValue:)) {
            case .leaf: return .leaf(Leaf(try LeafNode.decode(bytes)))
            case .interior: return .interior(Interior(try InteriorNode.decode(bytes)))
            case nil: throw FormatError("unknown node kind")
            }
        } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
        }
    }

    /// Keeps an unmodified node for reuse (see `TreeNodes`); the leaf hint goes when the
    /// unmodified nodes are forgotten.
    func remember(_ pageID: UInt64, _ node: Node, bytes: Int) {
        if nodes.remember(pageID, node, bytes: bytes) { hint = nil }
    }

    func loadLeaf(_ pageID: UInt64) throws -> Leaf {
        guard case .leaf(let leaf) = try load(pageID) else {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: "expected a leaf")
        }
        return leaf
    }

    func loadInterior(_ pageID: UInt64) throws -> Interior {
        guard case .interior(let interior) = try load(pageID) else {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: "expected an interior node")
        }
        return interior
    }

    func markDirty(_ pageID: UInt64, _ node: Node) {
        // Runs of changes to one leaf (bulk inserts) mark it once, not once per record.
        guard pageID != lastMarked else { return }
        nodes.markDirty(pageID, node)
        lastMarked = pageID
        changed = true
    }

    func discard(_ pageID: UInt64) throws {
        changed = true
        hint = nil
        lastMarked = 0
        nodes.forget(pageID)
        try transaction.free(pageID)
    }

    func writeDirtyNodes() throws {
        lastMarked = 0
        let forgot = try nodes.writeDirty(writeNode)
        if forgot { hint = nil }
    }

    /// Writes the modified node of `pageID` now and forgets it (a later change reads it back
    /// from the log).
    func writeNow(_ pageID: UInt64) throws {
        guard let node = nodes.takeDirty(pageID) else { return }
        if lastMarked == pageID { lastMarked = 0 }
        if hint?.leaf == pageID { hint = nil }
        _ = try writeNode(pageID, node)
    }

    /// Encodes and writes one node; returns the bytes written.
    func writeNode(_ pageID: UInt64, _ node: Node) throws -> [UInt8] {
        let bytes: [UInt8]
        let compress: Bool?
        var directoryLength: Int?
        switch node {
        case .leaf(let leaf):
            bytes = leaf.node.encoded()
            compress = options.compressLeaves ? nil : false
            // Point lookups read leaves in part: header and directory first (raw in the frame).
            if options.partialReadLeaves { directoryLength = LeafNode.headerSize + leaf.node.count * LeafNode.entrySize }
        case .interior(let interior):
            bytes = interior.node.encoded()
            compress = nil
        }
        try transaction.write(pageID, entityID: entityID, schemaVersion: schemaVersion, bytes: bytes, compress: compress,
                              directoryLength: directoryLength)
        if let writtenNodes {
            // The last ones are what the next transaction may change again.
            if written.count >= 2 * writtenNodes.capacity { written.removeFirst(written.count - writtenNodes.capacity) }
            switch node {
            case .leaf(let leaf): written.append((pageID, .leaf(leaf.node)))
            case .interior(let interior): written.append((pageID, .interior(interior.node)))
            }
        }
        return bytes
    }

    /// Calls `body` with record `index` of `leaf`: its bytes where they lie in the leaf, or
    /// assembled from its overflow pages.
    func withStoredBytes<Result>(_ leaf: Leaf, _ index: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) throws -> Result {
        guard leaf.node.isOverflow(index) else {
            // In the leaf's array, through the node held by `leaf`: no copy of the node, no
            // slice (each was retains and releases of the node's arrays, per change journaled).
            let range = leaf.node.start(index)..<leaf.node.end(index)
            return try leaf.node.data.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
        return try materialize(leaf.node, index).withUnsafeBytes(body)
    }

    func materialize(_ leaf: LeafNode, _ index: Int) throws -> [UInt8] {
        guard leaf.isOverflow(index) else { return Array(leaf.bytes(index)) }
        let reference = try Array(leaf.bytes(index)).withUnsafeBytes { try OverflowReference.decode($0) }
        return try OverflowReader.assemble(reference) { chunk, append in
            guard let page = try transaction.read(chunk) else { return false }
            try page.bytes.withUnsafeBytes(append)
            return true
        }
    }
}
