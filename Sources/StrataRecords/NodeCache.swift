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
/// A `ClockTable` under a mutex: O(1) per access, nothing allocated per hit or per eviction;
/// CLOCK (second chance) eviction keeps pages read again since the hand last passed and lets
/// pages read once go first. Thread-safe.
package final class NodeCache: Sendable {
    private typealias Key = ClockTable<any CachedPage>.Key

    private let state: Mutex<ClockTable<any CachedPage>>
    /// The most bytes of pages kept (about: page images only).
    package let budget: Int

    package init(budget: Int = 32 << 20) {
        self.budget = budget
        state = Mutex(ClockTable(budget: budget))
    }

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
        let entry = state.withLock { $0.get(key) }
        // An exact type check, then a cast that costs nothing (the types are final classes).
        guard let entry, ObjectIdentifier(type(of: entry)) == ObjectIdentifier(T.self) else { return nil }
        return unsafeDowncast(entry, to: T.self)
    }

    /// Caches `node`, the verified image of `pageID` written at `lsn`.
    func insert(_ node: any CachedPage, pageID: UInt64, lsn: UInt64) {
        let cost = node.byteCount
        state.withLock { $0.insert(node, for: Key(pageID: pageID, lsn: lsn), cost: cost) }
    }
}
