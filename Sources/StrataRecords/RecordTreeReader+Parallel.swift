import Dispatch
import Synchronization
import StrataPageLog
import StrataSchema

extension RecordTreeReader {
    /// `scan` with a filter, split across up to `threads` threads: the threads read, verify
    /// and decompress the leaves and run `filter` on every record; `body` gets — on the calling
    /// thread, in id order — each record whose filter result is not false, with that result,
    /// until it returns false. The records passed are copies, valid during the call only.
    ///
    /// The leaves are cut into chunks of consecutive subtrees (the children of the lowest
    /// interior nodes), claimed one at a time by the threads, a round at a time; a round's records that passed
    /// the filter are held until `body` has seen them, so memory is bounded by a round
    /// (`chunksPerThread × threads` chunks of `leavesPerChunk` leaves), not by the tree.
    /// `body` runs between rounds, so it may stop the scan early (the round it stops in is
    /// read whole). An error is thrown where a sequential scan would throw it: after `body`
    /// has seen every record before it. With one thread, or a tree of one leaf, the scan runs
    /// on the calling thread alone.
    ///
    /// Overflowed records: with a `prefixFilter` (the filter told from a record's first bytes,
    /// `RecordCondition.evaluate(prefix:recordLength:)`), an overflowed record is first judged
    /// from the start of its first chunk (`decideOverflowed`): rejected, it is not assembled;
    /// accepted and `readsAccepted` false (a count), `body` gets it with empty bytes and `true`,
    /// unassembled. Otherwise — undecided, needed whole, or its first chunk too short — it is
    /// assembled and filtered as any record.
    package func scanFiltered(threads: Int, filter: RecordFilter,
                              prefixFilter: (@Sendable (UnsafeRawBufferPointer, Int) -> RecordCondition.PrefixAnswer)? = nil,
                              readsAccepted: Bool = true,
                              _ body: (UInt64, UnsafeRawBufferPointer, Bool?) throws -> Bool) throws {
        guard root.rootPageID != 0 else { return }
        let units = threads > 1 ? try subtrees() : nil
        guard let units, units.count > 1 else {
            try withoutActuallyEscaping(body) { body in
                let overflowed = overflowHook(prefixFilter, readsAccepted: readsAccepted) { id in
                    try body(id, UnsafeRawBufferPointer(start: nil, count: 0), true)
                }
                var session = filter.session()
                try scanRuns(pages: SequentialPageReader(snapshot, mapped: true), overflowed: overflowed) { run in
                    try run.forEachRecord { index, bytes in
                        let decided = session.evaluate(bytes)
                        return try decided == false || body(run.id(index), bytes, decided)
                    }
                }
            }
            return
        }
        let chunkCount = (units.count + Self.leavesPerChunk - 1) / Self.leavesPerChunk
        let roundChunks = Self.chunksPerThread * threads
        var firstChunk = 0
        while firstChunk < chunkCount {
            let chunks = min(roundChunks, chunkCount - firstChunk)
            let outputs = (0..<chunks).map { _ in FilteredChunk() }
            let base = firstChunk
            let reader = self
            // `threads` workers (the calling thread one of them) take the round's chunks one
            // at a time, in order, as each is free: a worker that starts late (a thread's
            // wake-up) leaves the chunks to the others instead of holding back the round.
            let claimed = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: min(threads, chunks)) { _ in
                while true {
                    let index = claimed.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < chunks else { return }
                    let chunk = base + index
                    let slice = units[(chunk * Self.leavesPerChunk)..<min(units.count, (chunk + 1) * Self.leavesPerChunk)]
                    outputs[index].fill(reader, subtrees: slice, filter: filter, prefixFilter: prefixFilter, readsAccepted: readsAccepted)
                }
            }
            for output in outputs {
                if try !output.deliver(body) { return }
            }
            firstChunk += chunks
        }
    }

    /// The `overflowed` hook of a filtered scan's `scanRuns` (see `scanFiltered`): takes an
    /// overflowed record its first bytes reject (skipped) or accept when `readsAccepted` is
    /// false (passed to `accepted`, whose answer is the hook's); nil without a `prefixFilter`.
    func overflowHook(_ prefixFilter: ((UnsafeRawBufferPointer, Int) -> RecordCondition.PrefixAnswer)?, readsAccepted: Bool,
                      accepted: @escaping (UInt64) throws -> Bool) -> ((UInt64, UnsafeRawBufferPointer, UInt64) throws -> Bool?)? {
        guard let prefixFilter else { return nil }
        return { id, stored, pageID in
            switch try decideOverflowed(stored, pageID: pageID, prefixFilter) {
            case false??: return true
            case true?? where !readsAccepted: return try accepted(id)
            default: return nil
            }
        }
    }

    /// Consecutive leaves a thread reads as one chunk.
    static let leavesPerChunk = 16
    /// Chunks per thread in one round.
    static let chunksPerThread = 16

    /// The roots of the tree's lowest subtrees, in id order: the children of every interior
    /// node whose first child is a leaf (each a leaf in a balanced tree, and scanned whole if
    /// not); nil when the root is a leaf. Interior nodes are read through the cache.
    private func subtrees() throws -> [UInt64]? {
        guard try !isLeaf(root.rootPageID) else { return nil }
        var units: [UInt64] = []
        var stack: [(pageID: UInt64, depth: Int)] = [(root.rootPageID, 0)]
        while let (pageID, depth) = stack.popLast() {
            guard depth < 64 else { throw RecordTreeError.corruptNode(pageID: pageID, reason: "tree deeper than 64 levels") }
            let node = try cache.node(pageID, in: snapshot)
            guard node.kind == .interior else {
                units.append(pageID)  // a leaf where an interior node was expected: scanned as it is
                continue
            }
            let children = node.bytes.withUnsafeBytes { raw in (0..<node.count).map { Self.child(raw, $0) } }
            guard let first = children.first else { continue }
            if try isLeaf(first) {
                units.append(contentsOf: children)
            } else {
                for child in children.reversed() { stack.append((child, depth + 1)) }
            }
        }
        return units
    }

    /// Whether page `pageID` is a leaf: its first byte, from the cache or read in part.
    private func isLeaf(_ pageID: UInt64) throws -> Bool {
        if let node: CachedNode = try cache.cached(pageID, in: snapshot) { return node.kind == .leaf }
        var kind: UInt8 = 0
        let present = try snapshot.withPartialPage(pageID) { page in
            if page.count > 0 { kind = try page.prefix(1)[0] }
        }
        guard present else { throw RecordTreeError.missingPage(pageID: pageID) }
        return kind == NodeKind.leaf.rawValue
    }
}

/// What one thread of `scanFiltered` found in one chunk: the records its filter did not
/// reject (ids, results, bytes back to back), or the error that stopped it after them.
///
/// `@unchecked Sendable`: each chunk is filled by exactly one worker of a
/// `concurrentPerform` (the one whose atomic increment claimed it), and read by the calling
/// thread only after that call returned (which orders the two).
private final class FilteredChunk: @unchecked Sendable {
    private var ids: [UInt64] = []
    private var decided: [Bool?] = []
    private var ends: [Int] = []
    private var bytes: [UInt8] = []
    private var error: (any Error)?

    func fill(_ reader: RecordTreeReader, subtrees: ArraySlice<UInt64>, filter: RecordFilter,
              prefixFilter: ((UnsafeRawBufferPointer, Int) -> RecordCondition.PrefixAnswer)?, readsAccepted: Bool) {
        let pages = SequentialPageReader(reader.snapshot, mapped: true)
        var session = filter.session()
        do {
            for pageID in subtrees {
                let subtree = RecordTreeReader(snapshot: reader.snapshot, root: RecordTreeRoot(rootPageID: pageID), cache: reader.cache)
                // An overflowed record accepted from its first bytes, not read: no bytes kept.
                let overflowed = subtree.overflowHook(prefixFilter, readsAccepted: readsAccepted) { [self] id in
                    ids.append(id)
                    decided.append(true)
                    ends.append(bytes.count)
                    return true
                }
                try subtree.scanRuns(pages: pages, overflowed: overflowed) { run in
                    run.forEachRecord { index, record in
                        let result = session.evaluate(record)
                        guard result != false else { return true }
                        ids.append(run.id(index))
                        decided.append(result)
                        bytes.append(contentsOf: record)
                        ends.append(bytes.count)
                        return true
                    }
                }
            }
        } catch {
            self.error = error
        }
    }

    /// Passes the records to `body` in order; then throws the chunk's error, if any. False
    /// when `body` stopped.
    func deliver(_ body: (UInt64, UnsafeRawBufferPointer, Bool?) throws -> Bool) throws -> Bool {
        try bytes.withUnsafeBytes { raw in
            var start = 0
            for index in ids.indices {
                if try !body(ids[index], UnsafeRawBufferPointer(rebasing: raw[start..<ends[index]]), decided[index]) { return false }
                start = ends[index]
            }
            if let error { throw error }
            return true
        }
    }
}
