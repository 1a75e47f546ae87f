import StrataFormat
import StrataPageLog
import StrataSchema

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

    /// Calls `body` with the bytes of the record with this id — in place in the cached leaf
    /// (or in a leaf decompressed just far enough), uncopied (valid during the call only) —
    /// and returns what it returns; nil when there is no such record.
    ///
    /// A leaf that misses the node cache is read whole and cached on its second miss only
    /// (`NodeCache.probe`); on its first it is verified (whole-frame checksum) and
    /// decompressed only up to the end of the record sought, and not cached.
    package func withRecord<T>(_ id: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        var result: T?
        return try withRecordBytes(id, { result = try body($0) }) ? result : nil
    }

    /// Whether a record with this id exists (an overflowed record is not read, only its
    /// reference found).
    package func contains(_ id: UInt64) throws -> Bool {
        if case .absent = try lookup(id, memo: nil, { _ in }) { return false }
        return true
    }

    /// `withRecord` without a result: true when the record exists (and `body` was called).
    /// Not generic, so a caller that is not specialized makes no type metadata for it.
    /// `memo`: interior nodes kept between the lookups of one thread in this reader's snapshot.
    package func withRecordBytes(_ id: UInt64, memo: InteriorNodeMemo? = nil, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        switch try lookup(id, memo: memo, body) {
        case .absent: return false
        case .found: return true
        case .overflow(let reference, let pageID):
            try reference.withUnsafeBytes { try withOverflowed($0, pageID: pageID, body) }
            return true
        }
    }

    /// What `lookup` found.
    private enum Lookup {
        case absent
        /// The record was passed to the body.
        case found
        /// The record is an overflow reference (stored in the leaf `pageID`).
        case overflow([UInt8], pageID: UInt64)
    }

    /// Finds record `id`; calls `body` with its bytes when they are stored inline.
    /// Not generic, so no type metadata is made per call.
    private func lookup(_ id: UInt64, memo: InteriorNodeMemo?, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Lookup {
        guard root.rootPageID != 0 else { return .absent }
        var pageID = root.rootPageID
        for _ in 0..<64 {
            let node: CachedNode
            if let remembered = memo?.node(pageID) {
                node = remembered
            } else {
                switch try cache.probe(pageID, in: snapshot) {
                case .hit(let cached): node = cached
                case .admit: node = try cache.node(pageID, in: snapshot)
                case .bypass:
                    if let answer = try lookupInUncachedLeaf(id, pageID: pageID, body) { return answer }
                    node = try cache.node(pageID, in: snapshot)  // not a leaf: interior nodes are always cached
                }
                if node.kind == .interior { memo?.remember(node, pageID: pageID) }
            }
            switch node.kind {
            case .interior:
                pageID = node.bytes.withUnsafeBytes { raw in
                    let index = InteriorNode.childIndex(for: id, count: node.count) { Self.firstID(raw, $0) }
                    return Self.child(raw, index)
                }
            case .leaf:
                return try node.bytes.withUnsafeBytes { raw -> Lookup in
                    let view = LeafView(validated: raw, count: node.count)
                    let (found, index) = view.search(id)
                    guard found else { return .absent }
                    if view.isOverflow(index) { return .overflow(Array(view.bytes(index)), pageID: pageID) }
                    try body(view.bytes(index))
                    return .found
                }
            }
        }
        throw RecordTreeError.corruptNode(pageID: pageID, reason: "tree deeper than 64 levels")
    }

    /// Looks `id` up in page `pageID` read as a `PartialPage` (not cached): the header, the
    /// directory (validated as `LeafView.validate` validates it), then the data only up to
    /// the end of the record. Nil when the page is not a leaf.
    private func lookupInUncachedLeaf(_ id: UInt64, pageID: UInt64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Lookup? {
        var answer: Lookup?
        let present = try snapshot.withPartialPage(pageID) { page in answer = try lookup(id, in: &page) }
        guard present else { throw RecordTreeError.missingPage(pageID: pageID) }
        return answer

        func lookup(_ id: UInt64, in page: inout PartialPage) throws -> Lookup? {
            let overflow: Bool, record: UnsafeRawBufferPointer
            do {
                // The header and the first id (one LZ4 literal run: nearly free).
                let head = try page.prefix(min(page.count, LeafNode.headerSize + 8))
                guard head.first == NodeKind.leaf.rawValue else { return nil }
                let count = try LeafView.validateHeader(head)
                let dataStart = LeafNode.headerSize + count * LeafNode.entrySize
                guard dataStart <= page.count else { throw FormatError("leaf of \(count) records is cut short", at: 2) }
                // A page stored for partial reads (format 3) has its directory raw in the frame,
                // and the record is read from its LZ4 block alone. Otherwise (formats 1 and 2):
                // LZ4 cannot resume a block, so decompress the directory and, in the same call,
                // the data up to where the record probably ends — assuming ids dense and records
                // of the average size, with one record of slack — and again from the start only
                // when the guess fell short. A record probably in a page's second LZ4 block
                // (`PartialPage.split`) is read from that block alone, after the directory.
                var guess = dataStart
                if count > 0 && page.directLength < dataStart {
                    let firstID = UInt64(littleEndian: head.loadUnaligned(fromByteOffset: LeafNode.headerSize, as: UInt64.self))
                    let position = id >= firstID ? Int(min(id - firstID, UInt64(count - 1))) : 0
                    let average = (page.count - dataStart) / count
                    guess = min(page.count, dataStart + (position + 2) * average + 16)
                    if guess > page.split && dataStart <= page.split { guess = dataStart }
                }
                let directory = try page.prefix(guess)
                try LeafView.validateDirectory(directory, count: count, dataCount: page.count - dataStart)
                let view = LeafView(validated: directory, count: count)
                let (found, index) = view.search(id)
                guard found else { return .absent }
                let start = view.startOffset(index), end = view.endOffset(index)
                overflow = view.isOverflow(index)
                record = end <= guess ? UnsafeRawBufferPointer(rebasing: directory[start..<end]) : try page.bytes(start..<end)
            } catch let error as FormatError {
                throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
            }
            if overflow { return .overflow(Array(record), pageID: pageID) }
            try body(record)
            return .found
        }
    }

    static func firstID(_ raw: UnsafeRawBufferPointer, _ index: Int) -> UInt64 {
        UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: InteriorNode.headerSize + index * InteriorNode.entrySize, as: UInt64.self))
    }

    static func child(_ raw: UnsafeRawBufferPointer, _ index: Int) -> UInt64 {
        UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: InteriorNode.headerSize + index * InteriorNode.entrySize + 8, as: UInt64.self))
    }

    /// Calls `body` with the overflowed record whose reference is `stored` (in leaf
    /// `pageID`), assembled, with `SharedRecordBytes.current` bound to it: the large data
    /// values a decoder makes from it share its memory instead of copying it.
    ///
    /// Each chunk is read with `pread` and copied (or decompressed) into the record's buffer in
    /// place: its file pages do not stay mapped into the process and no array is made per
    /// chunk — a large value read back costs about its own size, not three times it.
    private func withOverflowed<T>(_ stored: UnsafeRawBufferPointer, pageID: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let reference = try overflowReference(stored, pageID: pageID)
        let record = try OverflowReader.assembleShared(reference) { chunk, append in
            cache.overflowReads.chunksRead.add(1, ordering: .relaxed)
            return try snapshot.withPayload(chunk, mapped: false, append)
        }
        return try withExtendedLifetime(record) {
            try SharedRecordBytes.$current.withValue(record) { try body(record.bytes) }
        }
    }

    private func overflowReference(_ stored: UnsafeRawBufferPointer, pageID: UInt64) throws -> OverflowReference {
        do { return try OverflowReference.decode(stored) } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
        }
    }

    /// The bytes of an overflowed record's first chunk read first when a filter is tried on
    /// the record's prefix (`decideOverflowed`); a prefix too short is read again whole.
    static let overflowPrefixProbe = 4 << 10

    /// What `decide` tells from the first bytes of the overflowed record whose reference is
    /// `stored` (in leaf `pageID`): its answer on the whole record, or nil when the record's
    /// first chunk does not hold the bytes it needs (the record must then be assembled).
    ///
    /// Only the first chunk is read, as a `PartialPage` (verified as any read verifies it: its
    /// checksums) read with `pread` rather than through the memory map, and decompressed only
    /// up to the bytes `decide` needs — at first `overflowPrefixProbe` bytes, then the whole
    /// chunk. The other chunks are not touched and nothing is assembled.
    func decideOverflowed(_ stored: UnsafeRawBufferPointer, pageID: UInt64,
                          _ decide: (UnsafeRawBufferPointer, Int) -> RecordCondition.PrefixAnswer) throws -> Bool?? {
        let reference = try overflowReference(stored, pageID: pageID)
        guard let first = reference.chunks.first, reference.length <= UInt64(Int.max) else { return nil }
        let length = Int(reference.length)
        // A filter that reads no field (a constant) needs no byte.
        if case .decided(let decided) = decide(UnsafeRawBufferPointer(start: nil, count: 0), length) { return .some(decided) }
        var answer: Bool??
        // With `pread`: a chunk stored whole (codec 0 or 1) is verified by reading all of it,
        // whose pages would otherwise stay mapped into the process, a MiB per record.
        let present = try snapshot.withPartialPage(first, mapped: false) { page in
            // A first chunk longer than the record is damage: assembling reports it.
            guard page.count <= length else { return }
            var extent = min(page.count, Self.overflowPrefixProbe)
            while true {
                if case .decided(let decided) = decide(try page.prefix(extent), length) {
                    answer = .some(decided)
                    return
                }
                guard extent < page.count else { return }
                extent = page.count
            }
        }
        guard present else { throw RecordTreeError.missingPage(pageID: first) }
        cache.overflowReads.prefixesRead.add(1, ordering: .relaxed)
        return answer
    }

    /// Calls `body` with every record in id order, starting at `start`, until it returns false.
    /// The bytes passed are valid only during the call (overflowed records are assembled first).
    ///
    /// Leaves not in the cache are read through a `SequentialPageReader` (frames read in place, one
    /// reused decompression buffer) and are not cached, so one pass over a large tree neither
    /// allocates per leaf nor evicts what point lookups use; interior nodes are cached.
    ///
    /// `mapped` false reads leaves with `pread` instead of through the memory map: one pass over
    /// a whole store (a migration) then leaves nothing of it mapped into the process.
    /// `images`, when given, keeps the images of the leaves read, for a write transaction that
    /// rewrites them soon after (`PageLogTransaction.pageImages`).
    package func scan(from start: UInt64 = 0, mapped: Bool = true, keepingImagesIn images: PageImages? = nil,
                      _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try scanRuns(from: start, mapped: mapped, keepingImagesIn: images) { run in
            for index in 0..<run.count where try !body(run.id(index), run.bytes(index)) { return false }
            return true
        }
    }

    /// `scan`, a run of consecutive records at a time: each leaf's records from `start` on, in
    /// place — an overflowed record assembled, as a run of its own — until `body` returns false.
    /// For callers that copy many records at once (a migration's batch).
    package func scanRuns(from start: UInt64 = 0, mapped: Bool = true, keepingImagesIn images: PageImages? = nil,
                          leafRanges: ((_ pageID: UInt64, _ first: UInt64, _ last: UInt64, _ low: UInt64, _ high: UInt64?) -> Void)? = nil,
                          _ body: (RecordRun) throws -> Bool) throws {
        guard root.rootPageID != 0 else { return }
        try scanRuns(from: start, pages: SequentialPageReader(snapshot, mapped: mapped, keepingImagesIn: images), leafRanges: leafRanges, body)
    }

    /// `scanRuns` reading pages through `pages` (a reader of this reader's snapshot).
    /// `overflowed`, when given, sees each overflowed record first — its id, its stored
    /// reference and the leaf's page id — and may take it: true (go on) or false (stop) when it
    /// did, nil to have it assembled and passed to `body` as a run of its own.
    /// `leafRanges`, when given, sees each leaf visited before its records: its page id, its
    /// first and last ids, and the range of ids its ancestors give it (`low` up to `high`,
    /// exclusive; nil: no bound) — for `verify`, since a record outside its leaf's range is
    /// seen by scans and missed by point lookups.
    func scanRuns(from start: UInt64 = 0, pages: SequentialPageReader,
                  overflowed: ((UInt64, UnsafeRawBufferPointer, UInt64) throws -> Bool?)? = nil,
                  leafRanges: ((_ pageID: UInt64, _ first: UInt64, _ last: UInt64, _ low: UInt64, _ high: UInt64?) -> Void)? = nil,
                  _ body: (RecordRun) throws -> Bool) throws {
        guard root.rootPageID != 0 else { return }
        var stack: [(pageID: UInt64, next: Int, low: UInt64, high: UInt64?)] = [(root.rootPageID, -1, 0, nil)]
        while let top = stack.popLast() {
            guard stack.count < 64 else { throw RecordTreeError.corruptNode(pageID: top.pageID, reason: "tree deeper than 64 levels") }
            // A leaf's records; false when `body` stopped the scan.
            func leaf(_ raw: UnsafeRawBufferPointer, count: Int) throws -> Bool {
                let view = LeafView(validated: raw, count: count)
                if let leafRanges, count > 0 { leafRanges(top.pageID, view.id(0), view.id(count - 1), top.low, top.high) }
                var index = start == 0 ? 0 : view.search(start).index
                while index < count {
                    if view.isOverflow(index) {
                        if let taken = try overflowed?(view.id(index), view.bytes(index), top.pageID) {
                            if !taken { return false }
                            index += 1
                            continue
                        }
                        if try !withOverflowed(view.bytes(index), pageID: top.pageID, { try body(RecordRun(id: view.id(index), bytes: $0)) }) {
                            return false
                        }
                        index += 1
                        continue
                    }
                    var end = index + 1
                    while end < count && !view.isOverflow(end) { end += 1 }
                    if try !body(RecordRun(view, index..<end)) { return false }
                    index = end
                }
                return true
            }
            func interior(_ node: CachedNode) {
                let next = top.next >= 0 ? top.next : node.bytes.withUnsafeBytes { raw in
                    InteriorNode.childIndex(for: start, count: node.count) { Self.firstID(raw, $0) }
                }
                guard next < node.count else { return }
                stack.append((top.pageID, next + 1, top.low, top.high))
                // Child `next` holds the ids from its first id up to the next child's, within
                // this node's own range.
                let (child, low, high) = node.bytes.withUnsafeBytes { raw -> (UInt64, UInt64, UInt64?) in
                    let upper = next + 1 < node.count ? Self.firstID(raw, next + 1) : nil
                    return (Self.child(raw, next), max(top.low, next == 0 ? 0 : Self.firstID(raw, next)),
                            upper.map { bound in top.high.map { min($0, bound) } ?? bound } ?? top.high)
                }
                stack.append((child, -1, low, high))
            }
            if try !visit(top.pageID, pages, interior: interior, leaf: leaf) { return }
        }
    }

    /// Calls `body` with every record in descending id order, starting at `start` (the
    /// largest id at most `start`), until it returns false. Nodes are read as `scan` reads them.
    package func scanBackward(from start: UInt64 = .max, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard root.rootPageID != 0 else { return }
        let pages = SequentialPageReader(snapshot, mapped: true)
        // `next`: the child to visit next, counting down (`nil`: the node was not entered yet).
        var stack: [(pageID: UInt64, next: Int?)] = [(root.rootPageID, nil)]
        while let top = stack.popLast() {
            guard stack.count < 64 else { throw RecordTreeError.corruptNode(pageID: top.pageID, reason: "tree deeper than 64 levels") }
            func leaf(_ raw: UnsafeRawBufferPointer, count: Int) throws -> Bool {
                let view = LeafView(validated: raw, count: count)
                let (found, position) = view.search(start)
                var index = found ? position : position - 1
                while index >= 0 {
                    if view.isOverflow(index) {
                        if try !withOverflowed(view.bytes(index), pageID: top.pageID, { try body(view.id(index), $0) }) { return false }
                    } else if try !body(view.id(index), view.bytes(index)) {
                        return false
                    }
                    index -= 1
                }
                return true
            }
            func interior(_ node: CachedNode) {
                let next = top.next ?? node.bytes.withUnsafeBytes { raw in
                    InteriorNode.childIndex(for: start, count: node.count) { Self.firstID(raw, $0) }
                }
                guard next >= 0, next < node.count else { return }
                if next > 0 { stack.append((top.pageID, next - 1)) }
                stack.append((node.bytes.withUnsafeBytes { Self.child($0, next) }, nil))
            }
            if try !visit(top.pageID, pages, interior: interior, leaf: leaf) { return }
        }
    }

    /// Visits one node of a scan: an interior node (cached once read) goes to `interior`, a
    /// leaf's validated bytes to `leaf`. Returns what `leaf` returned (true for an interior).
    private func visit(_ pageID: UInt64, _ pages: SequentialPageReader, interior: (CachedNode) -> Void,
                       leaf: (UnsafeRawBufferPointer, Int) throws -> Bool) throws -> Bool {
        if let node: CachedNode = try cache.cached(pageID, in: snapshot) {
            switch node.kind {
            case .interior: interior(node); return true
            case .leaf: return try node.bytes.withUnsafeBytes { try leaf($0, node.count) }
            }
        }
        let proceed = try pages.withPage(pageID) { raw -> Bool in
            guard raw.first == NodeKind.leaf.rawValue else {
                let node = try CachedNode(pageID: pageID, bytes: Array(raw))
                cache.insert(node, pageID: pageID, lsn: try snapshot.location(of: pageID).lsn)
                interior(node)
                return true
            }
            let count: Int
            do { count = try LeafView.validate(raw) } catch let error as FormatError {
                throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
            }
            return try leaf(raw, count)
        }
        guard let proceed else { throw RecordTreeError.missingPage(pageID: pageID) }
        return proceed
    }
}

/// The interior nodes of one snapshot's record trees that one thread's point lookups went
/// through (a `Store.read` transaction's), kept between lookups: a lookup then goes from the
/// root to a leaf's parent without probing the shared node cache at each level (its lock, its
/// table, a copy of the entry, the page table). The nodes are the cache's own, verified when
/// they were read; a page id names one page image in a snapshot, so a memo serves the lookups
/// of one snapshot only. Direct-mapped by page id (a node whose slot another took is probed
/// in the cache again). Not thread-safe.
package final class InteriorNodeMemo {
    /// The page id in each slot (0, never a node's, when empty) and its node. (Unchecked:
    /// used on one thread, and no access overlaps another.)
    @exclusivity(unchecked) private var pageIDs: [UInt64]
    @exclusivity(unchecked) private var nodes: [CachedNode?]
    private let shift: UInt64

    /// A memo of `2^bits` slots (128 by default: a 1M-record tree has about 50 interior nodes).
    package init(bits: Int = 7) {
        pageIDs = [UInt64](repeating: 0, count: 1 << bits)
        nodes = [CachedNode?](repeating: nil, count: 1 << bits)
        shift = UInt64(64 - bits)
    }

    @inline(__always)
    private func slot(_ pageID: UInt64) -> Int { Int(truncatingIfNeeded: (pageID &* 0x9E37_79B9_7F4A_7C15) >> shift) }

    /// The interior node of page `pageID`, if remembered.
    func node(_ pageID: UInt64) -> CachedNode? {
        let slot = slot(pageID)
        return pageIDs[slot] == pageID ? nodes[slot] : nil
    }

    /// Remembers `node`, the interior node of page `pageID` (in place of the slot's node).
    func remember(_ node: CachedNode, pageID: UInt64) {
        let slot = slot(pageID)
        pageIDs[slot] = pageID
        nodes[slot] = node
    }
}

/// Consecutive records of a scan (`RecordTreeReader.scanRuns`), in place: valid during the
/// call they are passed to only.
package struct RecordRun {
    /// The leaf holding the records, and the first one's index there; nil for one assembled
    /// overflowed record.
    private let view: LeafView?
    private let first: Int
    /// The overflowed record's id and bytes.
    private let single: (id: UInt64, bytes: UnsafeRawBufferPointer)
    package let count: Int

    /// Records `range` of a leaf, none of them overflowed.
    init(_ view: LeafView, _ range: Range<Int>) {
        self.view = view
        first = range.lowerBound
        count = range.count
        single = (0, UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// One overflowed record, assembled.
    init(id: UInt64, bytes: UnsafeRawBufferPointer) {
        view = nil
        first = 0
        count = 1
        single = (id, bytes)
    }

    /// Whether the run is one overflowed record, assembled from its chunk pages.
    package var isOverflowed: Bool { view == nil }

    /// The id of record `index` (0 ..< count).
    package func id(_ index: Int) -> UInt64 { view?.id(first + index) ?? single.id }

    /// The bytes of record `index`.
    package func bytes(_ index: Int) -> UnsafeRawBufferPointer { view?.bytes(first + index) ?? single.bytes }

    /// Calls `body` with each record's index and bytes, in order, until it returns false
    /// (then false): `bytes(_:)` of each, with the leaf's directory read once — each record
    /// starts where the one before it ended (the directory is validated: ends ascend within
    /// the leaf). The loop of a filtered scan, which calls it for every record.
    @inline(__always)
    package func forEachRecord(_ body: (Int, UnsafeRawBufferPointer) throws -> Bool) rethrows -> Bool {
        guard let view else { return try count == 0 || body(0, single.bytes) }
        guard count > 0, let base = view.raw.baseAddress else { return true }
        let dataStart = LeafNode.headerSize &+ view.count &* LeafNode.entrySize
        var start = view.startOffset(first)
        var entry = LeafNode.headerSize &+ first &* LeafNode.entrySize &+ 8
        for index in 0..<count {
            let end = dataStart &+ Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: entry, as: UInt32.self)) & ~LeafNode.overflowFlag)
            if try !body(index, UnsafeRawBufferPointer(start: base + start, count: end &- start)) { return false }
            start = end
            entry &+= LeafNode.entrySize
        }
        return true
    }

    /// The run's bytes, record after record: record `index` ends `end(index)` bytes in.
    package var allBytes: UnsafeRawBufferPointer {
        guard let view else { return single.bytes }
        guard count > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(rebasing: view.raw[view.startOffset(first)..<view.endOffset(first + count - 1)])
    }

    /// Where record `index` ends in `allBytes`.
    package func end(_ index: Int) -> Int {
        guard let view else { return single.bytes.count }
        return view.endOffset(first + index) - view.startOffset(first)
    }

    /// Records `range` (within 0 ..< count) of the run.
    package func slice(_ range: Range<Int>) -> RecordRun {
        guard let view else { return RecordRun(view: nil, first: 0, single: single, count: range.count) }
        return RecordRun(view, (first + range.lowerBound)..<(first + range.upperBound))
    }

    private init(view: LeafView?, first: Int, single: (id: UInt64, bytes: UnsafeRawBufferPointer), count: Int) {
        self.view = view
        self.first = first
        self.single = single
        self.count = count
    }
}
