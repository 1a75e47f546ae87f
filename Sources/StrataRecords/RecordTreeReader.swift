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

    private func node(_ pageID: UInt64) throws -> [UInt8] {
        guard let bytes = try cache.page(pageID, in: snapshot) else { throw RecordTreeError.missingPage(pageID: pageID) }
        return bytes
    }

    /// The record with this id, or nil.
    package func get(_ id: UInt64) throws -> [UInt8]? {
        guard root.rootPageID != 0 else { return nil }
        var pageID = root.rootPageID
        for _ in 0..<64 {
            let bytes = try node(pageID)
            let next: UInt64? = try bytes.withUnsafeBytes { raw in
                do {
                    switch raw.first.flatMap(NodeKind.init(rawValue:)) {
                    case .interior:
                        let count = try InteriorNode.validate(raw)
                        let index = InteriorNode.childIndex(for: id, count: count) {
                            UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: InteriorNode.headerSize + $0 * InteriorNode.entrySize, as: UInt64.self))
                        }
                        return UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: InteriorNode.headerSize + index * InteriorNode.entrySize + 8, as: UInt64.self))
                    case .leaf:
                        return nil
                    case nil:
                        throw FormatError("unknown node kind")
                    }
                } catch let error as FormatError {
                    throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
                }
            }
            guard let next else { return try record(id, inLeaf: bytes, pageID: pageID) }
            pageID = next
        }
        throw RecordTreeError.corruptNode(pageID: pageID, reason: "tree deeper than 64 levels")
    }

    private func record(_ id: UInt64, inLeaf bytes: [UInt8], pageID: UInt64) throws -> [UInt8]? {
        let found: (bytes: [UInt8], overflow: Bool)? = try bytes.withUnsafeBytes { raw in
            let count: Int
            do { count = try LeafView.validate(raw) } catch let error as FormatError {
                throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
            }
            let view = LeafView(validated: raw, count: count)
            let (found, index) = view.search(id)
            guard found else { return nil }
            return (Array(view.bytes(index)), view.isOverflow(index))
        }
        guard let found else { return nil }
        guard found.overflow else { return found.bytes }
        return try resolveOverflow(found.bytes, pageID: pageID)
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
    package func scan(from start: UInt64 = 0, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard root.rootPageID != 0 else { return }
        var stack: [(pageID: UInt64, next: Int)] = [(root.rootPageID, -1)]
        while var top = stack.popLast() {
            let bytes = try node(top.pageID)
            let proceed: Bool = try bytes.withUnsafeBytes { raw in
                do {
                    switch raw.first.flatMap(NodeKind.init(rawValue:)) {
                    case .interior:
                        let count = try InteriorNode.validate(raw)
                        let first = { (index: Int) in
                            UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: InteriorNode.headerSize + index * InteriorNode.entrySize, as: UInt64.self))
                        }
                        if top.next < 0 { top.next = InteriorNode.childIndex(for: start, count: count, firstID: first) }
                        guard top.next < count else { return true }
                        let child = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: InteriorNode.headerSize + top.next * InteriorNode.entrySize + 8, as: UInt64.self))
                        stack.append((top.pageID, top.next + 1))
                        guard stack.count < 64 else { throw FormatError("tree deeper than 64 levels") }
                        stack.append((child, -1))
                        return true
                    case .leaf:
                        let count = try LeafView.validate(raw)
                        let view = LeafView(validated: raw, count: count)
                        var index = view.search(start).index
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
                    case nil:
                        throw FormatError("unknown node kind")
                    }
                } catch let error as FormatError {
                    throw RecordTreeError.corruptNode(pageID: top.pageID, reason: error.reason)
                }
            }
            if !proceed { return }
        }
    }
}
