import Synchronization
import StrataIO

/// Record tree nodes the latest write transactions wrote, as the writers held them, keyed by
/// page id and the LSN of the image written: the next transaction that changes the same leaf
/// — the common case of small commits, one after another, each changing a record or two and
/// appending an entry to the history journal — starts from the node instead of reading its
/// frame back, verifying it, decompressing it and decoding it (Architecture.md, invariant 19).
///
/// An entry is used only for a page whose current image has exactly that LSN (LSNs only grow
/// and an image never changes), and only nodes of committed transactions are kept
/// (`RecordStore.write` hands them over after the commit), so a node from here is the page's
/// image, decoded. Writers get a copy: a node's arrays are shared until the writer changes
/// them (copy on write), and the kept node stays as it was. At most `capacity` nodes are kept,
/// the most recently written. Thread-safe.
package final class WrittenNodes: Sendable {
    /// A node's content.
    enum Image: Sendable {
        case leaf(LeafNode)
        case interior(InteriorNode)
    }

    private struct State {
        /// Page id → the image kept, its LSN, and when it was kept (a count of the nodes kept).
        var entries: [UInt64: (lsn: UInt64, image: Image, kept: UInt64)] = [:]
        var kept: UInt64 = 0
        /// How many times a node was handed out.
        var hits = 0
    }

    /// The most nodes kept.
    package let capacity: Int
    private let state = Lock(State())

    package init(capacity: Int = 32) {
        self.capacity = capacity
    }

    /// The node of page `pageID` when the image kept is the one with LSN `lsn`.
    func image(of pageID: UInt64, lsn: UInt64) -> Image? {
        state.withLock { state in
            guard let entry = state.entries[pageID], entry.lsn == lsn else { return nil }
            state.hits += 1
            return entry.image
        }
    }

    /// Keeps the nodes a committed transaction of LSN `lsn` wrote (`images`, in the order
    /// written: a later image of a page replaces an earlier one), forgetting the ones kept
    /// longest ago past `capacity`.
    func keep(_ images: [(pageID: UInt64, image: Image)], lsn: UInt64) {
        guard capacity > 0, !images.isEmpty else { return }
        state.withLock { state in
            for (pageID, image) in images.suffix(capacity) {
                state.kept += 1
                state.entries[pageID] = (lsn, image, state.kept)
            }
            guard state.entries.count > capacity else { return }
            let oldest = state.entries.sorted { $0.value.kept < $1.value.kept }.prefix(state.entries.count - capacity)
            for (pageID, _) in oldest { state.entries[pageID] = nil }
        }
    }

    /// How many nodes are kept (tests).
    package var count: Int { state.withLock { $0.entries.count } }

    /// How many times a writer took a node from here instead of reading its page (tests).
    package var hits: Int { state.withLock { $0.hits } }
}
