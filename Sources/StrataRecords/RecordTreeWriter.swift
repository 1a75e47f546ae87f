import StrataFormat
import StrataPageLog

/// Changes one record tree (a B+tree of records keyed by a 64-bit id, one tree per entity)
/// inside a page log write transaction. Nodes are pages: leaves hold records sorted by id,
/// interior nodes hold child page ids. Modified nodes stay in memory until `finish()` — or
/// until they pass `dirtyBudget`, when they are written early, so memory stays bounded
/// however large the transaction is. Every page written carries the tree's entity id and
/// schema version in its header.
///
/// Deletes do not rebalance: an emptied leaf is removed from its parent, an emptied interior
/// node likewise, and a root with one child is replaced by it.
///
/// Not thread-safe; use inside one `PageLog.write` body.
package final class RecordTreeWriter {
    // The writer's stored properties and its node handles skip dynamic exclusivity checks:
    // it is used on one thread and no access to one of them overlaps another (the checks were
    // ~4 % of a bulk insert).
    final class Leaf { @exclusivity(unchecked) var node: LeafNode; init(_ node: LeafNode) { self.node = node } }
    final class Interior { @exclusivity(unchecked) var node: InteriorNode; init(_ node: InteriorNode) { self.node = node } }
    enum Node { case leaf(Leaf), interior(Interior) }

    let transaction: PageLogTransaction
    let entityID: UInt32
    let schemaVersion: UInt32
    let options: RecordTreeOptions
    @exclusivity(unchecked) private(set) var root: RecordTreeRoot
    /// The entity's indexes, kept in step with every change (set by `RecordTransaction`).
    var indexes: EntityIndexes?
    /// The transaction's history journal, told of every change (set by `RecordTransaction`).
    var journal: HistoryRecorder?
    /// Nodes earlier transactions wrote, which `load` takes instead of reading their pages
    /// back; and, to hand to it once this transaction committed, the last nodes this writer
    /// wrote (`written`). Nil: neither (set by `RecordTransaction`).
    var writtenNodes: WrittenNodes?
    /// The nodes this writer wrote, in order (the last `writtenNodes.capacity` or more).
    var written: [(pageID: UInt64, image: WrittenNodes.Image)] = []
    @exclusivity(unchecked) var nodes: TreeNodes<Node>
    /// The leaf the last operation used, the path to it and the id range it covers: runs of
    /// nearby ids (bulk inserts) skip the descent. Cleared by every structural change.
    @exclusivity(unchecked) var hint: (leaf: UInt64, node: Leaf, path: [(UInt64, Int)], low: UInt64, high: UInt64?)?
    /// The page last marked dirty, which stays dirty (and the same node) until the dirty nodes
    /// are written or it is discarded; 0 for none (no node has page id 0).
    @exclusivity(unchecked) var lastMarked: UInt64 = 0
    /// Whether this writer changed the tree.
    @exclusivity(unchecked) package internal(set) var changed = false

    package init(transaction: PageLogTransaction, root: RecordTreeRoot, entityID: UInt32, schemaVersion: UInt32,
                 options: RecordTreeOptions = RecordTreeOptions()) {
        self.transaction = transaction
        self.root = root
        self.entityID = entityID
        self.schemaVersion = schemaVersion
        self.options = options
        nodes = TreeNodes(budget: options.dirtyBudget, nodeSize: options.maximumNodeSize)
    }

    // MARK: Public operations

    /// The record with this id, or nil.
    package func get(_ id: UInt64) throws -> [UInt8]? {
        guard root.rootPageID != 0 else { return nil }
        let (_, _, leaf, _) = try findLeaf(id)
        let (found, index) = leaf.node.search(id)
        guard found else { return nil }
        return try materialize(leaf.node, index)
    }

    /// Whether record `id`'s stored bytes differ from `bytes` (nil: there is no such record),
    /// compared in its leaf without a copy unless it overflows.
    private func differs(_ id: UInt64, from bytes: [UInt8]) throws -> Bool? {
        let (_, _, leaf, _) = try findLeaf(id)
        let (found, index) = leaf.node.search(id)
        guard found else { return nil }
        if leaf.node.isOverflow(index) { return try materialize(leaf.node, index) != bytes }
        let stored = leaf.node.bytes(index)
        guard stored.count == bytes.count else { return true }
        return !stored.withUnsafeBytes { old in bytes.withUnsafeBytes { old.elementsEqual($0) } }
    }

    /// Whether record `id` exists: its leaf is read, not its bytes (an overflowed record's
    /// chunks are not touched).
    package func contains(_ id: UInt64) throws -> Bool {
        guard root.rootPageID != 0 else { return false }
        let (_, _, leaf, _) = try findLeaf(id)
        return leaf.node.search(id).found
    }

    /// Inserts a new record. Throws `RecordTreeError.duplicateID` when the id exists.
    package func insert(_ id: UInt64, bytes: [UInt8]) throws {
        try put(id, bytes: bytes, mustExist: false, mustNotExist: true)
    }

    /// Replaces an existing record; returns false (changing nothing) when there is none.
    @discardableResult
    package func update(_ id: UInt64, bytes: [UInt8]) throws -> Bool {
        try put(id, bytes: bytes, mustExist: true, mustNotExist: false)
    }

    /// Inserts or replaces.
    package func upsert(_ id: UInt64, bytes: [UInt8]) throws {
        try put(id, bytes: bytes, mustExist: false, mustNotExist: false)
    }

    /// Removes a record; returns false when there was none.
    @discardableResult
    package func delete(_ id: UInt64) throws -> Bool {
        guard root.rootPageID != 0 else { return false }
        if let indexes {
            guard let old = try get(id) else { return false }
            try indexes.replace(id, old: old, new: nil, records: self)
        }
        var (path, leafID, leaf, _) = try findLeaf(id)
        let (found, index) = leaf.node.search(id)
        guard found else { return false }
        if let journal { try withStoredBytes(leaf, index) { try journal.recordDelete(entityID: entityID, id: id, old: $0) } }
        if leaf.node.isOverflow(index) { try freeOverflow(leaf.node, index) }
        leaf.node.remove(at: index)
        root.count -= 1
        if leaf.node.count > 0 {
            markDirty(leafID, .leaf(leaf))
            return true
        }
        // Remove the empty leaf, and every interior node it empties.
        hint = nil
        try discard(leafID)
        var removed = leafID
        while let (parentID, childIndex) = path.popLast() {
            let parent = try loadInterior(parentID)
            guard parent.node.children[childIndex] == removed else {
                throw RecordTreeError.corruptNode(pageID: parentID, reason: "child \(childIndex) is not page \(removed)")
            }
            parent.node.children.remove(at: childIndex)
            parent.node.firstIDs.remove(at: childIndex)
            if parent.node.children.isEmpty {
                try discard(parentID)
                removed = parentID
                continue
            }
            parent.node.firstIDs[0] = 0
            markDirty(parentID, .interior(parent))
            try collapseRoot()
            return true
        }
        root.rootPageID = 0
        return true
    }

    /// Calls `body` with every record (id and bytes) in id order from `start`, until it returns
    /// false. `body` must not change this tree.
    package func scan(from start: UInt64 = 0, _ body: (UInt64, [UInt8]) throws -> Bool) throws {
        guard root.rootPageID != 0 else { return }
        var stack: [(pageID: UInt64, next: Int)] = [(root.rootPageID, -1)]
        while let top = stack.popLast() {
            guard stack.count < 64 else { throw RecordTreeError.corruptNode(pageID: top.pageID, reason: "tree deeper than 64 levels") }
            switch try load(top.pageID) {
            case .interior(let interior):
                let next = top.next >= 0 ? top.next : interior.node.childIndex(for: start)
                guard next < interior.node.count else { continue }
                stack.append((top.pageID, next + 1))
                stack.append((interior.node.children[next], -1))
            case .leaf(let leaf):
                let node = leaf.node
                var index = node.search(start).index
                while index < node.count {
                    if try !body(node.ids[index], try materialize(node, index)) { return }
                    index += 1
                }
            }
        }
    }

    /// Writes every modified node and returns the tree's new root.
    package func finish() throws -> RecordTreeRoot {
        try writeDirtyNodes()
        return root
    }

    /// Whether nodes are read through the memory map (the default) or with `pread` (a
    /// migration's one pass over a whole tree, which should not stay mapped).
    package var mappedReads = true

    /// Frees every page of the tree — nodes and overflow chunks — and leaves it empty (a
    /// migration replacing the tree). Indexes are not touched.
    package func destroy() throws {
        var pending = root.rootPageID == 0 ? [] : [root.rootPageID]
        while let pageID = pending.popLast() {
            // Modified nodes are this transaction's; others are read and not kept (a whole
            // tree passes through here once).
            let node: Node
            if let held = nodes.node(pageID) { node = held } else {
                guard let page = try transaction.read(pageID, mapped: mappedReads) else { throw RecordTreeError.missingPage(pageID: pageID) }
                node = try Self.decodeNode(page.bytes, pageID: pageID)
            }
            switch node {
            case .interior(let interior): pending += interior.node.children
            case .leaf(let leaf):
                for index in 0..<leaf.node.count where leaf.node.isOverflow(index) { try freeOverflow(leaf.node, index) }
            }
            try discard(pageID)
        }
        root = .empty
    }

    // MARK: Insertion

    @discardableResult
    private func put(_ id: UInt64, bytes: [UInt8], mustExist: Bool, mustNotExist: Bool) throws -> Bool {
        if let indexes {
            // Indexes first: a unique violation throws before the tree changes.
            let old = try get(id)
            if old == nil && mustExist { return false }
            if old != nil && mustNotExist { throw RecordTreeError.duplicateID(id) }
            try indexes.replace(id, old: old, new: bytes, records: self)
        }
        if let journal {
            // Told before the tree changes; an insert of an existing id throws below, and the
            // transaction with it.
            if root.rootPageID != 0, !mustNotExist {
                // An update or an upsert: `place` tells the journal, comparing the stored record
                // where it finds it (one search) — except a summary's record that overflows,
                // compared here.
                let (stored, overflow) = try storedForm(bytes)
                if journal.summarizes, overflow {
                    if let changed = try differs(id, from: bytes) {
                        if changed { journal.recordSummarizedUpdate(entityID: entityID, id: id) }
                    } else if !mustExist {
                        try journal.recordInsert(entityID: entityID, id: id)
                    }
                    return try stored.withUnsafeBytes { try place(id, stored: $0, overflow: true, mustExist: mustExist, mustNotExist: false) }
                }
                return try stored.withUnsafeBytes { stored in
                    try bytes.withUnsafeBytes { written in
                        try place(id, stored: stored, overflow: overflow, mustExist: mustExist, mustNotExist: false,
                                  telling: journal, written: written)
                    }
                }
            } else if !mustExist {
                try journal.recordInsert(entityID: entityID, id: id)
            }
        }
        let (stored, overflow) = try storedForm(bytes)
        return try stored.withUnsafeBytes { try place(id, stored: $0, overflow: overflow, mustExist: mustExist, mustNotExist: mustNotExist) }
    }

    /// Inserts a new record from bytes the caller keeps (an encoding session's): as
    /// `insert(_:bytes:)`, with no array in between when the tree keeps no index (a journal
    /// needs only the id of an insert) — a record too large for a leaf goes to overflow pages
    /// straight from `bytes`, so a large value is not copied again on its way to the log.
    package func insert(_ id: UInt64, raw bytes: UnsafeRawBufferPointer) throws {
        guard indexes == nil else {
            try insert(id, bytes: Array(bytes.assumingMemoryBound(to: UInt8.self)))
            return
        }
        // As `put` tells the journal of an insert: before the tree changes; a duplicate id
        // throws below, and the transaction with it.
        try journal?.recordInsert(entityID: entityID, id: id)
        guard bytes.count > options.maximumInlineRecord else {
            _ = try place(id, stored: bytes, overflow: false, mustExist: false, mustNotExist: true)
            return
        }
        _ = try overflowReference(writing: [bytes], count: bytes.count).withUnsafeBytes {
            try place(id, stored: $0, overflow: true, mustExist: false, mustNotExist: true)
        }
    }

    /// Inserts new records from bytes the caller keeps back to back (a migration's transformed
    /// chunk): record i has id `ids[i]` and bytes `bytes[ends[i - 1] ..< ends[i]]`, record 0's
    /// starting at `start`. The same as `insert(_:raw:)` for each in turn — the same leaves
    /// byte for byte, the same errors, the records before a failing one inserted — but records
    /// whose ids ascend past every id of the tree (a migration's shadow tree gets only those)
    /// fill its last leaf a sub-run at a time: their bytes copied at once, their directory
    /// appended whole, the leaf marked modified once. Records go through `insert(_:raw:)`
    /// instead when the tree is empty (the first one), keeps indexes (all of them), or the
    /// record overflows (larger than `maximumInlineRecord`) or has an id not above the tree's
    /// last (a duplicate throws `duplicateID` there). A journal is told of each insert, as
    /// `insert(_:raw:)` tells it: by id, in order, before the record enters its leaf.
    package func insert(ids: UnsafeBufferPointer<UInt64>, bytes: UnsafeRawBufferPointer, start: Int,
                        ends: UnsafeBufferPointer<Int>) throws {
        guard ids.count == ends.count else {
            throw RecordTreeError.invalidRecord(entityID: entityID, recordID: ids.first ?? 0,
                                                reason: "a run of \(ids.count) ids has \(ends.count) end offsets")
        }
        var index = 0, recordStart = start
        while index < ids.count {
            let appended = try appendPastTheEnd(ids, bytes, ends, from: index, start: recordStart)
            if appended > 0 {
                index += appended
                recordStart = ends[index - 1]
                continue
            }
            // Anything else, one record the usual way.
            let end = ends[index]
            guard recordStart >= 0, recordStart <= end, end <= bytes.count else { throw invalidEnd(ids[index], recordStart, end, bytes.count) }
            try insert(ids[index], raw: UnsafeRawBufferPointer(rebasing: bytes[recordStart..<end]))
            recordStart = end
            index += 1
        }
    }

    /// Appends records `index...` of a run (as `insert(ids:bytes:start:ends:)` has them,
    /// record `index` starting at `start`) past the end of the tree, as many as are in line:
    /// into the last leaf while they fit, then the first that does not starts a new leaf as
    /// `place` starts one for it. Returns how many it appended; 0 when record `index` must take
    /// the per-record path (the tree is empty or keeps indexes, the record overflows, or its
    /// id is not above the tree's last).
    private func appendPastTheEnd(_ ids: UnsafeBufferPointer<UInt64>, _ bytes: UnsafeRawBufferPointer, _ ends: UnsafeBufferPointer<Int>,
                                  from index: Int, start: Int) throws -> Int {
        guard indexes == nil, root.rootPageID != 0 else { return 0 }
        let (path, leafID, leaf, high) = try findLeaf(ids[index])
        // Not the last leaf: the id is below the tree's last.
        guard high == nil else { return 0 }
        // Records `index..<end` fit in the leaf as `place` would fill it: a record goes in, and
        // moves to a new leaf if the leaf then passes `maximumNodeSize` and holds another one.
        var last = leaf.node.ids.last, size = leaf.node.encodedSize, count = leaf.node.count
        var end = index, recordStart = start, full = false
        while end < ids.count {
            let id = ids[end], recordEnd = ends[end]
            guard last.map({ id > $0 }) ?? true else { break }
            guard recordStart >= 0, recordStart <= recordEnd, recordEnd <= bytes.count else { throw invalidEnd(id, recordStart, recordEnd, bytes.count) }
            let length = recordEnd - recordStart
            guard length <= options.maximumInlineRecord else { break }
            let grown = size + LeafNode.entrySize + length
            if grown > options.maximumNodeSize && count > 0 { full = true; break }
            size = grown
            count += 1
            last = id
            end += 1
            recordStart = recordEnd
        }
        if end > index {
            if let journal { for id in ids[index..<end] { try journal.recordInsert(entityID: entityID, id: id) } }
            leaf.node.append(ids: UnsafeBufferPointer(rebasing: ids[index..<end]), bytes: UnsafeRawBufferPointer(rebasing: bytes[start..<recordStart]),
                             ends: UnsafeBufferPointer(rebasing: ends[index..<end]), origin: start)
            root.count += UInt64(end - index)
            markDirty(leafID, .leaf(leaf))
            if nodes.isOverBudget { try writeDirtyNodes() }
        }
        if full {
            // The record that did not fit starts the next leaf, alone, as `place` leaves it.
            let id = ids[end]
            try journal?.recordInsert(entityID: entityID, id: id)
            var right = LeafNode()
            right.data.reserveCapacity(options.maximumNodeSize)
            right.ids.reserveCapacity(leaf.node.count + 1)
            right.ends.reserveCapacity(leaf.node.count + 1)
            right.append(id, bytes: UnsafeRawBufferPointer(rebasing: bytes[recordStart..<ends[end]]), overflow: false)
            root.count += 1
            markDirty(leafID, .leaf(leaf))
            try addRightLeaf(right, after: leafID, path: path, writingLeft: true)
            end += 1
        }
        if nodes.isOverBudget { try writeDirtyNodes() }
        return end - index
    }

    private func invalidEnd(_ id: UInt64, _ start: Int, _ end: Int, _ count: Int) -> RecordTreeError {
        .invalidRecord(entityID: entityID, recordID: id, reason: "its bytes \(start)..<\(end) are not within the run's \(count)")
    }

    /// Puts the stored form of a record (its bytes, or an overflow reference) into its leaf;
    /// indexes and journal were told already — except `journal`, told here of the insert, or of
    /// the update where the stored record is found: a summary whether its bytes change
    /// (`stored` must then be the record's bytes, not an overflow reference), a journal of each
    /// change the old and the new record (`written`, the record's bytes). When the journal
    /// throws (a record that does not decode), the tree is as it was and `stored`'s overflow
    /// pages are freed.
    func place(_ id: UInt64, stored: UnsafeRawBufferPointer, overflow: Bool, mustExist: Bool, mustNotExist: Bool,
               telling journal: HistoryRecorder? = nil, written: UnsafeRawBufferPointer? = nil) throws -> Bool {
        if root.rootPageID == 0 {
            if mustExist { try freeStored(stored, overflow); return false }
            let pageID = try transaction.allocatePageID()
            var node = LeafNode()
            node.append(id, bytes: stored, overflow: overflow)
            markDirty(pageID, .leaf(Leaf(node)))
            root = RecordTreeRoot(rootPageID: pageID, count: 1)
            hint = nil
            return true
        }
        let (leafID, leaf, high) = try findLeafNode(id)
        let (found, index) = leaf.node.search(id)
        if found {
            if mustNotExist { try freeStored(stored, overflow); throw RecordTreeError.duplicateID(id) }
            if let journal, journal.summarizes {
                // An overflowing stored record is longer than any record that fits in a leaf.
                let changed = leaf.node.isOverflow(index) || !leaf.node.bytes(index).withUnsafeBytes { $0.elementsEqual(stored) }
                if changed { journal.recordSummarizedUpdate(entityID: entityID, id: id) }
            } else if let journal {
                try journalUpdate(id, leaf, index, to: written ?? stored, in: journal, freeing: stored, overflow)
            }
            if leaf.node.isOverflow(index) { try freeOverflow(leaf.node, index) }
            leaf.node.replace(at: index, with: stored, overflow: overflow)
        } else {
            if mustExist { try freeStored(stored, overflow); return false }
            try journal?.recordInsert(entityID: entityID, id: id)
            root.count += 1
            if index == leaf.node.count {
                leaf.node.append(id, bytes: stored, overflow: overflow)
            } else {
                leaf.node.insert(id, bytes: stored.assumingMemoryBound(to: UInt8.self), overflow: overflow, at: index)
            }
        }
        markDirty(leafID, .leaf(leaf))
        if leaf.node.encodedSize > options.maximumNodeSize && leaf.node.count > 1 {
            // Appending past the end (ascending ids, the common case) moves only the new record,
            // so sequential inserts fill leaves completely instead of leaving them half full.
            let appended = index == leaf.node.count - 1
            var right = appended ? leaf.node.splitOff(at: index) : leaf.node.splitOff()
            // The next appends fill it: room for a whole leaf at once (its bytes, and as many
            // records as the leaf it split from holds), not a doubling per few records.
            // (`appendPastTheEnd` starts its leaves the same way.)
            if appended {
                right.data.reserveCapacity(options.maximumNodeSize)
                right.ids.reserveCapacity(leaf.node.count + 1)
                right.ends.reserveCapacity(leaf.node.count + 1)
            }
            // A record larger than half a page can leave a half of one split still past its page.
            let oversized = leaf.node.encodedSize > options.maximumNodeSize || right.encodedSize > options.maximumNodeSize
            try addRightLeaf(right, after: leafID, path: try interiorPath(to: id, leaf: leafID), writingLeft: appended && high == nil)
            if oversized, let first = leaf.node.ids.first { try splitWhileOversized(from: first, below: high) }
        }
        if nodes.isOverBudget { try writeDirtyNodes() }
        return true
    }

    /// Splits the leaf whose first id is `first`, and the leaves split from it up to `bound`
    /// (the first id past the range they share; nil: none), in halves by bytes until each fits
    /// in `maximumNodeSize` or holds one record.
    private func splitWhileOversized(from first: UInt64, below bound: UInt64?) throws {
        var id = first
        while true {
            let found = try findLeafRange(id)
            if found.leaf.node.encodedSize > options.maximumNodeSize && found.leaf.node.count > 1 {
                let right = found.leaf.node.splitOff()
                markDirty(found.leafID, .leaf(found.leaf))
                try addRightLeaf(right, after: found.leafID, path: found.path, writingLeft: false)
                continue  // the lower half again
            }
            guard let next = found.high, bound.map({ next < $0 }) ?? true else { return }
            id = next
        }
    }

    /// Tells `journal` of the update of record `index` of `leaf` to `written`; when it throws,
    /// frees `stored`'s overflow pages (the new record's, not placed). Not inlined: `place`
    /// stays as small as without a journal, and its tree walk inlined.
    @inline(never)
    private func journalUpdate(_ id: UInt64, _ leaf: Leaf, _ index: Int, to written: UnsafeRawBufferPointer, in journal: HistoryRecorder,
                               freeing stored: UnsafeRawBufferPointer, _ overflow: Bool) throws {
        do {
            try withStoredBytes(leaf, index) { old in try journal.recordUpdate(entityID: entityID, id: id, old: old, new: written) }
        } catch {
            try freeStored(stored, overflow)
            throw error
        }
    }

    /// Links `right`, split from leaf `leftID` (reached by `path`), into the tree as a new page
    /// after it. `writingLeft`: the split was an append past the end of the tree (a bulk insert
    /// in id order) or packed a leaf a batch of updates rebuilt, which leaves a full leaf behind
    /// that nothing later in the run touches: it is written now, so page writes are spread
    /// evenly over the run (which the page log's frame pipeline overlaps with the caller)
    /// instead of coming in `dirtyBudget` bursts, and it holds no memory.
    func addRightLeaf(_ right: LeafNode, after leftID: UInt64, path: [(UInt64, Int)], writingLeft: Bool) throws {
        hint = nil
        let rightID = try transaction.allocatePageID()
        markDirty(rightID, .leaf(Leaf(right)))
        try insertSeparator(right.ids[0], right: rightID, left: leftID, path: path)
        if writingLeft { try writeNow(leftID) }
    }

    /// Records larger than `maximumInlineRecord` go to overflow pages; the leaf keeps a reference.
    private func storedForm(_ bytes: [UInt8]) throws -> (bytes: [UInt8], overflow: Bool) {
        guard bytes.count > options.maximumInlineRecord else { return (bytes, false) }
        return (try bytes.withUnsafeBytes { try overflowReference(writing: [$0], count: $0.count) }, true)
    }

    private func freeStored(_ stored: UnsafeRawBufferPointer, _ overflow: Bool) throws {
        guard overflow else { return }
        let reference = try OverflowReference.decode(stored)
        for chunk in reference.chunks { try transaction.free(chunk) }
    }

    private func freeOverflow(_ leaf: LeafNode, _ index: Int) throws {
        try Array(leaf.bytes(index)).withUnsafeBytes { try freeStored($0, true) }
    }

    private func insertSeparator(_ separator: UInt64, right: UInt64, left: UInt64, path: [(UInt64, Int)]) throws {
        var separator = separator, right = right, left = left
        var path = path
        while true {
            guard let (parentID, childIndex) = path.popLast() else {
                // The root split: a new root above the two halves.
                let rootID = try transaction.allocatePageID()
                markDirty(rootID, .interior(Interior(InteriorNode(firstIDs: [0, separator], children: [left, right]))))
                root.rootPageID = rootID
                return
            }
            let parent = try loadInterior(parentID)
            parent.node.firstIDs.insert(separator, at: childIndex + 1)
            parent.node.children.insert(right, at: childIndex + 1)
            markDirty(parentID, .interior(parent))
            guard parent.node.encodedSize > options.maximumNodeSize, parent.node.count > 3 else { return }
            let appended = childIndex + 1 == parent.node.count - 1
            var upper = appended ? parent.node.splitOff(at: childIndex + 1) : parent.node.splitOff()
            separator = upper.firstIDs[0]
            upper.firstIDs[0] = 0
            right = try transaction.allocatePageID()
            markDirty(right, .interior(Interior(upper)))
            hint = nil
            left = parentID
        }
    }

    private func collapseRoot() throws {
        while root.rootPageID != 0, case .interior(let interior) = try load(root.rootPageID), interior.node.count == 1 {
            let only = interior.node.children[0]
            try discard(root.rootPageID)
            root.rootPageID = only
            hint = nil
        }
    }
}
