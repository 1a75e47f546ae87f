import Synchronization
import StrataFormat
import StrataPageLog

/// A node page read from the log, verified once (checksum by the page log, structure here)
/// and then shared by every reader.
package final class CachedNode: Sendable {
    let bytes: [UInt8]
    let kind: NodeKind
    let count: Int

    init(pageID: UInt64, bytes: [UInt8]) throws {
        do {
            let (kind, count) = try bytes.withUnsafeBytes { raw -> (NodeKind, Int) in
                switch raw.first.flatMap(NodeKind.init(rawValue:)) {
                case .leaf: return (.leaf, try LeafView.validate(raw))
                case .interior: return (.interior, try InteriorNode.validate(raw))
                case nil: throw FormatError("unknown record tree node kind", at: 0)
                }
            }
            self.kind = kind
            self.count = count
        } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
        }
        self.bytes = bytes
    }
}

/// Verified node pages shared by all readers of a store, keyed by page id and the LSN of the
/// page image — an image never changes, so an entry is valid for every snapshot whose page
/// table names that LSN. Evicts the least recently used entries past a byte budget.
/// Thread-safe.
package final class NodeCache: Sendable {
    private struct Key: Hashable {
        var pageID: UInt64
        var lsn: UInt64
    }

    private struct Entry {
        var node: CachedNode
        var tick: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    private let state = Mutex(State())
    /// The most bytes of pages kept.
    package let budget: Int

    package init(budget: Int = 32 << 20) { self.budget = budget }

    /// The node at `pageID` in `snapshot`, from the cache or read, verified and cached.
    func node(_ pageID: UInt64, in snapshot: Snapshot) throws -> CachedNode {
        let location = snapshot.location(of: pageID)
        guard !location.isNone else { throw RecordTreeError.missingPage(pageID: pageID) }
        let key = Key(pageID: pageID, lsn: location.lsn)
        if let node = state.withLock({ state -> CachedNode? in
            state.tick += 1
            let tick = state.tick
            return state.entries[key].map { entry in
                state.entries[key]?.tick = tick
                return entry.node
            }
        }) {
            return node
        }
        guard let page = try snapshot.read(pageID) else { throw RecordTreeError.missingPage(pageID: pageID) }
        let node = try CachedNode(pageID: pageID, bytes: page.bytes)
        state.withLock { state in
            state.tick += 1
            if state.entries.updateValue(Entry(node: node, tick: state.tick), forKey: key) == nil { state.bytes += node.bytes.count }
            if state.bytes > budget { Self.evict(&state, to: budget * 3 / 4) }
        }
        return node
    }

    private static func evict(_ state: inout State, to target: Int) {
        let oldestFirst = state.entries.sorted { $0.value.tick < $1.value.tick }
        for (key, entry) in oldestFirst {
            guard state.bytes > target else { break }
            state.entries[key] = nil
            state.bytes -= entry.node.bytes.count
        }
    }
}
