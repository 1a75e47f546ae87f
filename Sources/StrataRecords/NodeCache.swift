import Synchronization
import StrataPageLog

/// Decompressed, verified node pages shared by all readers of a store, keyed by page id and
/// the LSN of the page image — an image never changes, so a cached entry is valid for every
/// snapshot whose page table names that LSN. Evicts least recently used entries past a byte
/// budget. Thread-safe.
package final class NodeCache: Sendable {
    private struct Key: Hashable {
        var pageID: UInt64
        var lsn: UInt64
    }

    private struct State {
        var entries: [Key: (bytes: [UInt8], tick: UInt64)] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    private let state = Mutex(State())
    /// The most bytes of pages kept.
    package let budget: Int

    package init(budget: Int = 32 << 20) { self.budget = budget }

    /// The bytes of a page in `snapshot`, from the cache or read (and cached).
    package func page(_ pageID: UInt64, in snapshot: Snapshot) throws -> [UInt8]? {
        let location = snapshot.location(of: pageID)
        guard !location.isNone else { return nil }
        let key = Key(pageID: pageID, lsn: location.lsn)
        if let bytes = state.withLock({ state -> [UInt8]? in
            state.tick += 1
            guard var entry = state.entries[key] else { return nil }
            entry.tick = state.tick
            state.entries[key] = entry
            return entry.bytes
        }) {
            return bytes
        }
        guard let page = try snapshot.read(pageID) else { return nil }
        state.withLock { state in
            state.tick += 1
            if state.entries.updateValue((page.bytes, state.tick), forKey: key) == nil { state.bytes += page.bytes.count }
            if state.bytes > budget { Self.evict(&state, to: budget * 3 / 4) }
        }
        return page.bytes
    }

    private static func evict(_ state: inout State, to target: Int) {
        let oldestFirst = state.entries.sorted { $0.value.tick < $1.value.tick }
        for (key, entry) in oldestFirst {
            guard state.bytes > target else { break }
            state.entries[key] = nil
            state.bytes -= entry.bytes.count
        }
    }
}
