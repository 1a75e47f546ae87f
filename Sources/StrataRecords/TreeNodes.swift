/// The nodes a tree writer (record or index tree) holds inside one write transaction:
/// modified ones (`dirty`, written when the writer finishes or once they pass `budget`) and
/// unmodified ones read back from the log (`clean`, all forgotten once they pass `budget` —
/// they can be read again). Architecture.md, invariant 19.
///
/// `Node` is the writer's node handle (a class, or an enum of classes), so a node changed in
/// place stays the one kept here.
struct TreeNodes<Node> {
    private var dirty: [UInt64: Node] = [:]
    private var clean: [UInt64: Node] = [:]
    private var dirtyBytes = 0
    private var cleanBytes = 0
    /// The most bytes kept of each kind.
    let budget: Int
    /// What a dirty node counts for (its encoded size is known only when it is written).
    let nodeSize: Int

    init(budget: Int, nodeSize: Int) {
        self.budget = budget
        self.nodeSize = nodeSize
    }

    /// The node held for `pageID`, modified or not.
    func node(_ pageID: UInt64) -> Node? { dirty[pageID] ?? clean[pageID] }

    /// The node held for `pageID` if it is modified (not yet written).
    func dirtyNode(_ pageID: UInt64) -> Node? { dirty[pageID] }

    /// Whether the modified nodes passed the budget and should be written early.
    var isOverBudget: Bool { dirtyBytes > budget }

    /// Keeps an unmodified node of `bytes` bytes; returns true when the clean nodes were all
    /// forgotten first to stay within the budget (anything derived from them is stale).
    @discardableResult
    mutating func remember(_ pageID: UInt64, _ node: Node, bytes: Int) -> Bool {
        var forgot = false
        if cleanBytes + bytes > budget {
            clean.removeAll(keepingCapacity: true)
            cleanBytes = 0
            forgot = true
        }
        clean[pageID] = node
        cleanBytes += bytes
        return forgot
    }

    /// Records that the node of `pageID` was modified.
    mutating func markDirty(_ pageID: UInt64, _ node: Node) {
        if dirty.updateValue(node, forKey: pageID) == nil {
            clean[pageID] = nil
            dirtyBytes += nodeSize
        }
    }

    /// Removes the node of `pageID` from the modified ones and returns it (nil when it is not
    /// modified), for a writer that writes it at once; it is not kept as an unmodified node.
    mutating func takeDirty(_ pageID: UInt64) -> Node? {
        guard let node = dirty.removeValue(forKey: pageID) else { return nil }
        dirtyBytes -= nodeSize
        return node
    }

    /// Drops the node of `pageID` (its page is freed).
    mutating func forget(_ pageID: UInt64) {
        dirty[pageID] = nil
        clean[pageID] = nil
    }

    /// Writes every modified node in page order (`write` returns the bytes it wrote) and keeps
    /// them as unmodified ones; returns true when clean nodes were forgotten on the way.
    @discardableResult
    mutating func writeDirty(_ write: (UInt64, Node) throws -> [UInt8]) throws -> Bool {
        var forgot = false
        for (pageID, node) in dirty.sorted(by: { $0.key < $1.key }) {
            let bytes = try write(pageID, node)
            if remember(pageID, node, bytes: bytes.count) { forgot = true }
        }
        dirty.removeAll(keepingCapacity: true)
        dirtyBytes = 0
        return forgot
    }
}
