import Synchronization
import StrataFormat
import StrataPageLog

/// A page image the cache keeps: verified and decoded once, then shared by every reader.
protocol CachedPage: AnyObject, Sendable {
    /// The page's size, counted against the cache's budget.
    var byteCount: Int { get }
}

/// A node page read from the log, verified once (checksum by the page log, structure here)
/// and then shared by every reader.
package final class CachedNode: CachedPage {
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

    var byteCount: Int { bytes.count }
}

/// Verified node pages shared by all readers of a store, keyed by page id and the LSN of the
/// page image — an image never changes, so an entry is valid for every snapshot whose page
/// table names that LSN.
///
/// Eviction is by generations, O(1) per access: new entries go to the young generation; a hit
/// in the old generation moves the entry back to the young one; when the young generation
/// passes half the budget, the old one is dropped and the young one becomes old. Entries used
/// within the last half-budget of inserts therefore survive. Thread-safe.
package final class NodeCache: Sendable {
    private struct Key: Hashable {
        var pageID: UInt64
        var lsn: UInt64

        /// One word to hash (the hasher's cost is per word): page ids and LSNs are far below
        /// 2^40, and equal keys always hash equally whatever they are.
        func hash(into hasher: inout Hasher) { hasher.combine(pageID &* 0x9E37_79B9_7F4A_7C15 ^ lsn) }
    }

    private struct State {
        var young: [Key: any CachedPage] = [:]
        var old: [Key: any CachedPage] = [:]
        var youngBytes = 0
    }

    private let state = Mutex(State())
    /// The most bytes of pages kept (about; the two generations together).
    package let budget: Int

    package init(budget: Int = 32 << 20) { self.budget = budget }

    /// The node at `pageID` in `snapshot`, from the cache or read and verified; a node read is
    /// cached only when `admit` says so (scans admit interior nodes only, so one pass over a
    /// large tree does not evict what point lookups use).
    func node(_ pageID: UInt64, in snapshot: Snapshot, admit: (CachedNode) -> Bool = { _ in true }) throws -> CachedNode {
        try page(pageID, in: snapshot, make: { try CachedNode(pageID: pageID, bytes: $0) }, admit: admit)
    }

    /// The page at `pageID` as `T`, from the cache or read and made by `make` (which verifies
    /// it). An entry of another type under the same key (a corrupt reference to a page of
    /// another kind) is made again, so `make` reports it.
    func page<T: CachedPage>(_ pageID: UInt64, in snapshot: Snapshot, make: ([UInt8]) throws -> T,
                             admit: (T) -> Bool = { _ in true }) throws -> T {
        if let node: T = try cached(pageID, in: snapshot) { return node }
        guard let page = try snapshot.read(pageID) else { throw RecordTreeError.missingPage(pageID: pageID) }
        let node = try make(page.bytes)
        if admit(node) { insert(node, pageID: pageID, lsn: page.lsn) }
        return node
    }

    /// The page at `pageID` in `snapshot` when it is cached as a `T`, else nil.
    /// - Throws: `RecordTreeError.missingPage` when the snapshot has no such page.
    func cached<T: CachedPage>(_ pageID: UInt64, in snapshot: Snapshot) throws -> T? {
        let location = snapshot.location(of: pageID)
        guard !location.isNone else { throw RecordTreeError.missingPage(pageID: pageID) }
        let key = Key(pageID: pageID, lsn: location.lsn)
        let budget = budget
        let entry = state.withLock { state -> (any CachedPage)? in
            if let node = state.young[key] { return node }
            guard let node = state.old.removeValue(forKey: key) else { return nil }
            Self.insert(node, key, into: &state, budget: budget)
            return node
        }
        // An exact type check, then a cast that costs nothing (the types are final classes).
        guard let entry, ObjectIdentifier(type(of: entry)) == ObjectIdentifier(T.self) else { return nil }
        return unsafeDowncast(entry, to: T.self)
    }

    /// Caches `node`, the verified image of `pageID` written at `lsn`.
    func insert(_ node: any CachedPage, pageID: UInt64, lsn: UInt64) {
        let budget = budget
        state.withLock { Self.insert(node, Key(pageID: pageID, lsn: lsn), into: &$0, budget: budget) }
    }

    private static func insert(_ node: any CachedPage, _ key: Key, into state: inout State, budget: Int) {
        guard state.young.updateValue(node, forKey: key) == nil else { return }
        state.youngBytes += node.byteCount
        if state.youngBytes > budget / 2 {
            state.old = state.young
            state.young = Dictionary(minimumCapacity: state.old.count)  // no regrowth while it fills again
            state.youngBytes = 0
        }
    }
}
