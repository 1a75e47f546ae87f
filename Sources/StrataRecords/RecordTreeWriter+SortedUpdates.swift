import StrataFormat

/// `RecordTreeWriter.update(count:id:bytes:)`: updates in id order (a save's, a migration
/// closure's flush), each leaf's records replaced in one pass and the leaves rebuilt packed
/// (Architecture.md, "Record trees").
extension RecordTreeWriter {
    /// Replaces existing records, record `i` having id `id(i)` and new bytes `bytes(i)` for `i`
    /// in `0..<count`, ids strictly ascending: the same as `update(_:bytes:)` for each in turn —
    /// the same records, the same journal summary — but the records of one leaf are replaced in
    /// one pass over it (not each moving the bytes after it), and the leaves rebuilt are packed
    /// (`replaceInOnePass`). Returns the id of the first record that does not exist, or nil; the
    /// records of earlier leaves are then replaced, those of its leaf may not be, and the
    /// transaction is to be abandoned.
    ///
    /// Records go through `update(_:bytes:)` one by one instead when the tree keeps indexes, or
    /// when a record of the leaf overflows, before or after. The journal is told of each update,
    /// old and new bytes, in id order, as per-record updates tell it.
    package func update(count: Int, id: (Int) -> UInt64, bytes: (Int) -> [UInt8]) throws -> UInt64? {
        var index = 0
        var packing: Packing?
        while index < count {
            let first = id(index)
            var end = index + 1
            if indexes == nil, root.rootPageID != 0 {
                let leaf = try findLeafRange(first)
                while end < count, leaf.high.map({ id(end) < $0 }) ?? true { end += 1 }
                if end - index > 1 {
                    switch try replaceInOnePass(index..<end, in: leaf, after: packing, id: id, bytes: bytes) {
                    case .replaced(let last):
                        packing = last
                        index = end
                        continue
                    case .missing(let missing):
                        return missing
                    case .overflows:
                        break
                    }
                }
            }
            packing = nil
            for one in index..<end where try !update(id(one), bytes: bytes(one)) { return id(one) }
            index = end
        }
        return nil
    }

    /// The last leaf a batch of updates rebuilt (`replaceInOnePass`), which may take records
    /// from the front of the next leaf the batch rebuilds, when that leaf follows it.
    private struct Packing {
        var leafID: UInt64
        /// The first id past its range (nil: none, the tree's last leaf).
        var high: UInt64?
    }

    private enum OnePass { case replaced(Packing), missing(UInt64), overflows }

    /// `update(count:id:bytes:)` for records `range`, all in `leaf`: the leaf rebuilt with their
    /// bytes in one pass, then packed. When the leaf rebuilt before it in the batch (`previous`)
    /// is its left neighbor, still held modified and not full, the leaf's first records move
    /// into it, as many as fit (the separator between the two rises to the first record left);
    /// then, while the leaf passes `maximumNodeSize`, it keeps the records that fit and the rest
    /// go to a new leaf after it. Records that grow (a migration filling new attributes) so
    /// leave full leaves, as a transform's sequential inserts do, where splitting each grown
    /// leaf in halves left about 1.6 leaves for every one. Returns the last leaf written.
    /// Changes nothing when a record lacks (`.missing`) or one overflows, stored or new
    /// (`.overflows`).
    private func replaceInOnePass(_ range: Range<Int>, in found: LeafRange, after previous: Packing?,
                                  id: (Int) -> UInt64, bytes: (Int) -> [UInt8]) throws -> OnePass {
        let old = found.leaf.node
        var new = LeafNode()
        new.ids.reserveCapacity(old.count)
        new.ends.reserveCapacity(old.count)
        new.data.reserveCapacity(old.data.count + old.data.count / 4)
        // The journal is told once the whole leaf is known to be replaced here (not when a
        // record turns out to overflow, and the leaf's records go one by one after all).
        var journaled: [(old: Int, new: Int)] = []
        if journal != nil { journaled.reserveCapacity(range.count) }
        var next = 0  // the first record of `old` not yet in `new`
        for index in range {
            let target = id(index)
            let value = bytes(index)
            guard value.count <= options.maximumInlineRecord else { return .overflows }
            var at = next
            while at < old.count && old.ids[at] < target { at += 1 }
            guard at < old.count, old.ids[at] == target else { return .missing(target) }
            guard !old.isOverflow(at) else { return .overflows }
            new.append(next..<at, of: old)
            if journal != nil { journaled.append((at, new.count)) }
            value.withUnsafeBytes { new.append(target, bytes: $0, overflow: false) }
            next = at + 1
        }
        new.append(next..<old.count, of: old)
        if let journal {
            for (stored, written) in journaled {
                try old.data.withUnsafeBytes { oldData in
                    try new.data.withUnsafeBytes { newData in
                        try journal.recordUpdate(entityID: entityID, id: old.ids[stored],
                                                 old: UnsafeRawBufferPointer(rebasing: oldData[old.start(stored)..<old.end(stored)]),
                                                 new: UnsafeRawBufferPointer(rebasing: newData[new.start(written)..<new.end(written)]))
                    }
                }
            }
        }
        if let previous {
            if previous.high == found.low, case .leaf(let left)? = nodes.dirtyNode(previous.leafID) {
                let moving = new.prefixCount(fittingAfter: left.node.encodedSize, maximum: options.maximumNodeSize)
                if moving > 0 {
                    try raiseSeparator(to: new.ids[moving], path: found.path)
                    left.node.append(0..<moving, of: new)
                    new.removeFirst(moving)
                    hint = nil
                }
            }
            // The batch changes it no more: written now, while its bytes are in the CPU's
            // caches, as appends write a full leaf (not in a burst at the end).
            try writeNow(previous.leafID)
        }
        var leafID = found.leafID, leaf = found.leaf, path = found.path
        leaf.node = new
        markDirty(leafID, .leaf(leaf))
        while leaf.node.encodedSize > options.maximumNodeSize && leaf.node.count > 1 {
            let right = leaf.node.splitOff(at: max(1, leaf.node.prefixCount(fittingAfter: LeafNode.headerSize, maximum: options.maximumNodeSize)))
            try addRightLeaf(right, after: leafID, path: path, writingLeft: true)
            let next = try findLeafRange(right.ids[0])
            (leafID, leaf, path) = (next.leafID, next.leaf, next.path)
        }
        if nodes.isOverBudget { try writeDirtyNodes() }
        return .replaced(Packing(leafID: leafID, high: found.high))
    }

    /// Raises the separator before the leaf reached by `path` (not the tree's first leaf) to
    /// `id`: the interior node where that leaf's path parts from its left neighbor's holds it.
    /// `id` must lie above every id left in the neighbor and at or below the leaf's first.
    private func raiseSeparator(to id: UInt64, path: [(UInt64, Int)]) throws {
        for (pageID, childIndex) in path.reversed() where childIndex > 0 {
            let interior = try loadInterior(pageID)
            interior.node.firstIDs[childIndex] = id
            markDirty(pageID, .interior(interior))
            return
        }
        throw RecordTreeError.corruptNode(pageID: root.rootPageID, reason: "no leaf before the one holding id \(id)")
    }
}
