import Synchronization
import StrataFormat
import StrataIO
import StrataPageLog

/// A page image the cache keeps: verified and decoded once, then shared by every reader.
protocol CachedPage: Sendable {
    /// The page's size, counted against the cache's budget.
    var byteCount: Int { get }
    /// The page as `Self` when it is one (no dynamic cast on the lookup path).
    static func cast(_ page: any CachedPage) -> Self?
    /// The page as a record tree node, when it is one.
    var asNode: CachedNode? { get }
}

extension CachedPage {
    var asNode: CachedNode? { nil }
}

/// A node page read from the log, verified once (checksum by the page log, structure here)
/// and then shared by every reader.
///
/// A value, not an object: the cache's entry holds the node's fields and a reference to its
/// bytes, so a lookup that finds it cached goes from the entry straight to the bytes (the
/// array's storage: its header, then the node) — one memory access fewer than through an
/// object holding the array (read-by-id: most cached lookups miss the CPU caches there).
package struct CachedNode: CachedPage {
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
    var asNode: CachedNode? { self }
    static func cast(_ page: any CachedPage) -> CachedNode? { page.asNode }
}

/// Verified node pages shared by all readers of a store, keyed by page id and the LSN of the
/// page image — an image never changes, so an entry is valid for every snapshot whose page
/// table names that LSN.
///
/// A `ClockTable` under a mutex: O(1) per access, nothing allocated per hit or per eviction;
/// CLOCK (second chance) eviction keeps pages read again since the hand last passed and lets
/// pages read once go first. Point lookups (`probe`) admit a page on its second miss only
/// (a `MissFilter` remembers recent misses), so a page read once costs no allocation and
/// evicts nothing; once the cache is full, only a page looked up clearly more often than the
/// one it would evict (a `FrequencySketch`, TinyLFU, with a margin: `admissionMargin`).
/// Thread-safe.
package final class NodeCache: Sendable {
    private typealias Key = ClockTable<any CachedPage>.Key

    private struct State {
        var table: ClockTable<any CachedPage>
        var misses: MissFilter
        var frequencies: FrequencySketch
    }

    /// How many more recent lookups than its victim a page needs to enter a full cache.
    static let admissionMargin = 2

    private let state: Lock<State>
    /// The most bytes of pages kept (about: page images only).
    package let budget: Int
    /// How the readers sharing this cache (one store's) read overflowed records.
    package let overflowReads = OverflowReadCounts()

    package init(budget: Int = 32 << 20) {
        self.budget = budget
        state = Lock(State(table: ClockTable(budget: budget), misses: MissFilter(slots: budget / 4096),
                            frequencies: FrequencySketch(capacity: budget / 4096)))
    }

    /// The node at `pageID` in `snapshot`, from the cache or read and verified; a node read is
    /// cached only when `admit` says so (scans admit interior nodes only, so one pass over a
    /// large tree does not evict what point lookups use).
    func node(_ pageID: UInt64, in snapshot: Snapshot, admit: (CachedNode) -> Bool = { _ in true }) throws -> CachedNode {
        try page(pageID, in: snapshot, make: { try CachedNode(pageID: pageID, bytes: $0) }, admit: admit)
    }

    /// What `probe` found.
    package enum Probe {
        /// The node is cached.
        case hit(CachedNode)
        /// Not cached, and missed recently: read it whole and cache it (`node`).
        case admit
        /// Not cached, first miss (recently): read what is needed without caching it.
        case bypass
    }

    /// Looks `pageID` up for a point lookup, counting a leaf's lookup in the frequency sketch. A
    /// miss is remembered; the page's first miss (while remembered) answers `.bypass`, its
    /// second `.admit` while the cache has room — and once it is full, only when the page was
    /// looked up at least twice more lately than the page its admission would evict (TinyLFU
    /// with a margin), else `.bypass` again: a full cache keeps the pages looked up most. The
    /// margin: the sketch's estimates are approximate, and swapping two pages about as popular
    /// as each other costs a whole page decode and an eviction for nothing (read-by-id, 32 MiB
    /// cache: −4 to −8 % with uniform ids, −11 % with skewed ones, against TinyLFU's plain lead
    /// of one; a lead of three was no better than one).
    /// - Throws: `RecordTreeError.missingPage` when the snapshot has no such page.
    package func probe(_ pageID: UInt64, in snapshot: Snapshot) throws -> Probe {
        let location = try snapshot.location(of: pageID)
        guard !location.isNone else { throw RecordTreeError.missingPage(pageID: pageID) }
        let key = Key(pageID: pageID, lsn: location.lsn)
        return state.withLock { state -> Probe in
            let hash = ClockTable<any CachedPage>.hash(key)
            if let entry = state.table.withObject(key, { $0.asNode }) {
                guard let node = entry else {
                    return .admit  // another kind of page under this key: `node` reports it
                }
                // Interior nodes are always cached: only leaves compete for admission, so
                // only their lookups are counted.
                if node.kind == .leaf { state.frequencies.increment(hash) }
                return .hit(node)
            }
            state.frequencies.increment(hash)
            guard state.misses.noteMiss(pageID: key.pageID, lsn: key.lsn) else { return .bypass }
            let typicalCost = state.table.count > 0 ? state.table.cost / state.table.count : 4096
            if state.table.cost + typicalCost <= state.table.budget { return .admit }
            if let victim = state.table.nextVictim(),
               state.frequencies.frequency(ClockTable<any CachedPage>.hash(victim.key)) + Self.admissionMargin > state.frequencies.frequency(hash) {
                state.table.passVictim(at: victim.position)
                return .bypass
            }
            return .admit
        }
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
        let location = try snapshot.location(of: pageID)
        guard !location.isNone else { throw RecordTreeError.missingPage(pageID: pageID) }
        let key = Key(pageID: pageID, lsn: location.lsn)
        let entry = state.withLock { $0.table.get(key) }
        return entry.flatMap(T.cast)
    }

    /// Whether the image of `pageID` written at `lsn` is cached (tests).
    package func contains(pageID: UInt64, lsn: UInt64) -> Bool {
        state.withLock { $0.table.contains(Key(pageID: pageID, lsn: lsn)) }
    }

    /// Drops every cached page (they are read again when needed), keeping what the cache
    /// learned of their popularity; returns the bytes of pages dropped.
    @discardableResult
    package func removeAll() -> Int {
        state.withLock { state in
            let bytes = state.table.cost
            state.table.removeAll()
            return bytes
        }
    }

    /// The bytes of pages cached now.
    package var cachedBytes: Int { state.withLock { $0.table.cost } }

    /// Caches `node`, the verified image of `pageID` written at `lsn`.
    func insert(_ node: any CachedPage, pageID: UInt64, lsn: UInt64) {
        let cost = node.byteCount
        state.withLock { $0.table.insert(node, for: Key(pageID: pageID, lsn: lsn), cost: cost) }
    }
}

/// Remembers recent cache misses, to admit a page on its second miss: a direct-mapped table of
/// key fingerprints (one word each, no allocation after init). A miss whose fingerprint is in
/// its slot answers true and clears the slot; otherwise it takes the slot and answers false.
/// Two keys sharing a slot forget each other (a page then waits for another miss); two keys
/// sharing a fingerprint (2^-63) admit early — both only cost speed.
struct MissFilter {
    private var fingerprints: [UInt64]
    private let shift: UInt64

    /// A filter of at least `slots` slots (a power of two, at least 64).
    init(slots: Int) {
        var bits: UInt64 = 6
        while (1 << bits) < slots && bits < 30 { bits += 1 }
        fingerprints = [UInt64](repeating: 0, count: 1 << Int(bits))
        shift = 64 - bits
    }

    /// Notes a miss of (page id, LSN); true when it missed before and was remembered.
    mutating func noteMiss(pageID: UInt64, lsn: UInt64) -> Bool {
        let hash = ((pageID &* 0x9E37_79B9_7F4A_7C15) ^ (lsn &* 0xC2B2_AE3D_27D4_EB4F)) &* 0xFF51_AFD7_ED55_8CCD
        let fingerprint = hash | 1  // never 0, the empty slot
        let slot = Int(truncatingIfNeeded: hash >> shift)
        if fingerprints[slot] == fingerprint {
            fingerprints[slot] = 0
            return true
        }
        fingerprints[slot] = fingerprint
        return false
    }
}


/// How a store's readers read overflowed records (for tests and diagnostics): chunk pages
/// read whole to assemble a record, and records a filter decided from their first bytes,
/// read from their first chunk (`RecordTreeReader.scanFiltered`). Relaxed counters.
package final class OverflowReadCounts: Sendable {
    /// Chunk pages read whole (each assembled record reads all of its chunks).
    package let chunksRead = Atomic<Int>(0)
    /// Overflowed records whose first bytes only were read (from their first chunk).
    package let prefixesRead = Atomic<Int>(0)

    package init() {}
}
