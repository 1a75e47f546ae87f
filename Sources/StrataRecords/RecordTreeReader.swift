import StrataFormat
import StrataPageLog

/// Reads one record tree in a snapshot. Thread-safe (a value over an immutable snapshot and a
/// thread-safe cache).
package struct RecordTreeReader: Sendable {
    package let snapshot: Snapshot
    package let root: RecordTreeRoot
    package let cache: NodeCache

    package init(snapshot: Snapshot, root: RecordTreeRoot, cache: NodeCache) {
        self.snapshot = snapshot
        self.root = root
        self.cache = cache
    }

    /// The record with this id, or nil.
    package func get(_ id: UInt64) throws -> [UInt8]? {
        try withRecord(id) { Array($0) }
    }

    /// Calls `body` with the bytes of the record with this id — in place in the cached leaf,
    /// uncopied (valid during the call only) — and returns what it returns; nil when there is
    /// no such record.
    package func withRecord<T>(_ id: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        guard root.rootPageID != 0 else { return nil }
        var pageID = root.rootPageID
        for _ in 0..<64 {
            let node = try cache.node(pageID, in: snapshot)
            switch node.kind {
            case .interior:
                pageID = node.bytes.withUnsafeBytes { raw in
                    let index = InteriorNode.childIndex(for: id, count: node.count) { Self.firstID(raw, $0) }
                    return Self.child(raw, index)
                }
            case .leaf:
                // (found, overflow reference, body's answer)
                let found: (Bool, [UInt8]?, T?) = try node.bytes.withUnsafeBytes { raw in
                    let view = LeafView(validated: raw, count: node.count)
                    let (found, index) = view.search(id)
                    guard found else { return (false, nil, nil) }
                    return view.isOverflow(index) ? (true, Array(view.bytes(index)), nil) : (true, nil, try body(view.bytes(index)))
                }
                guard found.0 else { return nil }
                if let reference = found.1 { return try resolveOverflow(reference, pageID: pageID).withUnsafeBytes(body) }
                return found.2
            }
        }
        throw RecordTreeError.corruptNode(pageID: pageID, reason: "tree deeper than 64 levels")
    }

    static func firstID(_ raw: UnsafeRawBufferPointer, _ index: Int) -> UInt64 {
        UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: InteriorNode.headerSize + index * InteriorNode.entrySize, as: UInt64.self))
    }

    static func child(_ raw: UnsafeRawBufferPointer, _ index: Int) -> UInt64 {
        UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: InteriorNode.headerSize + index * InteriorNode.entrySize + 8, as: UInt64.self))
    }

    private func resolveOverflow(_ stored: [UInt8], pageID: UInt64) throws -> [UInt8] {
        let reference: OverflowReference
        do { reference = try stored.withUnsafeBytes { try OverflowReference.decode($0) } } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
        }
        return try OverflowReader.assemble(reference) { try snapshot.read($0)?.bytes }
    }

    /// Calls `body` with every record in id order, starting at `start`, until it returns false.
    /// The bytes passed are valid only during the call (overflowed records are assembled first).
    ///
    /// Leaves not in the cache are read through a `SequentialPageReader` (windowed reads, one
    /// reused decompression buffer) and are not cached, so one pass over a large tree neither
    /// allocates per leaf nor evicts what point lookups use; interior nodes are cached.
    package func scan(from start: UInt64 = 0, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard root.rootPageID != 0 else { return }
        let pages = SequentialPageReader(snapshot)
        var stack: [(pageID: UInt64, next: Int)] = [(root.rootPageID, -1)]
        while let top = stack.popLast() {
            guard stack.count < 64 else { throw RecordTreeError.corruptNode(pageID: top.pageID, reason: "tree deeper than 64 levels") }
            // A leaf's records; false when `body` stopped the scan.
            func leaf(_ raw: UnsafeRawBufferPointer, count: Int) throws -> Bool {
                let view = LeafView(validated: raw, count: count)
                var index = start == 0 ? 0 : view.search(start).index
                while index < count {
                    if view.isOverflow(index) {
                        let whole = try resolveOverflow(Array(view.bytes(index)), pageID: top.pageID)
                        if try !whole.withUnsafeBytes({ try body(view.id(index), $0) }) { return false }
                    } else if try !body(view.id(index), view.bytes(index)) {
                        return false
                    }
                    index += 1
                }
                return true
            }
            func interior(_ node: CachedNode) {
                let next = top.next >= 0 ? top.next : node.bytes.withUnsafeBytes { raw in
                    InteriorNode.childIndex(for: start, count: node.count) { Self.firstID(raw, $0) }
                }
                guard next < node.count else { return }
                stack.append((top.pageID, next + 1))
                stack.append((node.bytes.withUnsafeBytes { Self.child($0, next) }, -1))
            }
            if let node: CachedNode = try cache.cached(top.pageID, in: snapshot) {
                switch node.kind {
                case .interior: interior(node)
                case .leaf: if try !node.bytes.withUnsafeBytes({ try leaf($0, count: node.count) }) { return }
                }
                continue
            }
            let proceed = try pages.withPage(top.pageID) { raw -> Bool in
                guard raw.first == NodeKind.leaf.rawValue else {
                    let node = try CachedNode(pageID: top.pageID, bytes: Array(raw))
                    cache.insert(node, pageID: top.pageID, lsn: snapshot.location(of: top.pageID).lsn)
                    interior(node)
                    return true
                }
                let count: Int
                do { count = try LeafView.validate(raw) } catch let error as FormatError {
                    throw RecordTreeError.corruptNode(pageID: top.pageID, reason: error.reason)
                }
                return try leaf(raw, count: count)
            }
            guard let proceed else { throw RecordTreeError.missingPage(pageID: top.pageID) }
            if !proceed { return }
        }
    }
}
